"""`gym-swe prepare`: checkouts and virtual environments for SWE tasks on the local sandbox, made ahead of
time (the network is used here only). A task that fails does not stop the others; all failures are listed."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gym_swe.cli.options import add_repo_source, add_task_ids, command
from gym_swe.errors import GymSweError, TaskRefused, summary


def add_to(commands: Any) -> None:
    parser = command(
        commands,
        "prepare",
        "make checkouts and environments for local SWE sandboxes (the network is used here only)",
        ["gym-swe prepare --tasks bundled",
         "gym-swe prepare --tasks lite.parquet --task-id pallets__flask-4992 --repo-source mirrors"],
    )  # fmt: skip
    parser.add_argument("--tasks", default="bundled", help="SWE task source")
    add_task_ids(parser)
    add_repo_source(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from gym_swe.tasks.environments import prepare_environment
    from gym_swe.tasks.repos import RepoSource
    from gym_swe.tasks.swe import load_swe_tasks

    source = RepoSource(args.repo_source)
    tasks = load_swe_tasks(args.tasks)
    refused = tasks.refused  # cannot be graded here: listed as failures, never prepared
    if args.task_id:
        selected = [task_id if task_id in refused else tasks.get(task_id) for task_id in args.task_id]
    else:
        selected = [*tasks, *refused]
    failed: list[tuple[str, str]] = []
    for number, task in enumerate(selected, start=1):  # a failure does not stop the others: all are listed
        count = f"[{number}/{len(selected)}]"
        try:
            if isinstance(task, str):
                raise TaskRefused(refused[task])
            prepared = prepare_environment(task, source)
        except GymSweError as error:
            task_id = task if isinstance(task, str) else task.instance_id
            failed.append((task_id, str(error)))
            print(
                f"{count} {task_id}: FAILED ({summary(str(error).removeprefix(task_id + ': '))})", flush=True
            )
            continue
        print(f"{count} {task.instance_id}: ready (Python {prepared.python}, {prepared.path})", flush=True)
    print(f"prepared {len(selected) - len(failed)}/{len(selected)} task(s) of {args.tasks!r}")
    for task_id, message in failed:
        print(f"\n{task_id}: {message}", file=sys.stderr)
    return 1 if failed else 0
