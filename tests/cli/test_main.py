"""`gym-swe` itself: the commands it lists, their --help, an unknown command."""

from __future__ import annotations

import pytest

from tests.cli.shell import gym_swe

COMMANDS = ["envs", "play", "validate", "prepare", "eval", "serve", "view", "images", "images build", "harnesses",
            "harnesses install", "harnesses list", "sandbox", "sandbox prune"]  # fmt: skip


def test_help_lists_the_commands() -> None:
    result = gym_swe("--help")
    assert result.returncode == 0
    assert "images" in result.stdout and "sandbox" in result.stdout


def test_unknown_command_fails_with_the_nearest_in_one_line() -> None:
    result = gym_swe("evl")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "gym-swe: error: argument COMMAND: Unknown command 'evl'. Did you mean 'eval'? Known: 'envs', 'eval', "
        "'harnesses', 'images', 'play', 'prepare', 'sandbox', 'serve', 'tasks', 'validate', 'view'."
    ]


def test_an_unknown_choice_is_one_line_without_the_usage_block() -> None:
    result = gym_swe("eval", "--env", "CodeDebug-v0", "--generator", "hff", "--model", "m")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "gym-swe eval: error: argument --generator: Unknown value 'hff'. Did you mean 'hf'? Known: 'hf', "
        "'openai-chat', 'vllm', 'vllm-server'."
    ]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_help_has_an_example(command: str) -> None:
    result = gym_swe(*command.split(), "--help")
    assert result.returncode == 0, result.stderr
    examples = result.stdout.split("examples:\n", 1)[1]
    assert f"gym-swe {command}" in examples
