"""`gym-swe prepare`: its options and its one-line errors (what it prepares: tests/tasks/test_validate.py)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.shell import gym_swe


def test_prepare_options_for_real_swe_tasks() -> None:
    prepare = gym_swe("prepare", "--help").stdout
    assert "--task-id TASK_ID" in prepare and "only this task (repeatable)" in prepare
    assert "owner/name.git" in prepare and "JSON file mapping" in prepare


def test_a_repo_source_that_is_not_there_is_one_line(tmp_path: Path) -> None:
    result = gym_swe("prepare", "--tasks", "bundled", "--repo-source", str(tmp_path / "mirrors"))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"gym-swe: error: repo source '{tmp_path / 'mirrors'}' does not exist")
    assert len(result.stderr.strip().splitlines()) == 1
    result = gym_swe("prepare", "--tasks", "bundled", "--task-id", "gymswe__semverkit-99")
    assert result.returncode == 2 and "Did you mean" in result.stderr
