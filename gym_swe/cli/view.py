"""`gym-swe view`: the trajectories `gym-swe eval` wrote, filtered, as one HTML page (`rollout.view`)."""

from __future__ import annotations

import argparse
from typing import Any

from gym_swe.cli.options import command
from gym_swe.rollout.view import OUTCOMES


def add_to(commands: Any) -> None:
    parser = command(
        commands,
        "view",
        "write trajectories as one HTML page to read episodes turn by turn",
        [
            "gym-swe view trajectories.jsonl",
            "gym-swe view trajectories.jsonl --outcome failed -o failed.html",
        ],
    )
    parser.add_argument("trajectories", help="a .jsonl file from gym-swe eval")
    parser.add_argument("-o", "--output", help="the HTML file (default: beside the .jsonl)")
    parser.add_argument(
        "--outcome",
        action="append",
        choices=list(OUTCOMES),
        help="only episodes with this outcome (repeatable); failed: ended on an error, not graded",
    )
    parser.add_argument("--min-reward", type=float, help="only episodes with at least this reward")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from gym_swe.rollout.view import load_trajectories, select, write_html

    trajectories = load_trajectories(args.trajectories)
    shown = select(trajectories, outcomes=args.outcome, min_reward=args.min_reward)
    out = args.output or str(args.trajectories).rsplit(".", 1)[0] + ".html"
    write_html(shown, out, title=f"gym_swe: {args.trajectories}")
    which = f"{len(shown)} of {len(trajectories)}" if len(shown) != len(trajectories) else str(len(shown))
    print(f"{which} episodes -> {out}")
    return 0
