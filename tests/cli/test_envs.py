"""`gym-swe envs`."""

from __future__ import annotations

from tests.cli.shell import gym_swe


def test_envs_lists_the_envs_with_their_task_sources() -> None:
    result = gym_swe("envs")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.split()[:3] == ["CodeDebug-v0", "bundled", "48"] for line in lines)
    assert any(line.split()[:3] == ["SWEGym-v0", "bundled", "12"] for line in lines)
    assert any(line.startswith("SWEGym-v0") and "swe-bench-verified" in line for line in lines)


def test_the_columns_line_up_whatever_the_names_length() -> None:
    lines = gym_swe("envs").stdout.splitlines()
    starts = {line.index(" tasks") for line in lines[:1]} | {
        line.index(" from the Hub") for line in lines if "from the Hub (" in line
    }
    assert len(starts) == 1, lines  # the third column starts at one place on every line
