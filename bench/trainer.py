"""Our GRPO trainer (`trainers/grpo.py`) against TRL's `GRPOTrainer`, the same run in one process each.

    python bench/trainer.py [--rounds 5] [--steps 8] [--codedebug-steps 2]
    python bench/trainer.py --side ours --profile      # one side alone, under cProfile (where the time goes)

Both sides train the same tiny Qwen2 model (`make_tiny_model`: hidden 64, 2 layers, head_dim 32, random
weights, seed 0) over the Qwen2.5 tokenizer on the same 32 single-turn chat prompts, with the same reward (the
share of vowels among the letters of the completion): 4 prompts x G=4 completions per step, 32 completion
tokens, temperature 1, 8 steps, AdamW at a constant lr 1e-4, one optimizer step per batch, fp32, no eval, no
gradient checkpointing. Ours samples with ``--generator hf`` (transformers ``generate`` on the trainer's
model), TRL with ``use_vllm=False`` (the same). Each run is a subprocess of its own; rounds alternate which
side goes first.

Measured per run:
- step time: from the end of one step to the end of the next (everything a step does: generation, reward,
  update, logging, per-step files), the first step left out as warm-up; steps/s is 1 / the median over
  every measured step of every run, and, less moved by other load on the machine, round by round;
- tokens/s: completion tokens actually sampled (stop tokens included) per step over the step's time;
- peak memory: the run process's RSS high-water mark, ``ru_maxrss`` from ``os.wait4`` on it (what
  ``/proc/<pid>/status`` calls VmHWM), and its RSS just before the first step (imports and model loaded);
- where a step goes: the rollout (ours: ``grpo.rollout``; TRL: ``_generate_and_score_completions``), the
  generation inside it, the update (ours: ``grpo.update``; TRL: from the rollout's end to the optimizer step),
  and the rest (logging, files).

Then CodeDebug-v0 through our trainer alone (8 tasks x G=4, 3 turns of 96 tokens, local sandboxes): per step,
the seconds spent generating, in envs and in the update, read from the run's metrics.jsonl.

Needs the Qwen2.5 tokenizer (``--tokenizer``, by default ../shared/data/tokenizers/qwen2.5-instruct; skips
with a message without it). The model and the runs go in a temporary directory of the bench's own, whose
path it prints; the model is removed at the end, every step's figures stay there (single-turn.json).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = ROOT.parent / "shared" / "data" / "tokenizers" / "qwen2.5-instruct"
BENCH_ENV = "BenchSay-v0"
VOWELS = set("aeiouAEIOU")
TOPICS = [
    "rivers", "mountains", "the sea", "autumn", "a library", "bread", "trains", "the moon",
    "a garden", "winter", "bicycles", "coffee", "a lighthouse", "rain", "bees", "a market",
    "the desert", "clocks", "owls", "a bridge", "snow", "violins", "a harbour", "forests",
    "lanterns", "tea", "a village", "storms", "maps", "apples", "the stars", "a kitchen",
]  # fmt: skip
PROMPTS = [f"Write one sentence about {topic}." for topic in TOPICS]
RESULT = "BENCH_RESULT "
"""The line a side's subprocess prints its measurements on, as JSON."""


def vowel_share(text: str) -> float:
    """The reward of a completion: the share of its letters that are vowels (0 without letters)."""
    letters = [c for c in text if c.isalpha()]
    return sum(c in VOWELS for c in letters) / len(letters) if letters else 0.0


def rss_kb() -> int:
    """This process's resident set size now, from /proc/self/status."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


# --- ours: a single-turn env with the prompts and the reward ------------------------------------------------
def say_env_class() -> type:
    """`SayEnv`: one turn; the reward is `vowel_share` of the completion. (Built in a function: only our
    side's run needs gymnasium and gym_swe.)"""
    from dataclasses import dataclass

    import gymnasium

    from gym_swe.envs.spaces import CodeText

    @dataclass(frozen=True)
    class SayTask:
        task_id: str
        prompt: str

    class SayEnv(gymnasium.Env[str, str]):
        """The bench's 32 prompts as tasks; one turn; the completion's text is the action."""

        metadata: ClassVar[dict[str, Any]] = {"render_modes": []}
        tasks: ClassVar[list[SayTask]] = [SayTask(f"say/{i}", prompt) for i, prompt in enumerate(PROMPTS)]

        def __init__(self, max_turns: int = 1, **_: Any) -> None:
            self.observation_space = CodeText(100_000)
            self.action_space = CodeText(100_000)
            self.messages: list[dict[str, Any]] = []
            self._done = True
            self._task = self.tasks[0]

        def reset(
            self, *, seed: int | None = None, options: dict[str, Any] | None = None
        ) -> tuple[str, dict[str, Any]]:
            super().reset(seed=seed)
            wanted = (options or {}).get("task_id", self.tasks[0].task_id)
            self._task = next(t for t in self.tasks if t.task_id == wanted)
            self.messages = [{"role": "user", "content": self._task.prompt}]
            self._done = False
            return self._task.prompt, {"messages": list(self.messages), "tools": [], "task_id": wanted}

        def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
            text = action if isinstance(action, str) else str(action)
            reward = vowel_share(text)
            self.messages.append({"role": "assistant", "content": text})
            info = {"task_id": self._task.task_id, "parse_errors": [], **self._end("max_turns", reward)}
            info["messages"] = list(self.messages)
            return "", reward, True, False, info

        def truncate(self, reason: str) -> dict[str, Any]:
            return {**self._end(reason, 0.0), "messages": list(self.messages)}

        @property
        def done(self) -> bool:
            return self._done

        def _end(self, reason: str, reward: float) -> dict[str, Any]:
            self._done = True
            resolved = reward > 0.5
            grade = {"resolved": resolved, "reward": reward, "tests": [], "error": None, "rejection": None}
            return {"end_reason": reason, "grade": grade, "reward_grade": 0.0}

    return SayEnv


class Clock:
    """(start, end) of each call of wrapped functions, by name."""

    def __init__(self) -> None:
        self.calls: dict[str, list[tuple[float, float]]] = defaultdict(list)

    def wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.calls[name].append((start, time.perf_counter()))

        return timed

    def seconds(self, name: str) -> list[float]:
        return [end - start for start, end in self.calls[name]]


def run_ours(model: str, steps: int, out: Path) -> dict[str, Any]:
    """Our trainer on the bench env, in this process; step boundaries from wrapping its module functions."""
    import gymnasium

    sys.path.insert(0, str(ROOT / "trainers"))
    import grpo
    import grpo_run_dir

    gymnasium.register(id=BENCH_ENV, entry_point=say_env_class())
    clock, before = Clock(), {}
    rollout = clock.wrap("rollout", grpo.rollout)

    def first_rollout(*args: Any, **kwargs: Any) -> Any:
        before.setdefault("rss_kb", rss_kb())
        return rollout(*args, **kwargs)

    grpo.rollout = first_rollout
    grpo.update = clock.wrap("update", grpo.update)
    grpo_run_dir.plot = clock.wrap("end", grpo_run_dir.plot)  # the last thing a step does
    flags = ["--env", BENCH_ENV, "--model", model, "--generator", "hf", "--group_size", "4",
             "--tasks_per_step", "4", "--max_new_tokens", "32", "--steps", str(steps),
             "--learning_rate", "1e-4", "--max_turns", "1", "--eval_every", "0",
             "--log_with", "none", "--temperature", "1.0", "--seed", "0",
             "--output_dir", str(out), "--run_name", "ours"]  # fmt: skip
    summary = grpo.main(grpo.parse_args(flags))
    tokens = []
    for step in range(steps):
        path = Path(summary["trajectories"]) / f"step_{step}.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        tokens.append(sum(sum(row["loss_mask"]) for row in rows))
    ends = [end for _, end in clock.calls["end"]]
    return {
        "intervals": [b - a for a, b in itertools.pairwise(ends)],
        "tokens": tokens,
        "rollout": clock.seconds("rollout"),
        "generate": [row["rollout/generate_seconds"] for row in summary["history"]],
        "update": clock.seconds("update"),
        "rss_before_kb": before.get("rss_kb", 0),
    }


# --- TRL ----------------------------------------------------------------------------------------------------
def run_trl(model: str, steps: int, out: Path) -> dict[str, Any]:
    """TRL's GRPOTrainer with the same settings, in this process; step boundaries from a callback."""
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    clock, marks = Clock(), defaultdict(list)
    tokens: dict[int, int] = defaultdict(int)

    def reward(completions: list, completion_ids: list, trainer_state: Any, **_: Any) -> list[float]:
        tokens[trainer_state.global_step] += sum(len(ids) for ids in completion_ids)
        return [vowel_share(c[0]["content"] if isinstance(c, list) else c) for c in completions]

    class StepMarks(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if not marks["rss_before_kb"]:
                marks["rss_before_kb"].append(rss_kb())

        def on_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            marks["optimizer"].append(time.perf_counter())

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            marks["end"].append(time.perf_counter())

    class TimedGRPOTrainer(GRPOTrainer):
        def _generate_single_turn(self, *args: Any, **kwargs: Any) -> Any:
            return clock.wrap("generate", super()._generate_single_turn)(*args, **kwargs)

        def _generate_and_score_completions(self, *args: Any, **kwargs: Any) -> Any:
            return clock.wrap("rollout", super()._generate_and_score_completions)(*args, **kwargs)

    config = GRPOConfig(
        output_dir=str(out),
        per_device_train_batch_size=16,  # completions: 4 prompts x 4 generations
        gradient_accumulation_steps=1,
        num_generations=4,
        max_completion_length=32,
        temperature=1.0,
        learning_rate=1e-4,
        lr_scheduler_type="constant",  # ours: constant
        epsilon_high=0.28,  # ours: eps_low 0.2, eps_high 0.28
        max_steps=steps,
        use_vllm=False,
        report_to="none",
        bf16=False,  # TRL's default is bf16; ours trains in fp32
        gradient_checkpointing=False,  # TRL's default is True; ours has none
        save_strategy="no",
        eval_strategy="no",
        logging_steps=1,  # ours logs every step
        seed=0,
    )
    dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": p}] for p in PROMPTS]})
    trainer = TimedGRPOTrainer(
        model=model, reward_funcs=reward, args=config, train_dataset=dataset, callbacks=[StepMarks()]
    )
    trainer.train()
    rollouts = clock.calls["rollout"]
    return {
        "intervals": [b - a for a, b in itertools.pairwise(marks["end"])],
        "tokens": [tokens[step] for step in range(steps)],
        "rollout": clock.seconds("rollout"),
        "generate": clock.seconds("generate"),
        "update": [done - end for done, (_, end) in zip(marks["optimizer"], rollouts)],
        "rss_before_kb": marks["rss_before_kb"][0],
    }


def run_side(side: str, model: str, steps: int, out: Path, profile: bool) -> None:
    """One side in this process; its measurements go to stdout on the `RESULT` line (with ``profile``, the
    profile goes to ``out``)."""
    run = {"ours": run_ours, "trl": run_trl}[side]
    if profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        result = profiler.runcall(run, model, steps, out)
        stats = pstats.Stats(profiler)
        stats.dump_stats(str(out / f"profile-{side}.prof"))
        print(f"profile: {out / f'profile-{side}.prof'}")
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(40)
    else:
        result = run(model, steps, out)
    print(RESULT + json.dumps(result), flush=True)


# --- the parent: rounds of both sides, then CodeDebug -------------------------------------------------------
def spawn(command: list[str], log: Path) -> tuple[int, int]:
    """Run ``command`` with its output in ``log``; (exit status, its peak RSS in kB from ``os.wait4``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TOKENIZERS_PARALLELISM": "false"}
    with log.open("w") as handle:
        process = subprocess.Popen(command, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, usage.ru_maxrss


def measure(side: str, model: str, tokenizer: str, steps: int, scratch: Path) -> dict[str, Any]:
    out = Path(tempfile.mkdtemp(prefix=f"{side}-", dir=scratch))
    log = out.with_suffix(".log")
    command = [sys.executable, __file__, "--side", side, "--model", model, "--tokenizer", tokenizer,
               "--steps", str(steps), "--out", str(out)]  # fmt: skip
    code, peak_kb = spawn(command, log)
    lines = log.read_text().splitlines()
    found = [line for line in lines if line.startswith(RESULT)]
    if code or not found:
        raise SystemExit(f"{side} run failed (exit {code}); its log ends:\n" + "\n".join(lines[-40:]))
    shutil.rmtree(out, ignore_errors=True)
    log.unlink()
    return {**json.loads(found[-1][len(RESULT) :]), "peak_kb": peak_kb}


def codedebug(model: str, steps: int, scratch: Path) -> tuple[list[dict[str, Any]], int, list[str]]:
    """Our trainer on CodeDebug-v0 (8 tasks x G=4, 3 turns): its metrics.jsonl rows, its peak RSS (kB) and
    the command."""
    from gym_swe.tasks.functions import load_function_tasks

    # Tasks whose buggy code ends quickly under the hidden tests (a few loop until the grading timeout), as
    # in bench/rollout.py: the env time is then the env's, not a timeout's.
    tasks = [t.task_id for t in load_function_tasks("bundled") if t.failure_symptoms == "incorrect output"]
    out = Path(tempfile.mkdtemp(prefix="codedebug-", dir=scratch))
    command = [sys.executable, "trainers/grpo.py", "--env", "CodeDebug-v0", "--model", model,
               "--generator", "hf", "--tasks_per_step", "8", "--group_size", "4", "--max_turns", "3",
               "--max_new_tokens", "96", "--steps", str(steps), "--learning_rate", "1e-4",
               "--eval_every", "0", "--log_with", "none",
               "--max_tokens_per_microbatch", "2048", "--train_task_ids", ",".join(tasks),
               "--output_dir", str(out), "--run_name", "run"]  # fmt: skip
    code, peak_kb = spawn(command, out.with_suffix(".log"))
    if code:
        tail = out.with_suffix(".log").read_text().splitlines()[-40:]
        raise SystemExit(f"CodeDebug run failed (exit {code}); its log ends:\n" + "\n".join(tail))
    rows = [json.loads(line) for line in (out / "run" / "metrics.jsonl").read_text().splitlines()]
    shutil.rmtree(out, ignore_errors=True)
    out.with_suffix(".log").unlink()
    shown = [*command[1:-6], "--train_task_ids", "<the 44 'incorrect output' tasks>"]
    return rows, peak_kb, shown


def summarize(runs: list[dict[str, Any]]) -> dict[str, float]:
    """Medians over every measured step of every run (each run's first step is warm-up), and of the runs'
    peaks. Step k's rollout and update lie in ``intervals[k - 1]``; the rest of it is logging and files."""

    def pooled(values: Callable[[dict[str, Any], int], float]) -> float:
        return statistics.median([values(run, k) for run in runs for k in range(1, len(run["tokens"]))])

    step = pooled(lambda run, k: run["intervals"][k - 1])
    return {
        "step_s": step,
        "steps_per_s": 1 / step,
        "tokens_per_s": pooled(lambda run, k: run["tokens"][k] / run["intervals"][k - 1]),
        "tokens_per_step": pooled(lambda run, k: run["tokens"][k]),
        "peak_mb": statistics.median([run["peak_kb"] for run in runs]) / 1024,
        "before_mb": statistics.median([run["rss_before_kb"] for run in runs]) / 1024,
        "rollout_s": pooled(lambda run, k: run["rollout"][k]),
        "generate_s": pooled(lambda run, k: run["generate"][k]),
        "update_s": pooled(lambda run, k: run["update"][k]),
        "rest_s": pooled(lambda run, k: run["intervals"][k - 1] - run["rollout"][k] - run["update"][k]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of both sides, alternating")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--codedebug-steps", type=int, default=2, help="0: skip the CodeDebug-v0 run")
    parser.add_argument("--tokenizer", default=str(TOKENIZER))
    parser.add_argument("--side", choices=("ours", "trl"), help="run one side in this process")
    parser.add_argument("--profile", action="store_true", help="with --side: under cProfile, print its top")
    parser.add_argument("--model", help="with --side: the model directory (default: build it)")
    parser.add_argument("--out", help="with --side: the run's output directory")
    args = parser.parse_args()

    if not args.model and not Path(args.tokenizer).is_dir():
        print(f"skipped: no Qwen2.5 tokenizer at {args.tokenizer} (it comes with ../shared/data)")
        return
    if args.side and args.model and args.out:  # a side as `measure` runs it: nothing to build or make
        run_side(args.side, args.model, args.steps, Path(args.out), args.profile)
        return
    from gym_swe.rollout.tiny import make_tiny_model

    scratch = Path(tempfile.mkdtemp(prefix="gym_swe-bench-trainer-"))
    print(f"# scratch: {scratch}", flush=True)
    built = scratch / "tiny-qwen2"
    model = args.model or str(make_tiny_model(args.tokenizer, built, architecture="qwen2"))
    try:
        if args.side:
            out = Path(args.out or tempfile.mkdtemp(prefix=f"{args.side}-", dir=scratch))
            run_side(args.side, model, args.steps, out, args.profile)
        else:
            compare(args, model, scratch)
    finally:
        shutil.rmtree(built, ignore_errors=True)


def compare(args: argparse.Namespace, model: str, scratch: Path) -> None:
    """Rounds of both sides, then CodeDebug-v0 through ours; the tables."""
    if args.rounds:
        runs: dict[str, list[dict[str, Any]]] = {"ours": [], "trl": []}
        for round_ in range(args.rounds):
            for side in ("ours", "trl") if round_ % 2 == 0 else ("trl", "ours"):
                started = time.perf_counter()
                run = measure(side, model, args.tokenizer, args.steps, scratch)
                runs[side].append(run)
                print(
                    f"# round {round_ + 1} {side}: {time.perf_counter() - started:.0f} s, median step "
                    f"{statistics.median(run['intervals']):.2f} s, peak RSS {run['peak_kb'] / 1024:.0f} MB",
                    flush=True,
                )
        figures = scratch / "single-turn.json"
        figures.write_text(json.dumps(runs))  # every step's figures, to look into
        print(f"\nsingle-turn, {args.rounds} rounds x {args.steps} steps (each run's first step left out; "
              f"every step's figures in {figures})\n")  # fmt: skip
        print_single_turn(summarize(runs["ours"]), summarize(runs["trl"]))
        # The two runs of a round are a minute apart: their ratio is the least moved by other load.
        paired = [
            statistics.median(trl["intervals"]) / statistics.median(ours["intervals"])
            for ours, trl in zip(runs["ours"], runs["trl"])
        ]
        print(
            f"\nsteps/s, ours / TRL, round by round: {', '.join(f'{r:.2f}x' for r in paired)} "
            f"(median {statistics.median(paired):.2f}x)"
        )
    if args.codedebug_steps:
        rows, peak_kb, command = codedebug(model, args.codedebug_steps, scratch)
        print(f"\nCodeDebug-v0 (peak RSS {peak_kb / 1024:.0f} MB): python {' '.join(command)}\n")
        print_codedebug(rows)


def print_single_turn(ours: dict[str, float], trl: dict[str, float]) -> None:
    print("| measure | ours | TRL | ours / TRL | better |")
    print("|---|---|---|---|---|")
    rows = [
        ("steps/s", "steps_per_s", "{:.3f}", "higher"),
        ("tokens/s (sampled)", "tokens_per_s", "{:.1f}", "higher"),
        ("peak RSS (MB)", "peak_mb", "{:.0f}", "lower"),
        ("RSS before the first step (MB)", "before_mb", "{:.0f}", "lower"),
        ("step (s)", "step_s", "{:.3f}", "lower"),
        ("rollout (s)", "rollout_s", "{:.3f}", "lower"),
        ("generation, in the rollout (s)", "generate_s", "{:.3f}", "lower"),
        ("update (s)", "update_s", "{:.3f}", "lower"),
        ("rest of the step: logging, files (s)", "rest_s", "{:.3f}", "lower"),
    ]
    for label, key, form, better in rows:
        ratio = ours[key] / trl[key] if trl[key] else float("nan")
        print(f"| {label} | {form.format(ours[key])} | {form.format(trl[key])} | {ratio:.2f}x | {better} |")
    print(f"| tokens sampled per step | {ours['tokens_per_step']:.0f} | {trl['tokens_per_step']:.0f} | | |")


def print_codedebug(rows: list[dict[str, Any]]) -> None:
    print(
        "| step | step s | rollout wall s | generation s | env s (summed) | update s | step - rollout s | "
        "sampled | reward |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        step, rollout = row["perf/step_seconds"], row["rollout/seconds"]
        sampled = row["perf/tokens_per_s"] * step  # tokens: the trainer logs their rate over the step
        print(
            f"| {row['step']} | {step:.1f} | {rollout:.1f} | {row['rollout/generate_seconds']:.1f} | "
            f"{row['rollout/env_seconds']:.1f} | {row['perf/update_seconds']:.1f} | {step - rollout:.1f} | "
            f"{sampled:.0f} | {row['reward/mean']:.2f} |"
        )


if __name__ == "__main__":
    main()
