"""Train on CodeDebug-v0 with TRL's GRPOTrainer, TRL driving the conversation (``environment_factory``).

    python examples/trl_environment_factory.py [--model PATH] [--steps 2] [--tasks GymSwe/0,GymSwe/1]

TRL renders each prompt with the env's tools (bash, str_replace_editor, submit: the public methods of the
environment class), parses the model's tool calls, runs them in the episode's sandbox, and scores each
rollout with the env's grade (``get_reward``). Without ``--model`` a tiny random model is built in
``<output_dir>/models`` so that this runs on a CPU in a minute; it learns nothing useful. With a real model
(one whose chat template TRL can parse tool calls from, e.g. Qwen2.5/Qwen3 instruct) raise ``--steps`` and
``--max_completion_length``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gym_swe.integrations.trl import trl_spec
from gym_swe.rollout.tiny import make_tiny_trl_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="a model directory or hub id (default: a tiny random model)")
    parser.add_argument("--steps", type=int, default=2, help="GRPO steps (default 2)")
    parser.add_argument("--tasks", default="GymSwe/0,GymSwe/1", help="comma-separated bundled task ids")
    parser.add_argument("--max_turns", type=int, default=3, help="tool calls per episode (default 3)")
    parser.add_argument("--max_completion_length", type=int, default=64)
    parser.add_argument(
        "--output_dir",
        default="runs/trl-environment-factory",
        help="TRL's output directory (default %(default)s)",
    )
    options = parser.parse_args()

    from trl import GRPOConfig, GRPOTrainer

    model = options.model or str(make_tiny_trl_model(Path(options.output_dir) / "models"))
    # The dataset (a row per task: its id and a prompt that reset() completes), the environment class and
    # any extra reward functions, in one call. The env's own reward comes through get_reward().
    spec = trl_spec("CodeDebug-v0", task_ids=options.tasks.split(","), max_turns=options.max_turns)
    config = GRPOConfig(
        output_dir=options.output_dir,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=options.max_completion_length,
        max_tool_calling_iterations=options.max_turns,
        max_steps=options.steps,
        learning_rate=1e-4,
        use_vllm=False,
        bf16=False,
        gradient_checkpointing=False,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
    )
    trainer = GRPOTrainer(model=model, args=config, **spec.trainer_kwargs())
    trainer.train()
    for entry in trainer.state.log_history:
        if "loss" in entry:
            reward = entry.get(f"rewards/{spec.environment_factory.__name__}/mean")
            print(f"step {entry['step']}: env reward {reward}, loss {entry['loss']:.4f}")


if __name__ == "__main__":
    main()
