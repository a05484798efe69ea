"""What every gym-swe parser shares (gym_swe/cli/options.py): --help with defaults, both spellings of every
multi-word flag with the dashed one documented, no abbreviations, an unknown flag named in one line."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest

from gym_swe.cli import build_parser
from gym_swe.cli.options import Parser, underscored
from tests.cli.shell import gym_swe
from tests.cli.test_main import COMMANDS


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[list[str], argparse.ArgumentParser]]:
    """Each command that runs (``images build``, not ``images``): the words that name it, and its parser."""
    subcommands = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    if not subcommands:
        yield list(path), parser
    for action in subcommands:
        for name, subparser in action.choices.items():
            yield from commands(subparser, (*path, name))


def minimal(path: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """A command line the command accepts: its words, then a value for each argument it requires."""
    argv = list(path)
    for action in parser._actions:
        if action.required or (not action.option_strings and action.nargs is None):
            value = str(action.choices[0]) if action.choices else "1"
            argv += [action.option_strings[0], value] if action.option_strings else [value]
    return argv


def multi_word_flags(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        for flag in action.option_strings:
            if underscored(flag):
                yield flag, action


ALL = list(commands(build_parser()))


def test_every_command_is_walked() -> None:
    assert {" ".join(path) for path, _ in ALL} == {
        c for c in COMMANDS if c not in ("images", "harnesses", "sandbox", "tasks")
    } | {"tasks export", "tasks generate"}
    assert sum(1 for _, parser in ALL for _ in multi_word_flags(parser)) >= 15


@pytest.mark.parametrize(("path", "parser"), ALL, ids=[" ".join(path) for path, _ in ALL])
def test_every_multi_word_flag_takes_both_spellings(path: list[str], parser: argparse.ArgumentParser) -> None:
    top, argv = build_parser(), minimal(path, parser)
    for flag, action in multi_word_flags(parser):
        given = [] if action.nargs == 0 else [str(action.choices[0]) if action.choices else "2"]
        dashed = top.parse_args([*argv, flag, *given])
        assert dashed != top.parse_args(argv), flag  # the flag was read
        assert top.parse_args([*argv, underscored(flag), *given]) == dashed, flag
        if given:
            assert top.parse_args([*argv, f"{underscored(flag)}={given[0]}"]) == dashed, flag


@pytest.mark.parametrize(("path", "parser"), ALL, ids=[" ".join(path) for path, _ in ALL])
def test_no_flag_is_taken_from_its_beginning(
    path: list[str], parser: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]
) -> None:
    """argparse would read ``--max`` as the one flag it starts: a later flag would change what it means."""
    argv = minimal(path, parser)
    flags = {flag for action in parser._actions for flag in action.option_strings}
    for flag in sorted(flag for flag in flags if flag.startswith("--")):
        for prefix in {start for start in (flag[:-1], flag[:4]) if len(start) > 3} - flags:
            with pytest.raises(SystemExit) as exit:
                build_parser().parse_args([*argv, prefix, "1"])
            assert exit.value.code == 2, prefix
            assert f"Unknown option '{prefix}'" in capsys.readouterr().err


def test_an_abbreviation_is_refused_with_the_flags_it_could_mean() -> None:
    result = gym_swe("eval", "--env", "CodeDebug-v0", "--generator", "hf", "--model", "m", "--max", "3")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert errors == [errors[0]] and errors[0].startswith(
        "gym-swe eval: error: Unknown option '--max'. Did you"
    )
    assert "'--max-turns'" in errors[0] and "'--max-tokens'" in errors[0] and "'--max_turns'" not in errors[0]


def test_an_unknown_flag_is_one_line_naming_the_nearest() -> None:
    result = gym_swe("view", "t.jsonl", "--min-rewrd", "1")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1].startswith(
        "gym-swe view: error: Unknown option '--min-rewrd'. Did you mean '--min-reward'? Known: "
    )
    result = gym_swe("--verbose", "envs")  # before the command: gym-swe itself has no options
    assert (
        result.stderr.splitlines()[-1]
        == "gym-swe: error: Unknown option '--verbose': gym-swe takes none but --help"
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_help_documents_the_dashed_spelling_only(command: str) -> None:
    result = gym_swe(*command.split(), "--help")
    assert result.returncode == 0, result.stderr
    assert not re.findall(r"--\w+_\w+", result.stdout)
    if command == "eval":
        assert "--max-turns MAX_TURNS" in result.stdout and "--task-id TASK_ID" in result.stdout


def test_a_flag_is_declared_with_dashes() -> None:
    with pytest.raises(ValueError, match="--max_turns: spell gym-swe's flags with dashes"):
        Parser().add_argument("--max_turns")


def test_help_shows_the_defaults_and_what_every_option_is() -> None:
    result = gym_swe("eval", "--help")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())  # argparse wraps lines
    assert "tokens per turn (default: 1024)" in text and "episodes at once (default: 8)" in text
    assert "where agent commands run: local (a bubblewrap jail per episode) or docker (a container) " \
           "(default: local)" in text  # fmt: skip
    assert "--seed SEED a run seed: makes a run repeatable (hf); samples still differ --parallel" in text
    assert "(default: None)" not in text
    play = " ".join(gym_swe("play", "--help").stdout.split())
    assert "--sandbox {local,docker} where agent commands run" in play
