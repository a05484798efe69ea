"""`gym-swe envs`: the registered envs, each task source they know and its number of tasks."""

from __future__ import annotations

import argparse
from typing import Any

from gym_swe.cli.options import command


def add_to(commands: Any) -> None:
    parser = command(
        commands, "envs", "list the registered envs with their task sources and counts", ["gym-swe envs"]
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from gym_swe.registration import ENVS, TASK_SOURCES

    print(f"{'env':<16} {'task source':<16} tasks")
    for env_id in (str(spec["id"]) for spec in ENVS):
        for source, count in TASK_SOURCES[env_id]().items():
            print(f"{env_id:<16} {source:<16} {count}")
    return 0
