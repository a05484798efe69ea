"""A few minutes of GRPO on CPU (what `make demo` runs after the scripted episode): a tiny random model learns
the toy env's reward (examples/toy_env.py: the share of vowels it writes), and the run directory holds the
learning curve, metrics, trajectories, a checkpoint and the final model.

    python examples/train_demo.py [--steps 30] [--output_dir runs]

It is the same trainer as for real runs (trainers/grpo.py); only the model (two layers, 64 wide, over a small
tokenizer trained here on gym_swe's own source) and the env are toys, so that it learns in minutes. The
tiny model is built once, in ``<output_dir>/models``; the run goes to ``<output_dir>/demo-toy``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "trainers"), str(ROOT / "examples")]

import grpo  # noqa: E402

from gym_swe.rollout.tiny import make_tiny_bpe_model  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30, help="GRPO steps (default 30, a few minutes on CPU)")
    parser.add_argument("--output_dir", default="runs", help="where the run directory goes (default runs)")
    options = parser.parse_args()
    model = make_tiny_bpe_model(Path(options.output_dir) / "models")
    args = grpo.parse_args([
        "--env", "toy_env:ToySay-v0", "--model", str(model), "--steps", str(options.steps),
        "--tasks_per_step", "2", "--group_size", "8", "--max_turns", "2", "--max_new_tokens", "8",
        "--learning_rate", "2e-2", "--eval_holdout", "2", "--eval_every", "10", "--log_with", "none",
        "--output_dir", options.output_dir, "--run_name", "demo-toy", "--overwrite",  # a demo reruns afresh
    ])  # fmt: skip
    summary = grpo.main(args)
    rewards = [row["reward/mean"] for row in summary["history"]]
    print(f"\nreward: {rewards[0]:.3f} at step 0 -> {rewards[-1]:.3f} at step {len(rewards) - 1}")
    print(f"learning curve: {summary['curve']}")
    print(f"run directory:  {summary['run_dir']}")


if __name__ == "__main__":
    main()
