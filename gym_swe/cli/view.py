"""`gym-swe view`: trajectories (a .jsonl file, or a run directory: every file of trajectories under it) as
one HTML page, with the run's numbers (`rollout.view`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from gym_swe.cli.options import command
from gym_swe.rollout.view_episode import OUTCOMES


def add_to(commands: Any) -> None:
    parser = command(
        commands,
        "view",
        "write trajectories (a file, or a whole run) as one HTML page: episodes turn by turn and token by "
        "token, groups with their advantages, pass@k per task",
        [
            "gym-swe view trajectories.jsonl",
            "gym-swe view runs/first            # a training run: every step's file, and its eval episodes",
            "gym-swe view runs/first --tokenizer runs/first/model --outcome failed -o failed.html",
        ],
    )
    parser.add_argument(
        "trajectories",
        help="a .jsonl file of trajectories (gym-swe eval's, or one step of a run), or a directory: a "
        "trainer run (its trajectories/step_N.jsonl and eval episodes) or any folder of such files",
    )
    parser.add_argument(
        "-o", "--output", help="the HTML file (default: beside the .jsonl; a directory's view.html inside it)"
    )
    parser.add_argument(
        "--outcome",
        action="append",
        choices=list(OUTCOMES),
        help="only episodes with this outcome (repeatable); failed: ended on an error, not graded. The "
        "summary and the groups' numbers still count every episode",
    )
    parser.add_argument("--min-reward", type=float, help="only episodes with at least this reward")
    parser.add_argument(
        "--tokenizer",
        help="a local folder holding the tokenizer the trajectories were sampled with (the model's folder): "
        "the token view shows text, not ids. Nothing is downloaded",
    )
    parser.add_argument(
        "--max-mb",
        type=float,
        default=64.0,
        help="the page's budget in megabytes: past it, the earliest files' episodes keep their summary line "
        "but not their messages and tokens",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from gym_swe.errors import ConfigError
    from gym_swe.rollout.view import keeper, load_run, render_page, run_settings
    from gym_swe.rollout.view_tokens import check_tokenizer_path, load_tokenizer

    # Every flag checked before anything is read or loaded.
    if not args.max_mb > 0:
        raise ConfigError(f"--max-mb must be a number of megabytes > 0, got {args.max_mb}")
    if args.tokenizer is not None:
        check_tokenizer_path(args.tokenizer)
    keep = keeper(args.outcome, args.min_reward)
    source = Path(args.trajectories)
    if args.output:
        out = Path(args.output)
    elif source.is_dir():
        out = source / "view.html"
    else:
        out = source.with_suffix(".html") if source.suffix == ".jsonl" else Path(f"{source}.html")
    if not out.parent.is_dir():
        raise ConfigError(f"-o {out}: its folder {out.parent} does not exist")

    files, notes = load_run(source)
    tokenizer = load_tokenizer(args.tokenizer) if args.tokenizer is not None else None
    page = render_page(
        files,
        title=f"gym_swe: {args.trajectories}",
        keep=keep,
        tokenizer=tokenizer,
        max_bytes=args.max_mb * 1e6,
        settings=run_settings(source),
        notes=notes,
    )
    out.write_text(page, encoding="utf-8", errors="replace")  # a lone surrogate a file held: written as ?
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    total = sum(len(file.trajectories) for file in files)
    shown = sum(keep(t) for file in files for t in file.trajectories)
    which = f"{shown} of {total}" if shown != total else str(total)
    of = f" from {len(files)} files" if len(files) > 1 else ""
    print(f"{which} episodes{of} -> {out}")
    return 0
