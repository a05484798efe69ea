"""TRL on a served env, through ``environment_factory``: GRPOTrainer trains a tiny tool-calling model on it; and
AsyncGRPOTrainer, which cannot run on a CPU, as far as it goes (tests/serve/async_grpo_check.py, in vLLM's
environment): where it stops, and everything up to there, its rollout worker playing the served env with a real
vLLM server."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import models
from tests.conftest import REPO_ROOT, require_bwrap
from tests.rollout.conftest import vllm_python
from tests.serve.server import EnvServer

pytest.importorskip("trl")
pytest.importorskip("datasets")

from gym_swe.integrations.trl import EnvironmentFactory, environment_class, trl_dataset
from gym_swe.rollout.tiny import TOOL_CALL_COMMAND

TASKS = ["GymSwe/0", "GymSwe/1"]


@pytest.fixture(scope="module")
def tool_caller() -> Path:
    """tests/integrations/test_trl.py's tiny model taught to answer with a bash tool call (the same, cached)."""
    require_bwrap()
    return models.tool_caller()  # built by make test's set-up (python -m tests.models)


@pytest.fixture(scope="module")
def vllm(tool_caller: Path) -> Iterator:
    """A real vLLM server (CPU) serving the tool caller. TRL's rollout worker seeds every request, which a CPU
    server only survives without chunked prefill."""
    from tests.rollout.vllm_server import VLLMServer

    server = VLLMServer(str(tool_caller), python=vllm_python(), max_model_len=4096, sync_extension=False,
                        extra_args=["--dtype", "float32", "--no-enable-chunked-prefill"],
                        env={"VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "2"})  # fmt: skip
    yield server
    server.close()


def test_grpo_trainer_trains_a_tiny_model_on_a_served_env(
    server: EnvServer, tool_caller: Path, tmp_path: Path
) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    factory = environment_class(env_url=server.url)
    assert factory.env_id == "CodeDebug-v0" and factory.env_url == server.url
    model = AutoModelForCausalLM.from_pretrained(str(tool_caller))
    tokenizer = AutoTokenizer.from_pretrained(str(tool_caller))
    before = {name: value.detach().clone() for name, value in model.named_parameters()}
    tool_results: list[str] = []

    def length_reward(completions, environments, **_):  # type: ignore[no-untyped-def]
        # A reward with spread, so the tiny model's update is not zero (the env's is 0: it fixes nothing).
        tool_results.extend(m["content"] for e in environments for m in e.messages if m["role"] == "tool")
        return [len(json.dumps(c)) / 1000 for c in completions]

    # Sampled above temperature 1, so that a group's two samples often differ (a non-zero update). Often, not
    # always: the tool caller answers with its one call nearly every time, and its lessons depend on where the
    # checkout lies (a fresh clone elsewhere trains another digest's model), so at seed 0 all four samples may
    # come out alike (every advantage 0). AdamW's weight decay then still moves the weights: the step ran.
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=4, num_generations=2,
                      max_completion_length=48, learning_rate=1e-3, max_steps=1, use_vllm=False, report_to="none",
                      bf16=False, gradient_checkpointing=False, save_strategy="no", logging_steps=1, seed=0,
                      max_tool_calling_iterations=2, temperature=1.3, weight_decay=0.1)  # fmt: skip
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=args, reward_funcs=[length_reward],
                          train_dataset=trl_dataset(env_url=server.url, task_ids=TASKS),
                          environment_factory=factory)  # fmt: skip
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logs) == 1 and all(f"rewards/{factory.__name__}/mean" in entry for entry in logs)
    assert any(not value.equal(before[name]) for name, value in trainer.model.named_parameters())
    pool = trainer._environment_pool[None]
    assert len(pool) == 4 and all(e.grade is not None for e in pool)  # each rollout graded by the server
    assert any(e.turns > 0 for e in pool) and any(entry.get("tools/call_frequency", 0) > 0 for entry in logs)
    # TRL parsed the calls and ran them through the methods, in the served sandboxes: the task's own tests ran.
    assert any("All tests passed." in text or "Error" in text for text in tool_results), tool_results[:4]


def test_async_grpo_stops_on_a_cpu_at_the_flops_probe_and_its_rollouts_play_the_served_env(
    server: EnvServer, vllm, tool_caller: Path, tmp_path: Path
) -> None:
    """AsyncGRPOTrainer (TRL 1.16) needs CUDA: its constructor reads the device's peak FLOPs
    (``get_peak_flops_per_device`` -> ``torch.cuda.get_device_name``), and past it the default weight sync is
    NCCL and the training forward is a FlashAttention-3 kernel fetched from the Hub (``kernels``). Up to the
    constructor's stop, and in the rollout worker it would start, everything runs here."""
    pickled = EnvironmentFactory(env_url=server.url)
    import pickle

    assert pickle.loads(pickle.dumps(pickled)) == pickled  # what the spawned worker gets
    script = REPO_ROOT / "tests" / "serve" / "async_grpo_check.py"
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([vllm_python(), str(script), server.url, vllm.base_url, str(tool_caller), str(tmp_path)],
                          capture_output=True, text=True, env=environment, timeout=900, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])

    stop = report["trainer"]
    assert stop["error"] == "AssertionError: Torch not compiled with CUDA enabled", stop
    assert (
        "get_peak_flops_per_device (utils.py)" in stop["frames"]
        and "__init__ (async_grpo_trainer.py)" in stop["frames"]
    )

    rollouts = report["rollouts"]
    assert len(rollouts) == 4 and {r["group_id"] for r in rollouts} == {
        0,
        1,
    }  # two groups of num_generations=2
    for rollout in rollouts:
        # Scored by the env's get_reward: the grade of the episode, played on the server (0: nothing is fixed).
        assert rollout["metrics"]["rewards/CodeDebugV0Environment"] == rollout["metrics"]["reward"] == 0.0
        assert rollout["trained_tokens"] > 0
    tool_messages = [m for r in rollouts for m in r["completion"] if m["role"] == "tool"]
    assert tool_messages, [r["completion"] for r in rollouts]
    calls = [c for r in rollouts for m in r["completion"] for c in m.get("tool_calls") or []]
    assert all(c["function"]["name"] == "bash" for c in calls)
    assert any(c["function"]["arguments"].get("command") == TOOL_CALL_COMMAND for c in calls)
    # The task's own test script ran in the served sandbox (its bug shows or its visible tests pass); every call
    # has a bash result (a sampled command may be wrong: "command not found" is the sandbox's answer too).
    assert any("All tests passed." in m["content"] or "Error" in m["content"] for m in tool_messages), (
        tool_messages
    )
    assert all(m["content"].strip() for m in tool_messages)
