"""`gym-swe view`: the page it writes from a file of trajectories or a whole run, and what it refuses."""

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


def test_view_a_run_directory(tmp_path: Path) -> None:
    """`gym-swe view RUN_DIR`: every step's file and the eval episodes, on one page inside the run."""
    from gym_swe.rollout.trajectory import Trajectory, save_jsonl

    run = tmp_path / "run"
    for step in (0, 1):
        save_jsonl([Trajectory("a", 0, reward=1.0, grade={"resolved": True}), Trajectory("a", 1)],
                   run / "trajectories" / f"step_{step:05d}.jsonl")  # fmt: skip
    save_jsonl([Trajectory("b", grade={"resolved": True})], run / "eval" / "step_00001.jsonl")
    (run / "metrics.jsonl").write_text('{"step": 0}\n')
    result = gym_swe("view", str(run))
    assert result.returncode == 0, result.stderr
    assert f"5 episodes from 3 files -> {run / 'view.html'}" in result.stdout
    assert "note: metrics.jsonl: holds no trajectories, passed over" in result.stderr
    page = (run / "view.html").read_text()
    assert page.count('<section class="file"') == 3 and "per task: eval episodes" in page
    result = gym_swe("view", str(run / "trajectories"), "-o", str(tmp_path / "t.html"))
    assert "4 episodes from 2 files" in result.stdout


def test_view_refuses_bad_flags_before_reading(tmp_path: Path) -> None:
    """A wrong flag is one line, exit 2, and no page is written."""
    from gym_swe.rollout.trajectory import Trajectory, save_jsonl

    save_jsonl([Trajectory("a")], tmp_path / "t.jsonl")
    line = one_line_error(gym_swe("view", str(tmp_path / "t.jsonl"), "--tokenizer", str(tmp_path / "nope")))
    assert "--tokenizer" in line and "no such directory" in line
    assert "--max-mb must be a number of megabytes > 0" in one_line_error(
        gym_swe("view", str(tmp_path / "t.jsonl"), "--max-mb", "0")
    )
    assert "its folder" in one_line_error(gym_swe("view", str(tmp_path / "t.jsonl"), "-o", "/nowhere/x.html"))
    assert not (tmp_path / "t.html").exists()
    assert "no such file or directory" in one_line_error(gym_swe("view", str(tmp_path / "missing")))
