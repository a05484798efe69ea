"""`gym-swe tasks ...`: making task files. Each action is its own module, ``gym_swe.cli.tasks_<action>``,
with ``add_to(actions)`` and ``run(args)`` as every subcommand has (see `gym_swe.cli`)."""

from __future__ import annotations

import importlib
from typing import Any

from gym_swe.cli.options import command

ACTIONS: tuple[str, ...] = ("export", "generate")
"""The actions of ``gym-swe tasks`` in --help order; each is the module ``gym_swe.cli.tasks_<name>``."""


def add_to(commands: Any) -> None:
    tasks = command(
        commands, "tasks", "make task files: export them to other formats, generate them",
        ["gym-swe tasks export --format harbor --env CodeDebug-v0 --out harbor-tasks/",
         "gym-swe tasks generate --repo path/to/repo --method history --out tasks.jsonl"],
    )  # fmt: skip
    actions = tasks.add_subparsers(dest="tasks_action", required=True, metavar="ACTION")
    for name in ACTIONS:
        importlib.import_module(f"gym_swe.cli.tasks_{name}").add_to(actions)
