"""The trainer's run directory (trainers/grpo_run_dir.py): a used one refused unless resumed or overwritten,
the last checkpoint found, --overwrite removing only what a run writes, and a step's metrics."""

from __future__ import annotations

from pathlib import Path

import pytest
from grpo_config import Args
from grpo_run_dir import remove_run, run_directory, trajectory_metrics

from gym_swe.errors import ConfigError
from gym_swe.rollout.trajectory import Trajectory


def test_a_used_run_directory_is_refused_unless_resumed_or_overwritten(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "args.json").write_text("{}")  # a run that never started: nothing to mix with
    assert run_directory(Args(output_dir=str(tmp_path), run_name="run")) == (run, None)
    (run / "metrics.jsonl").write_text('{"step": 0}\n')
    with pytest.raises(ConfigError, match=r"holds an earlier run: pass --resume .* or --overwrite"):
        run_directory(Args(output_dir=str(tmp_path), run_name="run"))
    assert run_directory(Args(output_dir=str(tmp_path), run_name="run", overwrite=True)) == (run, None)
    for step in (9, 10):
        (run / "checkpoints" / f"step_{step}").mkdir(parents=True)
        (run / "checkpoints" / f"step_{step}" / "trainer_state.json").write_text("{}")
    last = run / "checkpoints" / "step_10"  # by number, not by name
    assert run_directory(Args(resume=str(run))) == (run, last)
    assert (
        run_directory(Args(resume=str(run / "checkpoints" / "step_9")))[1] == run / "checkpoints" / "step_9"
    )
    with pytest.raises(ConfigError, match="no checkpoint there"):
        run_directory(Args(resume=str(tmp_path)))


def test_overwrite_removes_only_what_a_run_writes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for name in ("trajectories", "checkpoints/step_1", "model", "run"):  # run/run: the tracker's logs
        (run / name).mkdir(parents=True)
    for name in ("metrics.jsonl", "reward.png", "args.json", "notes.txt"):
        (run / name).write_text("x")
    remove_run(run)
    assert sorted(path.name for path in run.iterdir()) == ["notes.txt"]


def trajectory(reward: float, turns: int, tool_errors: int = 0, resolved: bool = False) -> Trajectory:
    made = Trajectory(task_id="t", reward=reward, grade={"resolved": resolved})
    made.add_prompt([1, 2])
    for _ in range(turns):
        made.add_sampled([3, 4, 5], None, "text", "stop").tool_errors = tool_errors
    return made


def test_trajectory_metrics_are_means_over_the_trajectories_and_sums_of_time_and_tokens() -> None:
    failed = trajectory(0.0, 1)
    failed.error = "sandbox died"
    trajectories = [trajectory(1.0, 2, tool_errors=1, resolved=True), trajectory(0.0, 1), failed]
    metrics = trajectory_metrics(trajectories, zero_std_fraction=0.5, seconds=3.0)
    assert metrics["reward/mean"] == pytest.approx(1 / 3)
    assert metrics["reward/std"] == pytest.approx(0.57735, rel=1e-4)  # the sample std of 1, 0, 0
    assert metrics["reward/resolved"] == pytest.approx(1 / 3)
    assert metrics["rollout/turns"] == pytest.approx(4 / 3)
    assert metrics["rollout/tool_error_rate"] == pytest.approx(2 / 4)
    assert metrics["rollout/failed"] == pytest.approx(1 / 3)
    assert metrics["rollout/sampled_tokens"] == 4 * 3
    assert (metrics["rollout/frac_zero_std_groups"], metrics["rollout/seconds"]) == (0.5, 3.0)
