"""What every ``gym-swe`` subcommand's parser shares, and the options several of them take, each defined once.

- Both spellings: a multi-word flag is documented with dashes (``--max-turns``) and accepted with underscores
  too (``--max_turns``, the trainer's spelling), so a flag copied from a trainer command line works here. The
  underscore spelling is looked up, never listed: ``--help``, usage lines and errors name the dashed one.
- No abbreviations: argparse would otherwise read ``--max`` as whichever flag it uniquely starts, and a flag
  added later (``--max-tokens``) would silently change what an old command line means. A flag no command
  knows is one line naming the nearest and listing the known ones.
- ``--help`` ends each option with its default and each command with examples of how it is typed.
- An error is one line, ``gym-swe CMD: error: ...``, without argparse's usage block above it (``--help`` has
  it); a command or choice that is not known names the nearest (``gym-swe evl``: did you mean 'eval'?).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, NoReturn

from gym_swe.errors import ConfigError, unknown_name
from gym_swe.integrations.harnesses.registry import HARNESS_NAMES

HARNESSES = HARNESS_NAMES
"""Agent harnesses gym_swe runs unmodified through its proxy (`gym_swe.integrations.harnesses.registry`)."""

SANDBOX_HELP = "where agent commands run: local (a bubblewrap jail per episode) or docker (a container)"
REPO_SOURCE_HELP = (
    "SWE tasks: a directory of repository mirrors (owner__name.git, owner/name.git, owner/name, name.git) "
    "or a JSON file mapping 'owner/name' to a path or URL"
)
ENV_HELP = "env id: CodeDebug-v0, SWEGym-v0 or Harbor-v0"


def underscored(flag: str) -> str | None:
    """The underscore spelling of a multi-word long flag (``--max-turns`` -> ``--max_turns``), else None."""
    if not flag.startswith("--") or "-" not in flag[2:]:
        return None
    return "--" + flag[2:].replace("-", "_")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Each option's help ends with its default (where it has one); the examples keep their lines."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        help_text = action.help or ""
        if (
            "%(default)" in help_text
            or not action.option_strings
            or action.default in (None, False, argparse.SUPPRESS)
        ):
            return help_text
        return help_text + " (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """The parser of ``gym-swe`` and of each subcommand (argparse makes subcommand parsers of the class of
    their parent): no abbreviations, both spellings of every multi-word flag, unknown flags named."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        for flag in action.option_strings:
            if flag.startswith("--") and "_" in flag:
                raise ValueError(f"{flag}: spell gym-swe's flags with dashes; --a_b comes with --a-b")
            spelling = underscored(flag)
            if spelling is None:
                continue
            # Where argparse looks a flag up, not among the action's own option strings: parsed, not shown.
            self._option_string_actions[spelling] = action
        return action

    def error(self, message: str) -> NoReturn:
        """One line and exit status 2: the usage block argparse prints first would bury it."""
        self.exit(2, f"{self.prog}: error: {message}\n")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """A value outside an argument's choices (a command, ``--sandbox``): named with the nearest."""
        choices = action.choices
        if choices is not None and value not in choices:
            what = "command" if isinstance(action, argparse._SubParsersAction) else "value"
            raise argparse.ArgumentError(action, unknown_name(what, value, [str(one) for one in choices]))

    def parse_known_args(  # type: ignore[override]  # typeshed overloads it on the namespace type
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """As argparse's, but a flag this parser does not know is an error here, where the flags it does know
        are at hand (argparse would pass it up to ``gym-swe``, which knows none of them)."""
        parsed, extras = super().parse_known_args(args, namespace)
        for flag in (extra.split("=", 1)[0] for extra in extras if _is_flag(extra)):
            known = [known for action in self._actions for known in action.option_strings
                     if known not in ("-h", "--help")]  # fmt: skip
            if not known:
                self.error(f"Unknown option {flag!r}: {self.prog} takes none but --help")
            self.error(unknown_name("option", flag, known))
        return parsed, extras


def _is_flag(argument: str) -> bool:
    """Whether a command-line word is a flag (``-x``, ``--name``), not a value such as ``-1`` or ``-``."""
    if len(argument) < 2 or not argument.startswith("-"):
        return False
    try:
        float(argument)
    except ValueError:
        return True
    return False


def command(
    commands: Any, name: str, help_text: str, examples: Sequence[str] = ()
) -> argparse.ArgumentParser:
    """A subcommand under ``commands`` (an ``add_subparsers`` result) whose --help shows its defaults and how
    it is typed."""
    epilog = "examples:\n" + "\n".join(f"  {example}" for example in examples) if examples else None
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=help_text, description=help_text, epilog=epilog
    )
    return parser


def add_sandbox(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sandbox", default="local", choices=["local", "docker"], help=SANDBOX_HELP)


def add_task_ids(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task-id", action="append", help="only this task (repeatable)")


def add_repo_source(parser: argparse.ArgumentParser, help_text: str = REPO_SOURCE_HELP) -> None:
    parser.add_argument("--repo-source", help=help_text)


def add_harness(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument("--harness", choices=HARNESSES, help=help_text)


def check_env(env_id: str) -> None:
    """Fail at once, with the nearest name, on an env id gym_swe does not register."""
    from gym_swe.registration import ENVS

    known = [str(spec["id"]) for spec in ENVS]
    if env_id.removeprefix("gym_swe:") not in known:
        raise ConfigError(unknown_name("env", env_id, known))
