"""`gym-swe tasks generate`: validated SWEGym-v0 tasks from a repository with tests
(`gym_swe.generate`): from its history, by mutating its functions, or by a model rewriting them. The
records go to --out as they are made, with the repository's mirror beside it, so that
``gymnasium.make("SWEGym-v0", tasks=OUT)`` plays them."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from gym_swe.cli.options import command
from gym_swe.errors import ConfigError

METHODS = ("history", "mutate", "rewrite")
DEFAULT_METHODS = ("history", "mutate")


def add_to(actions: Any) -> None:
    parser = command(
        actions,
        "generate",
        "validated SWEGym-v0 tasks from a repository with tests (history, mutations, model rewrites)",
        [
            "gym-swe tasks generate --repo ~/src/myproject --out tasks.jsonl",
            "gym-swe tasks generate --repo myproject.git --method mutate --max-tasks 50 --out tasks.jsonl",
            "gym-swe tasks generate --repo . --method rewrite --generator vllm-server --base-url URL "
            "--model M "
            "--tokenizer T --out tasks.jsonl",
        ],
    )
    parser.add_argument("--repo", required=True, help="a git working copy, mirror or bundle")
    parser.add_argument(
        "--out",
        required=True,
        help="the task file (.jsonl) to append to; its mirror goes "
        "beside it (OUT.repos/), rejected candidates to OUT.rejected.jsonl",
    )
    parser.add_argument(
        "--method",
        action="append",
        choices=METHODS,
        help=f"how bugs are made (repeatable; default: {' and '.join(DEFAULT_METHODS)})",
    )
    parser.add_argument("--name", help="the records' repo, owner/name (default: local/<directory name>)")
    parser.add_argument(
        "--rev",
        default="HEAD",
        help="the commit tasks start from (mutate, rewrite) or whose history is mined",
    )
    parser.add_argument(
        "--environment",
        help="the records' environment, a JSON object or a file holding "
        "one (default: inferred from pyproject.toml, setup.cfg, requirements files)",
    )
    parser.add_argument("--workers", type=int, default=2, help="candidates made and validated at once")
    parser.add_argument(
        "--max-tasks",
        type=int,
        help="start no candidate once the task file holds this many tasks (those in flight are finished)",
    )
    parser.add_argument(
        "--max-candidates", type=int, help="try at most this many candidates not tried before, this run"
    )
    parser.add_argument("--max-commits", type=int, default=500, help="history: commits looked at")
    parser.add_argument("--per-function", type=int, help="mutate: mutations tried per function (default 2)")
    parser.add_argument("--seed", type=int, default=0, help="the order candidates are tried in")
    parser.add_argument("--test-timeout", type=float, default=600.0, help="seconds a test run may take")
    parser.add_argument(
        "--generator",
        help="rewrite, and model-written problem statements: a generator "
        "backend (hf, vllm, vllm-server, openai-chat)",
    )
    parser.add_argument("--model", help="with --generator: a model directory, id or served name")
    parser.add_argument("--tokenizer", help="with --generator: its tokenizer (default: the model's)")
    parser.add_argument("--base-url", help="with --generator vllm-server / openai-chat: the endpoint")
    parser.add_argument("--api-key", help="with --generator openai-chat (default: OPENAI_API_KEY)")
    parser.add_argument(
        "--model-statements",
        action="store_true",
        help="problem statements written by the --generator model, not templated",
    )
    parser.set_defaults(run=run)


def check(args: argparse.Namespace) -> tuple[str, ...]:
    """The methods asked for; a flag that cannot be honoured or would do nothing is an error here, before
    anything loads or is written."""
    methods = tuple(dict.fromkeys(args.method or DEFAULT_METHODS))
    for name in ("workers", "max_tasks", "max_candidates", "max_commits", "per_function"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be at least 1, got {value}")
    if args.test_timeout <= 0:
        raise ConfigError(f"--test-timeout must be a positive number of seconds, got {args.test_timeout}")
    if not args.out.endswith(".jsonl"):
        raise ConfigError(f"--out must be a .jsonl file, got {args.out!r}")
    needs_model = "rewrite" in methods or args.model_statements
    if needs_model and not (args.generator and args.model):
        raise ConfigError("--method rewrite and --model-statements need --generator and --model")
    if not needs_model:
        given = [
            flag for flag in ("generator", "model", "tokenizer", "base_url", "api_key") if getattr(args, flag)
        ]
        if given:
            raise ConfigError(
                f"--{given[0].replace('_', '-')} does nothing without --method rewrite or --model-statements"
            )
    if "history" not in methods and args.max_commits != 500:
        raise ConfigError("--max-commits applies to --method history only")
    if "mutate" not in methods and args.per_function is not None:
        raise ConfigError("--per-function applies to --method mutate only")
    if args.generator:
        from gym_swe.rollout.generators import GENERATORS

        if args.generator not in GENERATORS:
            raise ConfigError(f"unknown --generator {args.generator!r}; choose from {', '.join(GENERATORS)}")
    return methods


def run(args: argparse.Namespace) -> int:
    methods = check(args)
    from gym_swe.generate.pipeline import Generation, candidates_for, paths_for
    from gym_swe.generate.repository import environment_argument, open_repository
    from gym_swe.validate import Progress

    environment = environment_argument(args.environment) if args.environment else None
    out = Path(args.out).absolute()
    repo = open_repository(args.repo, paths_for(out)["repos"], args.name, args.rev, environment)
    generator = None
    if args.generator:
        from gym_swe.rollout.generators import make_generator

        generator = make_generator(
            args.generator,
            model=args.model,
            tokenizer=args.tokenizer or args.model,
            base_url=args.base_url,
            api_key=args.api_key,
            flags=lambda option: "--" + option.replace("_", "-"),
        )
    generation = Generation(
        repo,
        out,
        workers=args.workers,
        max_tasks=args.max_tasks,
        max_candidates=args.max_candidates,
        timeout=args.test_timeout,
        generator=generator if args.model_statements else None,
        progress=Progress(desc="generate"),
    )
    base = generation.baseline()  # says what share of the tests pass; most of them must
    candidates = candidates_for(
        repo, methods, base, args.test_timeout, args.per_function or 2, args.seed, args.max_commits, generator
    )
    try:
        counts = generation.run(candidates)
    except KeyboardInterrupt:
        # Leave now: a normal exit joins the validation's thread pools, waiting for the tasks in flight.
        # Every task written is on disk already, and the sandboxes' jails die with this process.
        print(
            f"interrupted: {generation.counts['kept']} task(s) in {args.out}; run the same command again "
            "to go on",
            file=sys.stderr,
            flush=True,
        )
        sys.stdout.flush()
        os._exit(130)
    print(
        f"{counts['kept']} task(s) in {args.out}; this run kept {counts['new']}, "
        f"rejected {counts['rejected']} "
        f"(why: {paths_for(out)['rejected']}), skipped {counts['skipped']} done before"
    )
    return 0
