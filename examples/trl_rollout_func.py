"""Train on CodeDebug-v0 with TRL's GRPOTrainer, gym_swe driving the episodes (``rollout_func``).

    python examples/trl_rollout_func.py [--model PATH] [--steps 2] [--tasks GymSwe/0,GymSwe/1]

gym_swe's collector plays the batch's episodes in parallel (each in its own sandbox), parses tool calls in
any format gym_swe knows, and hands TRL the exact sampled token ids and log-probabilities with an
``env_mask`` that keeps tool output out of the loss; the reward is the env's. Here it samples with the
trainer's own model (``generator=None``); for real runs pass a gym_swe generator such as
``VLLMServerGenerator`` (its weights are synced after each step). Without ``--model`` a tiny random model
is built in ``<output_dir>/models`` so that this runs on a CPU in a minute; it learns nothing useful.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gym_swe.integrations.trl import GymSweRollout
from gym_swe.rollout.tiny import make_tiny_trl_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="a model directory or hub id (default: a tiny random model)")
    parser.add_argument("--steps", type=int, default=2, help="GRPO steps (default 2)")
    parser.add_argument("--tasks", default="GymSwe/0,GymSwe/1", help="comma-separated bundled task ids")
    parser.add_argument("--max_turns", type=int, default=3, help="model turns per episode (default 3)")
    parser.add_argument("--max_completion_length", type=int, default=32, help="tokens per turn")
    parser.add_argument(
        "--output_dir", default="runs/trl-rollout-func", help="TRL's output directory (default %(default)s)"
    )
    options = parser.parse_args()

    from trl import GRPOConfig, GRPOTrainer

    model = options.model or str(make_tiny_trl_model(Path(options.output_dir) / "models"))
    rollout = GymSweRollout("CodeDebug-v0", generator=None, parallel=4, max_turns=options.max_turns)
    config = GRPOConfig(
        output_dir=options.output_dir,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=options.max_completion_length,
        max_steps=options.steps,
        learning_rate=1e-4,
        use_vllm=False,
        bf16=False,
        gradient_checkpointing=False,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
    )
    trainer = GRPOTrainer(
        model=model,
        args=config,
        train_dataset=rollout.dataset(options.tasks.split(",")),  # its prompts tell the rollout the task
        reward_funcs=rollout.reward_funcs(),
        rollout_func=rollout,
    )
    try:
        trainer.train()
    finally:
        rollout.close()  # the envs it kept between batches, and their sandboxes
    for entry in trainer.state.log_history:
        if "loss" in entry:
            print(f"step {entry['step']}: env reward {entry.get('reward')}, loss {entry['loss']:.4f}")
    turns = [len(trajectory.turns) for trajectory in rollout.trajectories]
    print(f"last batch: {len(turns)} episodes, turns per episode {turns}")


if __name__ == "__main__":
    main()
