"""Multi-turn GRPO on CodeDebug-v0: `trainers/grpo.py` against TRL's `GRPOTrainer` with gym_swe's
`environment_factory` adapter, the same run, each in a process of its own.

    python bench/trl_multiturn.py [--rounds 3] [--steps 3] [--model tool-caller|random|PATH]

Both sides: 8 bundled tasks x G=4 completions per step, up to 3 turns, the same tiny model, temperature 1,
AdamW at lr 1e-4, fp32, local sandboxes, generation with transformers on the trainer's model (ours:
``--generator hf``; TRL: ``use_vllm=False``), at most 48 new tokens per turn, and room for whole episodes
(TRL's ``max_completion_length`` counts tool results too). Ours plays the 32 episodes through its collector
(resets, tool calls and grading in parallel threads, one batched ``generate`` per turn); TRL resets the envs
and runs the tools one rollout after the other, then asks each env for its reward (which grades it). TRL's
loop samples a reply after every tool result, so with ``max_tool_calling_iterations`` 3 it generates once
more per episode than ours (4 replies for 3 env steps; the 4th reply's call is not run).

The model (``--model tool-caller``, the default) is `make_tiny_tool_caller`'s: the tiny random model of the
TRL tests taught to answer every turn with one bash tool call, on the tool results and the tokens both sides
really feed it, so that episodes on both sides play all their turns; ``random`` is the untaught model (TRL
then ends each rollout after one turn, since no tool call parses).
Per side: steps/s is 1 / the median step time over every run (each run's first step left out as warm-up),
and round by round (the two runs of a round are the least apart in time); env steps per episode are counted
from the envs (TRL ends an episode at the first turn without a tool call, gym_swe's env tells the model and
goes on to ``max_turns``), and env steps/s is the batch's env steps over the step time. The models are built
in ``--models`` (default: a temporary directory; give one to teach the tool caller once, a minute or two, and
reuse it), the runs go in a temporary directory, gone at the end.
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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TASKS = 8
GROUP = 4
TURNS = 3
MAX_NEW_TOKENS = 48  # per turn, both sides (TRL: generation_kwargs' max_new_tokens)
# TRL's max_completion_length counts the replies and the tool results alike (a traceback here is up to 214
# tokens): room for whole episodes, as ours has under its max_model_len (4096, prompt included).
COMPLETION_ROOM = 2048
RESULT = "BENCH_RESULT "


def bench_tasks() -> list[str]:
    """8 bundled tasks whose buggy code fails quickly under the hidden tests (as bench/trainer.py picks)."""
    from gym_swe.tasks.functions import load_function_tasks

    tasks = [t.task_id for t in load_function_tasks("bundled") if t.failure_symptoms == "incorrect output"]
    return tasks[:TASKS]


def spawn(command: list[str], log: Path) -> int:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TOKENIZERS_PARALLELISM": "false",
           "TRL_EXPERIMENTAL_SILENCE": "1"}  # fmt: skip
    with log.open("w") as handle:
        return subprocess.run(command, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT, env=env).returncode


def run_ours(model: str, steps: int, out: Path) -> dict[str, Any]:
    """trainers/grpo.py as a user runs it; step times and turns from its metrics.jsonl."""
    command = [sys.executable, "trainers/grpo.py", "--env", "CodeDebug-v0", "--model", model,
               "--generator", "hf", "--tasks_per_step", str(TASKS), "--group_size", str(GROUP),
               "--max_turns", str(TURNS), "--max_new_tokens", str(MAX_NEW_TOKENS), "--steps", str(steps),
               "--learning_rate", "1e-4", "--temperature", "1.0", "--eval_every", "0", "--log_with", "none",
               "--max_tokens_per_microbatch", "4096", "--train_task_ids", ",".join(bench_tasks()),
               "--seed", "0", "--output_dir", str(out), "--run_name", "run"]  # fmt: skip
    log = out.with_suffix(".log")
    if spawn(command, log):
        raise SystemExit("ours failed; its log ends:\n" + "\n".join(log.read_text().splitlines()[-40:]))
    rows = [json.loads(line) for line in (out / "run" / "metrics.jsonl").read_text().splitlines()]
    return {
        "step_seconds": [row["perf/step_seconds"] for row in rows],
        "turns": [row["rollout/turns"] for row in rows],
        "rollout_seconds": [row["rollout/seconds"] for row in rows],
    }


def run_trl(model: str, steps: int, out: Path) -> dict[str, Any]:
    """TRL's GRPOTrainer with the environment_factory adapter, in this process; step ends by a callback."""
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from gym_swe.integrations.trl import trl_spec

    ends: list[float] = []
    turns: list[float] = []

    class StepEnds(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            ends.append(time.perf_counter())
            pool = trainer._environment_pool[None]
            turns.append(statistics.mean(env.turns for env in pool))

    spec = trl_spec("CodeDebug-v0", task_ids=bench_tasks(), max_turns=TURNS)
    config = GRPOConfig(
        output_dir=str(out),
        per_device_train_batch_size=TASKS * GROUP,
        gradient_accumulation_steps=1,
        num_generations=GROUP,
        max_completion_length=COMPLETION_ROOM,
        generation_kwargs={"max_new_tokens": MAX_NEW_TOKENS},
        max_tool_calling_iterations=TURNS,
        temperature=1.0,
        learning_rate=1e-4,
        lr_scheduler_type="constant",
        max_steps=steps,
        use_vllm=False,
        report_to="none",
        bf16=False,
        gradient_checkpointing=False,
        save_strategy="no",
        logging_steps=1,
        seed=0,
    )
    trainer = GRPOTrainer(model=model, args=config, callbacks=[StepEnds()], **spec.trainer_kwargs())
    started = time.perf_counter()
    trainer.train()
    marks = [started, *ends]
    return {"step_seconds": [b - a for a, b in itertools.pairwise(marks)], "turns": turns}


def measure(side: str, model: str, steps: int, scratch: Path) -> dict[str, Any]:
    out = Path(tempfile.mkdtemp(prefix=f"{side}-", dir=scratch))
    try:
        if side == "ours":
            return run_ours(model, steps, out)
        log = out.with_suffix(".log")
        command = [sys.executable, __file__, "--side", "trl", "--model", model, "--steps", str(steps),
                   "--out", str(out)]  # fmt: skip
        code = spawn(command, log)
        found = [line for line in log.read_text().splitlines() if line.startswith(RESULT)]
        if code or not found:
            raise SystemExit("TRL failed; its log ends:\n" + "\n".join(log.read_text().splitlines()[-40:]))
        return json.loads(found[-1][len(RESULT) :])
    finally:
        shutil.rmtree(out, ignore_errors=True)
        out.with_suffix(".log").unlink(missing_ok=True)


def resolve_model(name: str, models: Path) -> str:
    """The model ``--model`` names: the tiny tool caller or the untaught tiny model (built in ``models``), or
    a path."""
    from gym_swe.integrations.trl import trl_tools
    from gym_swe.rollout.tiny import make_tiny_tool_caller, make_tiny_trl_model

    if name == "tool-caller":  # taught in the prompts both sides render: gym_swe's and TRL's
        return str(make_tiny_tool_caller(models, other_tools=[trl_tools("CodeDebug-v0")]))
    if name == "random":
        return str(make_tiny_trl_model(models))
    return name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of both sides, alternating order")
    parser.add_argument("--steps", type=int, default=3, help="steps per run; the first is warm-up")
    parser.add_argument("--model", default="tool-caller", help="tool-caller (default), random, or a path")
    parser.add_argument("--models", help="where tiny models are built, once (default: a temporary directory)")
    parser.add_argument("--side", choices=("trl",), help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.steps < 2:
        parser.error("--steps must be >= 2: the first step is warm-up")
    if args.side:
        print(RESULT + json.dumps(run_trl(args.model, args.steps, Path(args.out))), flush=True)
        return
    with tempfile.TemporaryDirectory(prefix="gym_swe-bench-trl-") as scratch:
        model = resolve_model(args.model, Path(args.models) if args.models else Path(scratch) / "models")
        compare(args, model, Path(scratch))


def compare(args: argparse.Namespace, model: str, scratch: Path) -> None:
    """Rounds of both sides, alternating which goes first; the table."""
    runs: dict[str, list[dict[str, Any]]] = {"ours": [], "trl": []}
    for round_ in range(args.rounds):
        for side in ("ours", "trl") if round_ % 2 == 0 else ("trl", "ours"):
            started = time.perf_counter()
            run = measure(side, model, args.steps, scratch)
            runs[side].append(run)
            print(f"# round {round_ + 1} {side}: {time.perf_counter() - started:.0f} s, step seconds "
                  f"{[round(s, 1) for s in run['step_seconds']]}", flush=True)  # fmt: skip
    print(f"\nCodeDebug-v0, {TASKS} tasks x G={GROUP}, up to {TURNS} turns, model {args.model}, "
          f"{args.rounds} rounds x {args.steps} steps per side (each run's first left out)\n")  # fmt: skip

    def pooled(side: str, key: str) -> float:
        return statistics.median(value for run in runs[side] for value in run[key][1:])

    step = {side: pooled(side, "step_seconds") for side in runs}
    turns = {side: pooled(side, "turns") for side in runs}
    env_rate = {side: TASKS * GROUP * turns[side] / step[side] for side in runs}
    print("| measure | trainers/grpo.py | TRL GRPOTrainer + environment_factory | ours / TRL |")
    print("|---|---|---|---|")
    print(f"| step (s) | {step['ours']:.1f} | {step['trl']:.1f} | |")
    print(f"| steps/s | {1 / step['ours']:.4f} | {1 / step['trl']:.4f} | {step['trl'] / step['ours']:.2f}x |")
    print(f"| env steps per episode | {turns['ours']:.2f} | {turns['trl']:.2f} | |")
    print(f"| env steps/s | {env_rate['ours']:.2f} | {env_rate['trl']:.2f} | "
          f"{env_rate['ours'] / env_rate['trl']:.2f}x |")  # fmt: skip
    # The two runs of a round are minutes apart: their ratio is the least moved by other load.
    paired = [statistics.median(trl["step_seconds"][1:]) / statistics.median(ours["step_seconds"][1:])
              for ours, trl in zip(runs["ours"], runs["trl"])]  # fmt: skip
    print(f"\nsteps/s, ours / TRL, round by round: {', '.join(f'{r:.2f}x' for r in paired)} "
          f"(median {statistics.median(paired):.2f}x; target >= 2x)")  # fmt: skip


if __name__ == "__main__":
    main()
