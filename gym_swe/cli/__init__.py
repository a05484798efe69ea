"""The ``gym-swe`` command: one module per subcommand, each with its arguments beside its ``run``.

    gym-swe envs                                   the registered envs, their task sources and counts
    gym-swe play ENV [--task-id ID] [--tasks SRC] [--sandbox local|docker]
    gym-swe validate --env ENV [--tasks SRC] [--sandbox local|docker] [--json PATH] [-v] [--exclude-test ID]
                                                   gold fix -> resolved, no fix -> not, for every task
    gym-swe prepare --tasks SRC [--task-id ID]     checkouts and environments for local SWE sandboxes
    gym-swe eval --env ENV --generator hf|vllm|vllm-server|openai-chat --model M [-n 4] [--out PATH]
                 [--harness mini-swe-agent|pi|opencode|codex|claude-code|gemini-cli]
    gym-swe serve ENV [KEY=VALUE ...] [--host H] [--port P] [--max-sessions N] [--token-file F]
                                                   the env as an OpenEnv server (sessions, MCP tools)
    gym-swe view trajectories.jsonl|RUN_DIR [-o PAGE.html] [--outcome resolved|unresolved|failed]
                 [--min-reward R] [--tokenizer DIR] [--max-mb MB]
    gym-swe images build [--method auto|debootstrap|python] [--name NAME] [--force] [--tasks SRC]
                         [--harness mini-swe-agent|pi|opencode]
    gym-swe harnesses install NAME...              npm harnesses and their Node, into gym_swe's cache
    gym-swe harnesses list
    gym-swe sandbox prune [--all]

A subcommand's module (``gym_swe.cli.<command>``) has ``add_to(commands)``, which declares its arguments, and
``run(args)``, which turns them into typed calls of the library and returns the exit status; it imports the
heavy parts when it runs, so ``gym-swe --help`` is instant. What all parsers share is in `options`: every
multi-word flag also takes its underscore spelling (``--max_turns``), abbreviations are refused, ``--help``
shows defaults and examples. Errors gym_swe raises on purpose are one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Callable, Sequence

from gym_swe.cli.options import Parser
from gym_swe.errors import GymSweError

COMMANDS = (
    "envs", "play", "validate", "prepare", "eval", "serve", "view", "images", "harnesses", "sandbox", "tasks",
)  # fmt: skip
"""The subcommands, in the order ``gym-swe --help`` lists them; each is the module ``gym_swe.cli.<name>``."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="gym-swe",
        description="Software-engineering RL environments.",
        epilog="examples:\n  gym-swe envs\n  gym-swe play CodeDebug-v0\n  gym-swe eval --help\n\n"
        "A flag of several words takes dashes or underscores: --max-turns or --max_turns.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"gym_swe.cli.{name}").add_to(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # gym_swe's own progress lines at INFO; other libraries' (httpx logs every request) only when they warn
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("gym_swe").setLevel(logging.INFO)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except GymSweError as error:
        print(f"gym-swe: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
