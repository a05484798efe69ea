"""`gym-swe validate`: every task of a source graded with its fix (must resolve) and without (must not), by
`gym_swe.validate`; a table on stdout, progress on stderr, the full report as JSON on request."""

from __future__ import annotations

import argparse
from typing import Any

from gym_swe.cli.options import add_repo_source, add_sandbox, add_task_ids, command


def add_to(commands: Any) -> None:
    parser = command(
        commands,
        "validate",
        "check every task: its fix resolves it and no fix does not",
        ["gym-swe validate --env SWEGym-v0 --tasks bundled --json report.json"],
    )
    parser.add_argument("--env", required=True, help="CodeDebug-v0, SWEGym-v0 or Harbor-v0")
    parser.add_argument("--tasks", default="bundled", help="task source")
    add_task_ids(parser)
    add_sandbox(parser)
    parser.add_argument(
        "--image-naming", choices=["auto", "swe-gym", "swe-bench", "gym-swe"],
        help="SWE tasks on --sandbox docker: which image a task runs in (auto: the record's `image`, else "
        "its source's scheme; gym-swe: the image `gym-swe images build --tasks` made, for SWE-bench records "
        "whose official image is not here)",
    )  # fmt: skip
    parser.add_argument("--workers", type=int, default=2, help="tasks graded at once")
    add_repo_source(parser)
    parser.add_argument(
        "--exclude-test", action="append", metavar="ID",
        help="SWE tasks: leave out this test id, e.g. one that needs the network (repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="print each test's outcome and the test runs' log tails"
    )
    parser.add_argument("--json", help="write the report (per-test outcomes, log tails) to this path")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from gym_swe.validate import Progress, print_table, validate

    rows = validate(
        args.env,
        tasks=args.tasks,
        sandbox=args.sandbox,
        workers=args.workers,
        repo_source=args.repo_source,
        task_ids=args.task_id,
        exclude_tests=args.exclude_test or (),
        image_naming=args.image_naming,
        progress=Progress(),  # on stderr: the bar, the tasks in flight, each verdict as it lands
    )
    print_table(rows, verbose=args.verbose)
    if args.json:
        import json

        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=2)
        print(f"report: {args.json}")
    return 0 if all(row["ok"] for row in rows) else 1
