"""trainers/grpo.py run as a user runs it: on a small env registered for the tests (it learns), on
CodeDebug-v0 (smoke), resumed exactly, and on two processes with the same result as on one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.conftest import REPO_ROOT
from tests.trainers.runs import TOY_FLAGS, TRAINER, metrics, train, weights


def test_it_learns_on_a_small_env(tiny_bpe_model: Path, tmp_path: Path) -> None:
    """The reward is the share of vowels the model writes. From a random model (about 0.37), 30 steps of
    GRPO raise it clearly: 0.37 -> 0.60 when this test was written (last five steps' mean vs the first five)."""
    train(*TOY_FLAGS, "--model", str(tiny_bpe_model), "--steps", "30", "--tasks_per_step", "2", "--group_size", "8",
          "--learning_rate", "2e-2", "--output_dir", str(tmp_path), "--run_name", "learn")  # fmt: skip
    rewards = [row["reward/mean"] for row in metrics(tmp_path / "learn")]
    first, last = sum(rewards[:5]) / 5, sum(rewards[-5:]) / 5
    assert last > first + 0.08, rewards
    assert (tmp_path / "learn" / "reward.png").stat().st_size > 0


def test_resume_continues_exactly(tiny_bpe_model: Path, tmp_path: Path) -> None:
    """A run stopped after step 2 whose last checkpoint is at step 2 (as a crash in step 3 leaves it) goes on
    from there to the weights of a run that never stopped, and its logs read as one run: metrics.jsonl and
    tensorboard hold each step once, the resumed ones."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    common = [*TOY_FLAGS, "--model", str(tiny_bpe_model), "--tasks_per_step", "2", "--group_size", "4",
              "--learning_rate", "1e-2", "--output_dir", str(tmp_path)]  # fmt: skip
    train(*common, "--steps", "4", "--run_name", "straight")
    train(*common, "--steps", "3", "--save_every", "2", "--run_name", "stopped", "--log_with", "tensorboard")
    checkpoint = tmp_path / "stopped" / "checkpoints" / "step_2"
    out = train(*common, "--steps", "4", "--resume", str(checkpoint), "--log_with", "tensorboard")
    assert "4 steps" in out
    straight, resumed = weights(tmp_path / "straight" / "model"), weights(tmp_path / "stopped" / "model")
    assert straight.keys() == resumed.keys()
    for name in straight:
        assert torch.allclose(straight[name], resumed[name], atol=1e-6, rtol=0), name
    assert [r["step"] for r in metrics(tmp_path / "stopped")] == [0, 1, 2, 3]
    expected = [round(r["reward/mean"], 6) for r in metrics(tmp_path / "straight")]
    assert [round(r["reward/mean"], 6) for r in metrics(tmp_path / "stopped")] == expected
    events = EventAccumulator(str(tmp_path / "stopped" / "tensorboard"))  # the tracker's logs, not nested
    events.Reload()
    assert [(e.step, round(e.value, 6)) for e in events.Scalars("reward/mean")] == list(enumerate(expected))


def test_two_processes_give_the_weights_of_one(tiny_bpe_model: Path, tmp_path: Path) -> None:
    """accelerate launch --num_processes 2 on CPU (gloo): each process collects half the groups; one step gives
    the weights one process gets with the whole batch (generation_batch_size 1: no padding, so every
    trajectory is sampled exactly alike in both runs). Adam's epsilon is 1 here: with the usual 1e-8 its first
    step is lr * sign(gradient), which turns a last-bit difference in a near-zero gradient (the two runs add
    their micro-batches in another order) into a full step the other way."""
    pytest.importorskip("accelerate")
    common = [*TOY_FLAGS, "--model", str(tiny_bpe_model), "--steps", "1", "--tasks_per_step", "2", "--group_size",
              "4", "--generation_batch_size", "1", "--learning_rate", "1e-2", "--adam_epsilon", "1.0",
              "--output_dir", str(tmp_path)]  # fmt: skip
    train(*common, "--run_name", "one")
    launcher = [sys.executable, "-m", "accelerate.commands.launch", "--cpu", "--num_processes", "2",
                "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]  # fmt: skip
    train(*common, "--run_name", "two", launcher=launcher)
    one, two = weights(tmp_path / "one" / "model"), weights(tmp_path / "two" / "model")
    initial = weights(tiny_bpe_model)
    moved = max(float((one[name] - initial[name]).abs().max()) for name in one)
    assert moved > 1e-4  # the step did change the weights
    for name in one:
        assert torch.allclose(one[name], two[name], atol=1e-5, rtol=1e-4), name
    assert metrics(tmp_path / "one")[0]["reward/mean"] == pytest.approx(
        metrics(tmp_path / "two")[0]["reward/mean"]
    )


def test_fsdp_that_accelerate_would_run_as_lone_processes_is_refused(
    tiny_bpe_model: Path, tmp_path: Path
) -> None:
    """accelerate launch --use_fsdp --fsdp_version 2 with no accelerator device: accelerate runs each process
    alone (it says nothing), so each would train on the whole batch and both write one run directory. The
    trainer refuses it in one line before writing anything. (Where a GPU is, that launch is real FSDP.)"""
    pytest.importorskip("accelerate")
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: FSDP runs for real")
    launcher = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "2", "--num_machines", "1",
                "--mixed_precision", "no", "--dynamo_backend", "no", "--use_fsdp", "--fsdp_version", "2"]  # fmt: skip
    command = [*launcher, str(TRAINER), "--log_with", "none", *TOY_FLAGS, "--model", str(tiny_bpe_model),
               "--steps", "1", "--tasks_per_step", "2", "--output_dir", str(tmp_path), "--run_name", "fsdp"]  # fmt: skip
    environment = {**os.environ, "PYTHONPATH": f"{REPO_ROOT}:{REPO_ROOT / 'examples'}"}
    done = subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True, env=environment, timeout=600
    )
    assert done.returncode != 0
    said = [line for line in done.stderr.splitlines() if line.startswith("grpo.py: error:")]
    assert said, done.stderr[-3000:]
    assert "launched as 2 processes, but accelerate runs this one alone" in said[0]
    assert not (tmp_path / "fsdp").exists()


@pytest.mark.bwrap
def test_codedebug_smoke_run_writes_everything(tiny_bpe_model: Path, tmp_path: Path) -> None:
    """Two steps on CodeDebug-v0 in local sandboxes: trajectories, metrics, a checkpoint, the curve and the
    final model written; eval at step 0 (the base model) and at step 2 (the final model). A random model fixes nothing, so every reward is 0
    and no group carries a gradient (frac_zero_std_groups is 1): the weights change here by AdamW's weight
    decay alone, which shows the optimizer stepped. Learning itself is shown on the toy env above."""
    from tests.conftest import require_bwrap

    require_bwrap()
    out = train("--env", "CodeDebug-v0", "--model", str(tiny_bpe_model), "--steps", "2", "--tasks_per_step", "2",
                "--group_size", "2", "--max_turns", "2", "--max_new_tokens", "24", "--eval_holdout", "2",
                "--eval_every", "2", "--learning_rate", "1e-2", "--weight_decay", "0.1", "--output_dir", str(tmp_path),
                "--run_name", "cd", "--env_kwargs", '{"reward": "fraction"}')  # fmt: skip
    run = tmp_path / "cd"
    assert str(run) in out and "reward.png" in out and "final model's eval pass@1" in out
    rows = metrics(run)
    assert [row["step"] for row in rows] == [0, 1, 2] and "eval/pass@1" in rows[0]
    assert sorted(rows[2]) == ["eval/pass@1", "step"]  # the final model: evaluated, not trained on
    assert rows[0]["rollout/failed"] == 0.0 and rows[0]["rollout/turns"] > 0
    assert rows[0]["rollout/frac_zero_std_groups"] == 1.0
    for name in ("reward/mean", "loss/entropy", "mismatch/kl", "perf/tokens_per_s", "rollout/env_seconds"):
        assert name in rows[0], name
    from gym_swe.rollout.trajectory import load_jsonl

    step0 = load_jsonl(run / "trajectories" / "step_0.jsonl")
    assert len(step0) == 4 and all(t.env_id == "CodeDebug-v0" and t.policy_version == 0 for t in step0)
    # each carries the advantage its loss used: zero spread in every group here, so zero each
    assert [t.advantage for t in step0] == [0.0] * 4
    assert rows[0]["train/frac_reward_zero_std"] == 1.0 and "train/completions/mean_length" in rows[0]
    for step in (0, 2):  # the episodes behind each eval/pass@1, beside the training ones, in their schema
        evaluated = load_jsonl(run / "trajectories" / f"eval_step_{step}.jsonl")
        assert len(evaluated) == 2 and all(t.grade is not None for t in evaluated)
        assert sum(t.resolved for t in evaluated) / 2 == rows[step]["eval/pass@1"]
    assert (run / "checkpoints" / "step_2" / "trainer_state.json").exists()
    before, after = weights(tiny_bpe_model), weights(run / "model")
    assert any(not torch.equal(before[name], after[name]) for name in before)


@pytest.mark.parametrize(
    "options",
    [
        ["--loss", "grpo", "--advantage_scale", "batch", "--leave_one_out"],
        ["--loss", "dr_grpo", "--recompute_old_logps", "--updates_per_batch", "2"],
        ["--loss", "gspo", "--eps_low", "0.0003", "--eps_high", "0.0004", "--beta", "0.1"],
        ["--loss", "cispo", "--dynamic_sampling", "--max_resample_rounds", "2", "--mask_truncated"],
        [
            "--lora",
            "--lora_r",
            "4",
            "--lr_schedule",
            "cosine",
            "--warmup_steps",
            "1",
            "--geo_mask_threshold",
            "2",
        ],
    ],
    ids=["grpo-batch-loo", "dr_grpo-recompute", "gspo-kl", "cispo-dynamic", "lora-cosine"],
)
def test_every_loss_and_option_runs_a_step(tiny_bpe_model: Path, tmp_path: Path, options: list[str]) -> None:
    train(*TOY_FLAGS, "--model", str(tiny_bpe_model), "--steps", "2", "--tasks_per_step", "2", "--group_size", "4",
          "--learning_rate", "1e-2", "--max_tokens_per_microbatch", "64", "--output_dir", str(tmp_path),
          "--run_name", "run", *options)  # fmt: skip
    rows = metrics(tmp_path / "run")
    assert len(rows) == 2 and all(abs(row["loss/policy"]) < 1e3 for row in rows)
    if "--beta" in options:
        assert rows[1]["loss/kl"] > 0  # the policy moved away from the reference
    if "--lora" in options:
        assert (tmp_path / "run" / "model" / "adapter_config.json").exists()
