"""`gym-swe sandbox prune`."""

from __future__ import annotations

from tests.cli.shell import gym_swe


def test_sandbox_prune_reports_what_it_removed() -> None:
    result = gym_swe("sandbox", "prune")
    assert result.returncode == 0, result.stderr
    assert "local: removed" in result.stdout
    assert "docker:" in result.stdout
