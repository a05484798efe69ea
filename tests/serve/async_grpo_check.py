"""TRL's AsyncGRPOTrainer on a served gym_swe env, on this CPU machine, as far as it goes: run in vLLM's
environment (its rollout worker needs vLLM importable) by tests/serve/test_trl.py, which reads the one JSON
line it prints.

    python async_grpo_check.py ENV_URL VLLM_URL MODEL OUTPUT_DIR

1. ``AsyncGRPOTrainer(...)`` with gym_swe's `EnvironmentFactory` on the served env: where it stops on a CPU.
2. Everything up to that point, which the trainer would run: its ``AsyncRolloutWorker`` (a spawned process)
   generating with the vLLM server and playing the served env through the factory's tool methods, scored by
   the env's ``get_reward`` (the grade), its samples as they reach the trainer's queue.
"""

from __future__ import annotations

import json
import queue
import sys
import time
import traceback


class NoWeightSync:
    """A weight-sync backend that sends nothing (TRL's protocol; its default streams over NCCL, CUDA only)."""

    def init_weight_transfer(self) -> None: ...

    def pause(self) -> None: ...

    def send_weights(self, iterator) -> None:  # type: ignore[no-untyped-def]
        for _ in iterator:
            pass

    def resume(self) -> None: ...

    def destroy(self) -> None: ...


def where_the_trainer_stops(env_url: str, vllm_url: str, model: str, output_dir: str) -> dict:
    from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer

    from gym_swe.integrations.trl import EnvironmentFactory, trl_dataset

    args = AsyncGRPOConfig(output_dir=output_dir, vllm_server_base_url=vllm_url, max_steps=1, num_generations=2,
                           per_device_train_batch_size=2, max_completion_length=48, max_tool_calling_iterations=2,
                           report_to="none", bf16=False, dtype="float32", save_strategy="no")  # fmt: skip
    try:
        AsyncGRPOTrainer(model, args=args, train_dataset=trl_dataset(env_url=env_url),
                         environment_factory=EnvironmentFactory(env_url=env_url), weight_transfer=NoWeightSync())  # fmt: skip
    except BaseException as error:
        frames = traceback.extract_tb(error.__traceback__)
        return {
            "error": f"{type(error).__name__}: {error}",
            "frames": [f"{f.name} ({f.filename.rsplit('/', 1)[-1]})" for f in frames],
        }
    return {"error": None, "frames": []}


def rollouts(env_url: str, vllm_url: str, model: str, count: int = 4) -> list[dict]:
    from accelerate import PartialState
    from transformers import AutoTokenizer
    from trl.experimental.async_grpo.async_rollout_worker import AsyncRolloutWorker

    from gym_swe.integrations.trl import EnvironmentFactory, trl_dataset

    PartialState()  # the worker logs through accelerate, as it does inside the trainer
    tokenizer = AutoTokenizer.from_pretrained(model)
    worker = AsyncRolloutWorker(model_name=model, dataset=trl_dataset(env_url=env_url, task_ids=["GymSwe/0", "GymSwe/1"]),
                                reward_funcs=[], processing_class=tokenizer, eos_token_ids=[tokenizer.eos_token_id],
                                environment_factory=EnvironmentFactory(env_url=env_url), num_generations=2,
                                max_inflight_tasks=4, vllm_server_url=vllm_url, max_tokens=48,
                                max_tool_calling_iterations=2, child_ready_timeout=600)  # fmt: skip
    worker.start()
    samples = []
    deadline = time.monotonic() + 600
    try:
        while len(samples) < count and time.monotonic() < deadline:
            try:
                samples.append(worker.rollout_buffer.get(timeout=5))
            except queue.Empty:
                worker.check_health(900)
    finally:
        worker.stop()
    return [{"completion": s.completion, "metrics": s.metrics, "group_id": s.group_id,
             "trained_tokens": int(s.completion_mask.sum()), "tokens": len(s.input_ids)} for s in samples]  # fmt: skip


if __name__ == "__main__":
    env_url, vllm_url, model, output_dir = sys.argv[1:5]
    report = {"trainer": where_the_trainer_stops(env_url, vllm_url, model, output_dir),
              "rollouts": rollouts(env_url, vllm_url, model)}  # fmt: skip
    print(json.dumps(report))
