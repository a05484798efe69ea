"""The trainer's run directory (trainers/grpo_run_dir.py): a used one refused unless resumed or overwritten,
the last checkpoint found, --overwrite removing only what a run writes, a resumed run's logs (metrics.jsonl,
step files, tensorboard) read back as one run, a step's metrics, and the curve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from grpo_config import Args
from grpo_run_dir import RunDirectory, curve, read_metrics, remove_run, run_directory, trajectory_metrics

from gym_swe.errors import ConfigError
from gym_swe.rollout.trajectory import Trajectory, load_jsonl


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
    for name in (
        "trajectories",
        "checkpoints/step_1",
        "model",
        "tensorboard",
        "run",
    ):  # run/run: old tensorboard
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
    metrics = trajectory_metrics(trajectories, group_size=3, zero_std_fraction=0.5, seconds=3.0)
    assert metrics["reward/mean"] == pytest.approx(1 / 3)
    assert metrics["reward/std"] == pytest.approx(0.57735, rel=1e-4)  # the sample std of 1, 0, 0
    assert metrics["reward/group_std"] == pytest.approx(0.70711, rel=1e-4)  # of 1, 0: the failed one left out
    assert metrics["reward/resolved"] == pytest.approx(1 / 3)
    assert metrics["rollout/turns"] == pytest.approx(4 / 3)
    assert metrics["rollout/tool_error_rate"] == pytest.approx(2 / 4)
    assert metrics["rollout/failed"] == pytest.approx(1 / 3)
    assert metrics["rollout/sampled_tokens"] == 4 * 3
    assert (metrics["rollout/frac_zero_std_groups"], metrics["rollout/seconds"]) == (0.5, 3.0)


def test_group_std_is_the_mean_spread_within_groups() -> None:
    trajectories = [trajectory(r, 1) for r in (1.0, 0.0, 0.5, 0.5)]  # groups (1, 0) and (0.5, 0.5)
    assert trajectory_metrics(trajectories, 2, 0.0, 0.0)["reward/group_std"] == pytest.approx(
        0.70711 / 2, 1e-4
    )


def test_the_curve_has_the_run_name_its_axes_the_group_spread_and_the_final_eval() -> None:
    history = [
        {"step": 0, "reward/mean": 0.2, "reward/group_std": 0.1, "eval/pass@1": 0.0},
        {"step": 1, "reward/mean": 0.5, "reward/group_std": 0.3},
        {"step": 2, "eval/pass@1": 0.5},  # the final model's eval: no training line of its own
    ]
    axis = curve("my-run", history).axes[0]
    assert axis.get_title() == "my-run"
    assert axis.get_xlabel() == "step (updates done)" and axis.get_ylabel() == "reward / pass@1"
    mean, evals = axis.get_lines()
    assert list(mean.get_xdata()) == [0, 1] and list(evals.get_xdata()) == [0, 2]
    (band,) = axis.collections  # mean -/+ the group std
    low, high = band.get_paths()[0].get_extents().y0, band.get_paths()[0].get_extents().y1
    assert (low, high) == (pytest.approx(0.1), pytest.approx(0.8))


def test_a_resumed_run_reads_as_one_run(tmp_path: Path) -> None:
    """Steps 0-3 written, then resumed from a checkpoint at step 2 (a crash after step 3, the last checkpoint
    at 2): metrics.jsonl, the step files and tensorboard hold steps 0-3 once each, the resumed ones at 2-3."""
    pytest.importorskip("tensorboard")
    from accelerate import Accelerator
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = tmp_path / "run"

    def write(steps: range, reward: float, resume_from: Path | None) -> None:
        accelerator = Accelerator(log_with="tensorboard", project_dir=str(run))
        run_dir = RunDirectory(run, accelerator)
        run_dir.start(Args(), "tensorboard", resume_from)
        for step in steps:
            run_dir.write_step(
                {"step": step, "reward/mean": reward + step}, [trajectory(0.0, 1)], "tensorboard"
            )
        accelerator.end_training()

    write(range(4), 0.0, None)
    # accelerate's hparams
    settings = sorted(path for path in (run / "tensorboard").iterdir() if path.is_dir())
    checkpoint = run / "checkpoints" / "step_2"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text(json.dumps({"step": 2, "version": 2}))
    (run / "trajectories" / "step_3.process1.jsonl").write_text("half a step\n")  # left by a crash
    (run / "trajectories" / "eval_step_2.jsonl").write_text("the stopped run's eval at step 2\n")
    write(range(2, 4), 10.0, checkpoint)

    assert [(line["step"], line["reward/mean"]) for line in read_metrics(run)] == [
        (0, 0),
        (1, 1),
        (2, 12),
        (3, 13),
    ]
    assert sorted(path.name for path in (run / "trajectories").iterdir()) == [
        f"step_{step}.jsonl" for step in range(4)
    ]
    layout = ["args.json", "checkpoints", "metrics.jsonl", "reward.png", "tensorboard", "trajectories"]
    assert sorted(path.name for path in run.iterdir()) == layout  # as the README describes it
    events = EventAccumulator(str(run / "tensorboard"))  # the tracker's directory, once
    events.Reload()
    points = [(event.step, event.value) for event in events.Scalars("reward/mean")]
    assert points == [(0, 0.0), (1, 1.0), (2, 12.0), (3, 13.0)]
    # the settings are not stored again: a second copy would show in the viewer as a second run
    assert sorted(path for path in (run / "tensorboard").iterdir() if path.is_dir()) == settings


def test_trl_names_are_logged_beside_ours(tmp_path: Path) -> None:
    """A TRL dashboard's names (train/reward_std, train/frac_reward_zero_std, train/completions/*,
    train/clip_ratio/*) come in metrics.jsonl and the tracker beside ours, from the same values."""
    from accelerate import Accelerator

    trajectories = [trajectory(1.0, 2), trajectory(0.0, 1)]
    metrics = {"step": 0, **trajectory_metrics(trajectories, 2, 0.0, 1.0), "loss/clip_frac_low": 0.25,
               "loss/clip_frac_high": 0.5, "loss/policy": -0.1, "perf/lr": 1e-6}  # fmt: skip
    run_dir = RunDirectory(tmp_path / "run", Accelerator())
    run_dir.start(Args(), None, None)
    run_dir.write_step(metrics, trajectories, None)
    [line] = read_metrics(tmp_path / "run")
    assert line["train/reward"] == line["reward/mean"] == 0.5
    assert (
        line["train/reward_std"] == line["reward/group_std"] > 0 and line["train/frac_reward_zero_std"] == 0.0
    )
    lengths = (line["train/completions/mean_length"], line["train/completions/min_length"],
               line["train/completions/max_length"])  # fmt: skip
    assert lengths == (4.5, 3, 6)  # sampled tokens: 3 a turn
    assert line["train/completions/clipped_ratio"] == 0.0 and line["train/loss"] == -0.1
    assert (line["train/clip_ratio/low_mean"], line["train/clip_ratio/high_mean"]) == (0.25, 0.5)
    assert line["train/clip_ratio/region_mean"] == 0.75 and line["train/learning_rate"] == 1e-6


def test_a_step_without_signal_is_warned_about_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from accelerate import Accelerator

    run_dir = RunDirectory(tmp_path / "run", Accelerator())
    run_dir.start(Args(), None, None)
    flat = [trajectory(0.0, 1) for _ in range(4)]  # two groups of 2, each scored alike
    for step in (0, 1):
        run_dir.write_step({"step": step, **trajectory_metrics(flat, 2, 1.0, 1.0)}, flat, None)
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "grpo.py: warning: step 0: every group's rewards were equal (reward 0.000), so nothing was learned "
        "from it; give the groups a spread: more samples (--group_size), --dynamic_sampling, an easier task "
        "set (--tasks, --train_task_ids), or the share of tests passed as the reward (--env_kwargs "
        '\'{"reward": "fraction"}\')'
    ]
    spread = [trajectory(1.0, 1), trajectory(0.0, 1)]
    quiet = RunDirectory(tmp_path / "quiet", Accelerator())
    quiet.start(Args(), None, None)
    quiet.write_step({"step": 0, **trajectory_metrics(spread, 2, 0.0, 1.0)}, spread, None)
    assert capsys.readouterr().err == ""


def test_eval_episodes_are_saved_beside_the_training_ones(tmp_path: Path) -> None:
    from accelerate import Accelerator

    run_dir = RunDirectory(tmp_path / "run", Accelerator())
    run_dir.start(Args(), None, None)
    run_dir.write_eval(5, [trajectory(1.0, 2, resolved=True)])
    [saved] = load_jsonl(tmp_path / "run" / "trajectories" / "eval_step_5.jsonl")
    assert saved.resolved and len(saved.turns) == 2  # the training files' schema
