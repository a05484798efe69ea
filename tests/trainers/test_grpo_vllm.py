"""trainers/grpo.py with vLLM generating (the CPU build, in its own environment): in-process, one step off,
and against a vLLM server. After every sync the engine must serve the new weights: the trainer's log-
probabilities of what it sampled match the engine's, while the weights move far (a stale engine would give a
large mismatch at the learning rate used here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.rollout.conftest import vllm_python
from tests.trainers.runs import TOY_FLAGS, metrics, train, weights

VLLM_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "2", "VLLM_LOGGING_LEVEL": "ERROR"}
FLAGS = [*TOY_FLAGS, "--tasks_per_step", "2", "--group_size", "4", "--learning_rate", "5e-2"]


def moved(run: Path, initial: Path) -> float:
    before, after = weights(initial), weights(run / "model")
    return max(float((after[name] - before[name]).abs().max()) for name in before)


def test_vllm_in_process_serves_the_new_weights_after_each_sync(tiny_bpe_model: Path, tmp_path: Path) -> None:
    """A real trainer run of three steps with an in-process vLLM engine on CPU: the engine's start (about a
    minute) and a sync after each step are what it checks."""
    train(*FLAGS, "--model", str(tiny_bpe_model), "--steps", "3", "--generator", "vllm", "--output_dir",
          str(tmp_path), "--run_name", "vllm", python=vllm_python(), env=VLLM_ENV)  # fmt: skip
    rows = metrics(tmp_path / "vllm")
    assert moved(tmp_path / "vllm", tiny_bpe_model) > 1e-2
    for row in rows[1:]:  # generated after a sync
        assert row["mismatch/kl"] < 1e-3, row
        assert 0.9 < row["mismatch/is_ratio_min"] <= row["mismatch/is_ratio_max"] < 1.1, row


def test_async_collects_one_step_off(tiny_bpe_model: Path, tmp_path: Path) -> None:
    """Step t+1 collected while step t trains; the final model is evaluated after the generator has its
    weights (async syncs as a step starts, and no step follows the last update)."""
    train(*FLAGS, "--model", str(tiny_bpe_model), "--steps", "3", "--generator", "vllm", "--async",
          "--eval_every", "3", "--eval_holdout", "2", "--output_dir", str(tmp_path), "--run_name", "async",
          python=vllm_python(), env=VLLM_ENV)  # fmt: skip
    rows = metrics(tmp_path / "async")
    assert [row["step"] for row in rows if "eval/pass@1" in row] == [0, 3]  # the base and the final model
    rows = rows[:3]
    assert [row["async/staleness"] for row in rows] == [0, 1, 1]
    versions = [
        {json.loads(line)["policy_version"] for line in (tmp_path / "async" / "trajectories" / f"step_{n}.jsonl")
         .read_text().splitlines()}
        for n in range(3)
    ]  # fmt: skip
    assert versions == [{0}, {0}, {1}]
    # batches one update old: the truncated importance weights correct what the stale engine sampled
    assert rows[1]["mismatch/kl"] > rows[0]["mismatch/kl"]


@pytest.mark.slow
def test_against_a_vllm_server(tiny_bpe_model: Path, tmp_path: Path) -> None:
    """The README's server mode: `vllm serve` with gym_swe's weight-sync extension, weights synced through
    a directory the server reads."""
    from tests.rollout.vllm_server import VLLMServer

    server = VLLMServer(str(tiny_bpe_model), python=vllm_python(), max_model_len=2048, env=VLLM_ENV)
    try:
        train(*FLAGS, "--model", str(tiny_bpe_model), "--steps", "2", "--generator", "vllm-server", "--base_url",
              server.base_url, "--weights_dir", str(tmp_path / "weights"), "--output_dir", str(tmp_path),
              "--run_name", "server")  # fmt: skip
    finally:
        server.close()
    rows = metrics(tmp_path / "server")
    assert moved(tmp_path / "server", tiny_bpe_model) > 1e-2
    assert rows[1]["mismatch/kl"] < 1e-3, rows[1]
    assert torch.isfinite(torch.tensor(rows[1]["loss/policy"]))
