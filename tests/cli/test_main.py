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


def test_unknown_command_fails_with_the_choices() -> None:
    result = gym_swe("imagez")
    assert result.returncode == 2
    assert "invalid choice: 'imagez'" in result.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_help_has_an_example(command: str) -> None:
    result = gym_swe(*command.split(), "--help")
    assert result.returncode == 0, result.stderr
    examples = result.stdout.split("examples:\n", 1)[1]
    assert f"gym-swe {command}" in examples
