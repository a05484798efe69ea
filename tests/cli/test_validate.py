"""`gym-swe validate`: its options (what it reports: tests/tasks/test_validate.py, tests/envs/test_swegym.py)."""

from __future__ import annotations

from tests.cli.shell import gym_swe


def test_validate_options_for_real_swe_tasks() -> None:
    validate = gym_swe("validate", "--help").stdout
    assert "--exclude-test ID" in validate and "-v, --verbose" in validate
