"""`gym-swe view`: the page it writes from `gym-swe eval`'s trajectories, and the files it refuses."""

from __future__ import annotations

from pathlib import Path

from tests.cli.shell import gym_swe, one_line_error


def test_view_filters_by_outcome_and_reward(tmp_path: Path) -> None:
    from gym_swe.rollout.trajectory import Trajectory, save_jsonl

    save_jsonl([Trajectory("a", reward=1.0, grade={"resolved": True}), Trajectory("b", grade={"resolved": False}),
                Trajectory("c", error="generator: down")], tmp_path / "t.jsonl")  # fmt: skip
    result = gym_swe("view", str(tmp_path / "t.jsonl"), "--outcome", "failed", "-o", str(tmp_path / "f.html"))
    assert result.returncode == 0, result.stderr
    assert "1 of 3 episodes" in result.stdout
    page = (tmp_path / "f.html").read_text()
    assert page.count('class="episode"') == 1 and ">c #0<" in page
    result = gym_swe("view", str(tmp_path / "t.jsonl"), "--min-reward", "0.5", "-o", str(tmp_path / "r.html"))
    assert "1 of 3 episodes" in result.stdout and ">a #0<" in (tmp_path / "r.html").read_text()


def test_view_a_missing_or_unreadable_file(tmp_path: Path) -> None:
    assert "missing.jsonl: no such file" in one_line_error(gym_swe("view", str(tmp_path / "missing.jsonl")))
    (tmp_path / "notjson").write_text("hello\n")
    line = one_line_error(gym_swe("view", str(tmp_path / "notjson")))
    assert "notjson, line 1: not a trajectory" in line
    (tmp_path / "list.jsonl").write_text('{"task_id": "a"}\n[1, 2]\n')
    assert "list.jsonl, line 2: not a trajectory" in one_line_error(
        gym_swe("view", str(tmp_path / "list.jsonl"))
    )
