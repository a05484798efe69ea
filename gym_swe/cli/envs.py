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

    rows = [("env", "task source", "tasks")]
    for env_id in (str(spec["id"]) for spec in ENVS):
        rows += [(env_id, source, count) for source, count in TASK_SOURCES[env_id]().items()]
    widths = [max(len(row[column]) for row in rows) for column in (0, 1)]  # every name fits its column
    for env_id, source, count in rows:
        print(f"{env_id:<{widths[0]}}  {source:<{widths[1]}}  {count}")
    return 0
