"""`gym-swe tasks export --format harbor`: gym_swe's tasks as Harbor task folders whose verifier is gym_swe's
own grader (`gym_swe.integrations.harbor_export`; docs/harbor.md, "Export")."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gym_swe.cli.options import add_task_ids, command
from gym_swe.errors import ConfigError

FORMATS = ("harbor",)
ENVS = ("CodeDebug-v0", "SWEGym-v0")


def add_to(actions: Any) -> None:
    parser = command(
        actions,
        "export",
        "write tasks as Harbor task folders (task.toml, instruction.md, environment/, tests/, solution/)",
        [
            "gym-swe tasks export --format harbor --env CodeDebug-v0 --tasks bundled --out harbor-tasks",
            "gym-swe tasks export --format harbor --env SWEGym-v0 --tasks bundled --out harbor-tasks "
            "--task-id gymswe__semverkit-1",
        ],
    )
    parser.add_argument("--format", required=True, choices=FORMATS, help="the task format written")
    parser.add_argument("--env", required=True, choices=ENVS, help="the env whose tasks are exported")
    parser.add_argument("--tasks", default="bundled", help="task source (as the env's tasks=)")
    parser.add_argument("--out", required=True, help="directory the task folders are written under")
    add_task_ids(parser)
    parser.add_argument(
        "--wheels", help="a directory of wheels for gym_swe's dependencies (else pip downloads them)"
    )
    parser.add_argument(
        "--build", action="store_true",
        help="also build each task's image here and name it in task.toml (docker_image), for runtimes that "
        "run an image rather than build a Dockerfile (verifiers' Harbor taskset)",
    )  # fmt: skip
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {args.out}: not a directory")
    if args.wheels is not None and not Path(args.wheels).is_dir():
        raise ConfigError(f"--wheels {args.wheels}: not a directory")
    from gym_swe.integrations.harbor_export import export_tasks

    written = export_tasks(args.env, args.tasks, out, args.task_id or (), args.wheels, args.build)
    for exported in written:
        print(f"{exported.task_id}\t{exported.path}")
    return 0
