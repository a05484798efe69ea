"""The run directory of ``trainers/grpo.py``: where a run writes, what it writes there, and how it continues.

    RUN/args.json                       the Args of the run
    RUN/metrics.jsonl                   one line of metrics per step, ours and TRL's names (`trl_metrics`)
    RUN/tensorboard/                    the tensorboard log (--log_with tensorboard)
    RUN/trajectories/step_N.jsonl       each episode of step N, written as it ends
    RUN/trajectories/eval_step_N.jsonl  the held-out episodes behind eval/pass@1 at step N (N = --steps: the
                                        final model's); the same schema
    RUN/checkpoints/step_N/             model, optimizer, scheduler and RNG states, and trainer_state.json
    RUN/model/                          the final model (save_pretrained)
    RUN/reward.png                      the curve

One naming throughout: ``step_N``, N the number of updates done before it (no zero padding), for the
trajectories of step N and for the checkpoint that continues from it.

A directory that holds an earlier run is refused unless the run continues it (``--resume``) or starts it
afresh (``--overwrite``), so that two runs never mix. A resumed run reads as one run: what the stopped run
wrote from its checkpoint's step on (metrics lines, step files) is dropped, since those steps are played
again, and the tensorboard writer goes on in the same directory with ``purge_step`` at that step, which
tells the viewer to drop the stopped run's later points.
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

TENSORBOARD = "tensorboard"
"""The tensorboard log's folder in the run directory."""
RESULTS = ("metrics.jsonl", "trajectories", "checkpoints", "model")
"""What an earlier run that started left in its directory (`holds_a_run`)."""
RUN_OUTPUTS = ("args.json", TENSORBOARD, "reward.png", *RESULTS)
"""What a run writes into its directory."""


def run_directory(args: Args) -> tuple[Path, Path | None]:
    """The run's directory, and the checkpoint it resumes from (None: it starts afresh). One that holds an
    earlier run is refused here, before anything loads, unless --resume or --overwrite says what to do."""
    resume_from = latest_checkpoint(Path(args.resume)) if args.resume else None
    if resume_from is not None:
        return resume_from.parents[1], resume_from
    env = "served" if args.env_url else args.env.split(":")[-1]
    name = args.run_name or f"{env}-{time.strftime('%Y%m%d-%H%M%S')}"
    run_dir = Path(args.output_dir) / name
    if not args.overwrite and holds_a_run(run_dir):
        raise ConfigError(
            f"{run_dir} holds an earlier run: pass --resume {run_dir} to continue it or --overwrite to start "
            "it afresh (or another --run_name)"
        )
    return run_dir, None


def holds_a_run(run_dir: Path) -> bool:
    """Whether an earlier run wrote results into ``run_dir`` (args.json alone: one that never started)."""
    return any((run_dir / name).exists() for name in RESULTS)


def remove_run(run_dir: Path) -> None:
    """--overwrite: the earlier run's outputs go; anything else in the directory stays (RUN/RUN: where
    tensorboard logged before it had a folder of its own)."""
    for path in (run_dir / name for name in (*RUN_OUTPUTS, run_dir.name)):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def step_of(checkpoint: Path) -> int:
    """The step a checkpoint continues from."""
    return int(json.loads((checkpoint / "trainer_state.json").read_text())["step"])


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def drop_steps_from(run_dir: Path, step: int) -> None:
    """--resume from ``step``: the metrics lines and trajectory files of that step and later go (the resumed
    run plays those steps again), so that the directory reads as one run."""
    kept = [line for line in read_metrics(run_dir) if line["step"] < step]
    if (run_dir / "metrics.jsonl").exists():
        partial = run_dir / "metrics.jsonl.partial"
        partial.write_text("".join(json.dumps(line) + "\n" for line in kept))
        partial.replace(run_dir / "metrics.jsonl")  # atomically: a crash here loses no line
    for path in (run_dir / "trajectories").glob("*step_*.jsonl"):
        if step_of_file(path) >= step:  # step_7.jsonl, step_7.process1.jsonl, eval_step_7.jsonl
            path.unlink()


def step_of_file(path: Path) -> int:
    """The step of a trajectory file: ``step_7.jsonl``, ``step_7.process1.jsonl``, ``eval_step_7.jsonl`` (and
    the zero-padded ``step_00007.jsonl`` of earlier runs) -> 7."""
    return int(path.name.split(".")[0].rpartition("step_")[2])


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
        self.history: list[dict[str, Any]] = []  # the lines of metrics.jsonl, resumed ones included
        self._warned = False  # warn_without_signal said its line
        self.dynamic_sampling = False  # the run's --dynamic_sampling (start sets it), for that line

    def start(self, args: Args, log_with: str | None, resume_from: Path | None) -> None:
        """The directory made (an earlier run's outputs removed first with --overwrite; with --resume, what
        the stopped run wrote after its checkpoint), args.json written, the tracker started (resumed: in the
        same directory, from the checkpoint's step)."""
        self.dynamic_sampling = args.dynamic_sampling
        resume_step = step_of(resume_from) if resume_from is not None else None
        if self.accelerator.is_main_process:
            if args.overwrite:  # never with --resume (validate refuses both)
                remove_run(self.path)
            if resume_step is not None:
                drop_steps_from(self.path, resume_step)
            self.path.mkdir(parents=True, exist_ok=True)
            (self.path / "args.json").write_text(json.dumps(dataclasses.asdict(args), indent=2))
        if args.overwrite or resume_from is not None:
            self.accelerator.wait_for_everyone()  # no process writes into the directory while it is cleared
        if log_with:  # resumed into tensorboard: its settings are there (stored again: a second run shown)
            resumed_here = resume_step is not None and log_with == "tensorboard"
            config = None if resumed_here else dataclasses.asdict(args)
            purge = {"tensorboard": {"purge_step": resume_step}} if resumed_here else {}
            # tensorboard logs into RUN/tensorboard (its folder is the project's name under RUN); wandb and
            # trackio name their project after the run
            project = TENSORBOARD if log_with == "tensorboard" else self.path.name
            try:
                self.accelerator.init_trackers(project, config=config, init_kwargs=purge)
            except Exception as error:  # a tracker that cannot start (wandb without a login, say)
                first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
                raise ConfigError(
                    f"--log_with {log_with} could not start: {first_line} (or --log_with none)"
                ) from None

    def step_file(self, step: int) -> Path:
        """Where this process writes its trajectories of ``step`` as they end."""
        accelerator = self.accelerator
        mine = "" if accelerator.num_processes == 1 else f".process{accelerator.process_index}"
        return self.path / "trajectories" / f"step_{step}{mine}.jsonl"

    def appending(self, step: int, version: int) -> JsonlAppender:
        """This process's trajectories of ``step`` written to its step file as each episode ends, with the
        policy ``version`` that played them (the main process rewrites the step's file with every process's,
        in order, once the step is done)."""

        def versioned(trajectory: Trajectory) -> None:
            trajectory.policy_version = version

        return JsonlAppender(self.step_file(step), before=versioned)

    def write_step(
        self, metrics: dict[str, Any], trajectories: list[Trajectory] | None, log_with: str | None
    ) -> None:
        """A finished step (or, without ``trajectories``, the final model's eval): the main process writes
        every process's trajectories in order (atomically: the file is never half written), the step's line
        of metrics.jsonl and the curve; each process drops its own part of the step's file, now in the whole;
        the tracker gets the metrics."""
        metrics = {**metrics, **trl_metrics(metrics)}
        self.history.append(metrics)
        if self.accelerator.is_main_process:
            if trajectories is not None:
                save_jsonl(trajectories, self.path / "trajectories" / f"step_{metrics['step']}.jsonl")
            with (self.path / "metrics.jsonl").open("a") as handle:
                handle.write(json.dumps(metrics) + "\n")
            plot(self.path, self.history)
            self.warn_without_signal(metrics)
        if self.accelerator.num_processes > 1 and trajectories is not None:
            self.step_file(metrics["step"]).unlink(missing_ok=True)
        if log_with:
            self.accelerator.log({k: v for k, v in metrics.items() if k != "step"}, step=metrics["step"])

    def write_eval(self, step: int, trajectories: list[Trajectory]) -> None:
        """The held-out episodes behind eval/pass@1 at ``step`` (this process's; every process calls it):
        ``trajectories/eval_step_N.jsonl`` holds every process's, in order, in the training files' schema."""
        gathered = self.gather(trajectories) if self.accelerator.num_processes > 1 else trajectories
        if self.accelerator.is_main_process:
            save_jsonl(gathered, self.path / "trajectories" / f"eval_step_{step}.jsonl")

    def warn_without_signal(self, metrics: dict[str, Any]) -> None:
        """Once a run, from the main process: a step whose every group scored alike (nothing to learn from,
        loss/policy 0) is said in one line on stderr, with what to change."""
        if self._warned or "reward/group_std" not in metrics or metrics["reward/group_std"] > 0:
            return
        if metrics.get("rollout/failed", 0.0) >= 1.0:  # no group at all: the failures are the news
            return
        self._warned = True
        dynamic = "more --max_resample_rounds" if self.dynamic_sampling else "--dynamic_sampling"
        print(
            f"grpo.py: warning: step {metrics['step']}: every group's rewards were equal "
            f"(reward {metrics['reward/mean']:.3f}), so nothing was learned from it; give the groups a "
            f"spread: more samples (--group_size), {dynamic}, an easier task set (--tasks, "
            "--train_task_ids), or the share of tests passed as the reward (--env_kwargs "
            '\'{"reward": "fraction"}\')',
            file=sys.stderr,
        )

    def gather(self, trajectories: list[Trajectory]) -> list[Trajectory]:
        """Every process's trajectories of a step, in process order (whole groups each)."""
        from accelerate.utils import gather_object

        gathered = gather_object([t.to_dict() for t in trajectories])
        return [Trajectory.from_dict(t) for t in gathered]

    def mean_over_processes(self, value: float) -> float:
        tensor = torch.tensor(value, device=self.accelerator.device)
        return float(self.accelerator.reduce(tensor, reduction="mean"))

    def save_checkpoint(self, step: int, version: int) -> Path:
        """Everything a run needs to continue exactly at ``step``: accelerate's states and the policy
        version."""
        path = self.path / "checkpoints" / f"step_{step}"
        self.accelerator.save_state(str(path))
        if self.accelerator.is_main_process:
            (path / "trainer_state.json").write_text(json.dumps({"step": step, "version": version}))
        self.accelerator.wait_for_everyone()
        return path

    def load_checkpoint(self, checkpoint: Path) -> tuple[int, int]:
        """The states of ``checkpoint`` loaded, and the metrics of the steps before it; the step to continue
        from and the policy version."""
        self.accelerator.load_state(str(checkpoint))
        state = json.loads((checkpoint / "trainer_state.json").read_text())
        self.history = [line for line in read_metrics(self.path) if line["step"] < state["step"]]
        return state["step"], state["version"]

    def save_model(self, model: Any, tokenizer: Any) -> Path:
        final = self.path / "model"
        if self.accelerator.is_main_process:
            self.accelerator.unwrap_model(model).save_pretrained(final)
            tokenizer.save_pretrained(final)
        return final

    def finish(self, steps: int, final: Path, checkpoint: Path) -> dict[str, Any]:
        """Where everything is (and, from the main process, the same in one line): ``history`` holds the
        steps' metrics, one line each; ``final_eval`` the final model's pass@1 (None: no eval)."""
        run_dir, steps_run = self.path, [line for line in self.history if "reward/mean" in line]
        last_line = self.history[-1] if self.history else {}
        final_eval = last_line.get("eval/pass@1") if last_line.get("step") == steps else None
        summary = {
            "run_dir": str(run_dir),
            "model": str(final),
            "checkpoint": str(checkpoint),
            "metrics": str(run_dir / "metrics.jsonl"),
            "trajectories": str(run_dir / "trajectories"),
            "tensorboard": str(run_dir / TENSORBOARD),
            "curve": str(run_dir / "reward.png"),
            "history": steps_run,
            "final_eval": final_eval,
        }
        if self.accelerator.is_main_process:
            reward = steps_run[-1]["reward/mean"] if steps_run else float("nan")
            evaluated = "" if final_eval is None else f", final model's eval pass@1 {final_eval:.3f}"
            print(
                f"done: {steps} steps, reward {reward:.3f}{evaluated}; "
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


def trajectory_metrics(
    trajectories: list[Trajectory], group_size: int, zero_std_fraction: float, seconds: float
) -> dict:
    """A step's rewards and rollout statistics, over every process's trajectories (whole groups of
    ``group_size``, in order)."""
    count = max(len(trajectories), 1)
    turns = [turn for t in trajectories for turn in t.turns]
    rewards = [t.reward for t in trajectories]
    lengths = [sum(t.loss_mask) for t in trajectories] or [0]  # the tokens each trajectory sampled
    return {
        "reward/mean": sum(rewards) / count,
        "reward/std": float(torch.tensor(rewards).std()) if len(rewards) > 1 else 0.0,
        "reward/group_std": group_spread(trajectories, group_size),
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
        "rollout/sampled_tokens_mean": sum(lengths) / count,
        "rollout/sampled_tokens_min": min(lengths),
        "rollout/sampled_tokens_max": max(lengths),
        "rollout/max_model_len_cut": sum(t.end_reason == "max_model_len" for t in trajectories) / count,
    }


TRL_METRICS = {
    "train/reward": "reward/mean",
    "train/reward_std": "reward/group_std",
    "train/frac_reward_zero_std": "rollout/frac_zero_std_groups",
    "train/completions/mean_length": "rollout/sampled_tokens_mean",
    "train/completions/min_length": "rollout/sampled_tokens_min",
    "train/completions/max_length": "rollout/sampled_tokens_max",
    "train/completions/clipped_ratio": "rollout/max_model_len_cut",
    "train/clip_ratio/low_mean": "loss/clip_frac_low",
    "train/clip_ratio/high_mean": "loss/clip_frac_high",
    "train/loss": "loss/policy",
    "train/entropy": "loss/entropy",
    "train/kl": "loss/kl",
    "train/learning_rate": "perf/lr",
}
"""The names TRL's GRPOTrainer logs (as a TRL dashboard reads them, under ``train/``), each from ours.
``reward_std`` is the mean std within a group, as TRL's; a completion is a trajectory's sampled tokens."""


def trl_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    """TRL's names for a step's metrics (`TRL_METRICS`), logged beside ours; ``clip_ratio/region_mean`` is
    the share clipped either way."""
    named = {trl: metrics[ours] for trl, ours in TRL_METRICS.items() if ours in metrics}
    if "loss/clip_frac_low" in metrics and "loss/clip_frac_high" in metrics:
        named["train/clip_ratio/region_mean"] = metrics["loss/clip_frac_low"] + metrics["loss/clip_frac_high"]
    return named


def group_spread(trajectories: list[Trajectory], group_size: int) -> float:
    """The std of rewards within a group, averaged over the groups (failed trajectories left out, as from the
    baselines): the spread GRPO learns from; 0 when every group's samples scored alike."""
    spreads = []
    for start in range(0, len(trajectories), group_size):
        rewards = [t.reward for t in trajectories[start : start + group_size] if not t.failed]
        if len(rewards) > 1:
            spreads.append(float(torch.tensor(rewards).std()))
    return sum(spreads) / len(spreads) if spreads else 0.0


def plot(run_dir: Path, history: list[dict[str, Any]]) -> Path:
    """reward.png (see curve)."""
    path = run_dir / "reward.png"
    curve(run_dir.name, history).savefig(path, dpi=100, bbox_inches="tight")
    return path


def curve(run_name: str, history: list[dict[str, Any]]) -> Any:
    """The run's curve, titled with its name: the mean reward per step with a band of one std within the
    groups around it, and eval pass@1 where it was measured (the final model's included). A matplotlib
    Figure made without pyplot: no global state, nothing to close."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4))
    axis = figure.add_subplot()
    trained = [line for line in history if "reward/mean" in line]
    steps = [line["step"] for line in trained]
    means = [line["reward/mean"] for line in trained]
    spreads = [line.get("reward/group_std", 0.0) for line in trained]
    axis.plot(steps, means, label="reward/mean (training samples)")
    axis.fill_between(steps, [m - s for m, s in zip(means, spreads)], [m + s for m, s in zip(means, spreads)],
                      alpha=0.2, label="± std within a group (what GRPO learns from)")  # fmt: skip
    evals = [(line["step"], line["eval/pass@1"]) for line in history if "eval/pass@1" in line]
    if evals:
        axis.plot(*zip(*evals), "o-", label="eval/pass@1 (held-out tasks)")
    axis.set_title(run_name)
    axis.set_xlabel("step (updates done)")
    axis.set_ylabel("reward / pass@1")
    axis.legend()
    axis.grid(alpha=0.3)
    return figure
