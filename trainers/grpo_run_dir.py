"""The run directory of ``trainers/grpo.py``: where a run writes, what it writes there, and how it continues.

    RUN/args.json                     the Args of the run
    RUN/metrics.jsonl                 one line of metrics per step (RUN/RUN: the tracker's own logs)
    RUN/trajectories/step_N.jsonl     each episode of step N, written as it ends
    RUN/checkpoints/step_N/           model, optimizer, scheduler and RNG states, and trainer_state.json
    RUN/model/                        the final model (save_pretrained)
    RUN/reward.png                    the curve

A directory that holds an earlier run is refused unless the run continues it (``--resume``) or starts it
afresh (``--overwrite``), so that two runs never mix.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from gym_swe.errors import ConfigError
from gym_swe.rollout.stopping import interrupt_of
from gym_swe.rollout.trajectory import JsonlAppender, Trajectory, save_jsonl

if TYPE_CHECKING:
    from grpo_config import Args

RUN_OUTPUTS = ("metrics.jsonl", "trajectories", "checkpoints", "model", "reward.png", "args.json")
"""What a run writes into its directory (the tensorboard logs go under the run's name there too)."""


def run_directory(args: Args) -> tuple[Path, Path | None]:
    """The run's directory, and the checkpoint it resumes from (None: it starts afresh). One that holds an
    earlier run is refused here, before anything loads, unless --resume or --overwrite says what to do."""
    resume_from = latest_checkpoint(Path(args.resume)) if args.resume else None
    if resume_from is not None:
        return resume_from.parents[1], resume_from
    name = args.run_name or f"{args.env.split(':')[-1]}-{time.strftime('%Y%m%d-%H%M%S')}"
    run_dir = Path(args.output_dir) / name
    if not args.overwrite and holds_a_run(run_dir):
        raise ConfigError(
            f"{run_dir} holds an earlier run: pass --resume {run_dir} to continue it or --overwrite to start "
            "it afresh (or another --run_name)"
        )
    return run_dir, None


def holds_a_run(run_dir: Path) -> bool:
    """Whether an earlier run wrote results into ``run_dir`` (args.json alone: one that never started)."""
    results = ("metrics.jsonl", "trajectories", "checkpoints", "model")
    return any((run_dir / name).exists() for name in results)


def remove_run(run_dir: Path) -> None:
    """--overwrite: the earlier run's outputs go; anything else in the directory stays."""
    for path in (run_dir / name for name in (*RUN_OUTPUTS, run_dir.name)):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def latest_checkpoint(path: Path) -> Path:
    """``path`` itself if it is a checkpoint, else the run directory's last one."""
    if (path / "trainer_state.json").exists():
        return path
    found = sorted((path / "checkpoints").glob("step_*"), key=lambda p: int(p.name.split("_")[1]))
    if not found:
        raise ConfigError(f"--resume {path}: no checkpoint there (expected {path}/checkpoints/step_N)")
    return found[-1]


class RunDirectory:
    """A run's directory as the run's processes write it: the main process writes what they share, each
    process its own trajectories as its episodes end."""

    def __init__(self, path: Path, accelerator: Any) -> None:
        self.path, self.accelerator = path, accelerator

    def start(self, args: Args, log_with: str | None) -> None:
        """The directory made (an earlier run's outputs removed first with --overwrite), args.json written,
        the tracker started."""
        if self.accelerator.is_main_process:
            if args.overwrite:  # never with --resume (validate refuses both)
                remove_run(self.path)
            self.path.mkdir(parents=True, exist_ok=True)
            (self.path / "args.json").write_text(json.dumps(dataclasses.asdict(args), indent=2))
        if args.overwrite:
            self.accelerator.wait_for_everyone()  # no process writes into the directory while it is cleared
        if log_with:
            self.accelerator.init_trackers(self.path.name, config=dataclasses.asdict(args))

    def step_file(self, step: int) -> Path:
        """Where this process writes its trajectories of ``step`` as they end."""
        accelerator = self.accelerator
        mine = "" if accelerator.num_processes == 1 else f".process{accelerator.process_index}"
        return self.path / "trajectories" / f"step_{step:05d}{mine}.jsonl"

    def appending(self, step: int, version: int) -> JsonlAppender:
        """This process's trajectories of ``step`` written to its step file as each episode ends, with the
        policy ``version`` that played them (the main process rewrites the step's file with every process's,
        in order, once the step is done)."""

        def versioned(trajectory: Trajectory) -> None:
            trajectory.policy_version = version

        return JsonlAppender(self.step_file(step), before=versioned)

    def write_step(
        self, metrics: dict[str, Any], trajectories: list[Trajectory], log_with: str | None
    ) -> None:
        """A finished step: the main process writes every process's trajectories in order (atomically: the
        file is never half written) and the step's line of metrics.jsonl; each process drops its own part of
        the step's file, now in the whole; the tracker gets the metrics."""
        if self.accelerator.is_main_process:
            save_jsonl(trajectories, self.path / "trajectories" / f"step_{metrics['step']:05d}.jsonl")
            with (self.path / "metrics.jsonl").open("a") as handle:
                handle.write(json.dumps(metrics) + "\n")
        if self.accelerator.num_processes > 1:
            self.step_file(metrics["step"]).unlink(missing_ok=True)
        if log_with:
            self.accelerator.log({k: v for k, v in metrics.items() if k != "step"}, step=metrics["step"])

    def save_checkpoint(self, step: int, version: int) -> Path:
        """Everything a run needs to continue exactly at ``step``: accelerate's states and the policy
        version."""
        path = self.path / "checkpoints" / f"step_{step}"
        self.accelerator.save_state(str(path))
        if self.accelerator.is_main_process:
            (path / "trainer_state.json").write_text(json.dumps({"step": step, "version": version}))
        self.accelerator.wait_for_everyone()
        return path

    def load_checkpoint(self, checkpoint: Path) -> tuple[int, int, list[dict[str, Any]]]:
        """The states of ``checkpoint`` loaded; the step to continue from, the policy version, and the
        metrics of the steps before it."""
        self.accelerator.load_state(str(checkpoint))
        state = json.loads((checkpoint / "trainer_state.json").read_text())
        history = [
            json.loads(line)
            for line in (self.path / "metrics.jsonl").read_text().splitlines()
            if json.loads(line)["step"] < state["step"]
        ]
        return state["step"], state["version"], history

    def save_model(self, model: Any, tokenizer: Any) -> Path:
        final = self.path / "model"
        if self.accelerator.is_main_process:
            self.accelerator.unwrap_model(model).save_pretrained(final)
            tokenizer.save_pretrained(final)
        return final

    def finish(
        self, steps: int, history: list[dict[str, Any]], final: Path, checkpoint: Path
    ) -> dict[str, Any]:
        """Where everything is (and, from the main process, the same in one line)."""
        run_dir = self.path
        summary = {
            "run_dir": str(run_dir),
            "model": str(final),
            "checkpoint": str(checkpoint),
            "metrics": str(run_dir / "metrics.jsonl"),
            "trajectories": str(run_dir / "trajectories"),
            "curve": str(run_dir / "reward.png"),
            "history": history,
        }
        if self.accelerator.is_main_process:
            last = history[-1] if history else {}
            print(
                f"done: {steps} steps, reward {last.get('reward/mean', float('nan')):.3f}; "
                f"run {run_dir} (model {final}, curve {run_dir / 'reward.png'}, "
                f"metrics {run_dir / 'metrics.jsonl'}, trajectories {run_dir / 'trajectories'}, "
                f"checkpoint {checkpoint})"
            )
        return summary

    def say_interrupted(self, step: int, error: KeyboardInterrupt) -> None:
        """Ctrl-C or SIGTERM, from the main process: what was kept and how to go on, in one line."""
        if not self.accelerator.is_main_process:
            return
        checkpoints = self.path / "checkpoints"
        resume = f", checkpoints in {checkpoints} (--resume)" if checkpoints.is_dir() else ""
        print(
            f"grpo.py: interrupted by {interrupt_of(error).signal_name} in step {step}: the episodes "
            f"that ended are in {self.path / 'trajectories'}{resume}; the others were stopped and every "
            "sandbox closed",
            file=sys.stderr,
        )


def trajectory_metrics(trajectories: list[Trajectory], zero_std_fraction: float, seconds: float) -> dict:
    """A step's rewards and rollout statistics, over every process's trajectories."""
    count = max(len(trajectories), 1)
    turns = [turn for t in trajectories for turn in t.turns]
    rewards = [t.reward for t in trajectories]
    return {
        "reward/mean": sum(rewards) / count,
        "reward/std": float(torch.tensor(rewards).std()) if len(rewards) > 1 else 0.0,
        "reward/resolved": sum(t.resolved for t in trajectories) / count,
        "rollout/turns": len(turns) / count,
        "rollout/tool_error_rate": sum(turn.tool_errors > 0 for turn in turns) / max(len(turns), 1),
        "rollout/failed": sum(t.failed for t in trajectories) / count,
        "rollout/truncated": sum(t.truncated for t in trajectories) / count,
        "rollout/frac_zero_std_groups": zero_std_fraction,
        "rollout/env_seconds": sum(turn.env_seconds for turn in turns),
        "rollout/generate_seconds": sum(turn.generate_seconds for turn in turns),
        "rollout/seconds": seconds,
        "rollout/sampled_tokens": sum(sum(t.loss_mask) for t in trajectories),
    }


def plot(run_dir: Path, history: list[dict[str, Any]]) -> Path:
    """reward.png: mean reward per step, and eval pass@1 where it was measured."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4))
    steps = [line["step"] for line in history if "reward/mean" in line]
    axis.plot(steps, [line["reward/mean"] for line in history if "reward/mean" in line], label="reward/mean")
    evals = [(line["step"], line["eval/pass@1"]) for line in history if "eval/pass@1" in line]
    if evals:
        axis.plot(*zip(*evals), "o-", label="eval/pass@1")
    axis.set_xlabel("step")
    axis.legend()
    axis.grid(alpha=0.3)
    path = run_dir / "reward.png"
    figure.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(figure)
    return path
