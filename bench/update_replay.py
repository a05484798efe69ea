"""The trainer's update alone, one source tree against another: a recorded step's trajectories replayed
through each tree's `grpo.update` in this one process, the trees alternating, timed in CPU time.

    python bench/update_replay.py --trajectories RUN/trajectories/step_0.jsonl --trees OLD_TREE NEW_TREE

A tree is a checkout of this repository (a `git worktree add --detach DIR COMMIT` of the code to compare);
its ``trainers/`` modules are imported under their own names once per tree and kept apart. Each update starts
from the same weights: the bench's tiny Qwen2 (`make_tiny_model`, as in bench/trainer.py, over the Qwen2.5
tokenizer) loaded afresh, with a fresh AdamW. The flags are bench/trainer.py's CodeDebug-v0 ones
(``--max_tokens_per_microbatch 2048``, lr 1e-4, temperature 1, no KL, no pass for old log-probabilities);
the trajectories' advantages are set to -1 and +1 in turn (a recorded group's rewards are often all equal,
which would leave nothing to learn).

The trajectories: the ``trajectories/step_0.jsonl`` of a run, e.g. bench/trainer.py's CodeDebug command
(printed in its table) with ``--steps 1`` and an ``--output_dir`` of your own.

Measured per update: CPU time (``time.process_time``: all of the process's threads; steadier than wall time
on a shared machine, where other load stretches wall time but not the CPU time spent), wall time, and the
peak RSS reached during it (VmHWM, reset before each update through /proc/self/clear_refs). Use
``OMP_NUM_THREADS=1`` for the steadiest CPU time (threads waiting at a barrier count as busy).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = ROOT.parent / "shared" / "data" / "tokenizers" / "qwen2.5-instruct"
MODULES = ("grpo", "grpo_batching", "grpo_config", "grpo_run_dir", "grpo_setup")
"""A tree's trainer modules, imported per tree."""


def tree_modules(tree: Path) -> types.SimpleNamespace:
    """``tree``'s trainer modules, imported fresh (those of a tree imported before are set aside)."""
    for name in MODULES:
        sys.modules.pop(name, None)
    sys.path.insert(0, str(tree / "trainers"))
    try:
        import grpo
        import grpo_batching
        import grpo_setup
    finally:
        sys.path.remove(str(tree / "trainers"))
    return types.SimpleNamespace(grpo=grpo, batching=grpo_batching, setup=grpo_setup)


def peak_rss_reset() -> None:
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # resets VmHWM to the current RSS


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def replay(code: types.SimpleNamespace, model_dir: str, records: list[dict[str, Any]]) -> dict[str, float]:
    """One update of ``records`` through ``code``'s `grpo.update`, from the model's initial weights."""
    import torch
    from accelerate import Accelerator

    flags = ["--env", "CodeDebug-v0", "--model", model_dir, "--max_tokens_per_microbatch", "2048",
             "--learning_rate", "1e-4", "--max_turns", "3", "--max_new_tokens", "96", "--tasks_per_step", "8",
             "--group_size", "4", "--log_with", "none"]  # fmt: skip
    args = code.grpo.parse_args(flags)
    accelerator = Accelerator()
    model, _ = code.setup.load_policy(args)
    model, optimizer, scheduler = accelerator.prepare(model, *code.setup.make_optimizer(args, model))
    rows = [
        code.batching.Row(
            torch.tensor(record["token_ids"]),
            torch.tensor(record["loss_mask"], dtype=torch.float32),
            torch.tensor([lp or 0.0 for lp in record["logprobs"]]),
            1.0 if number % 2 else -1.0,
        )
        for number, record in enumerate(records)
    ]
    budget = max(sum(record["loss_mask"]) for record in records)
    peak_rss_reset()
    wall, cpu = time.perf_counter(), time.process_time()
    metrics = code.grpo.update(args, accelerator, model, None, optimizer, scheduler, rows, budget)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"cpu_s": cpu, "wall_s": wall, "peak_rss_mb": peak_rss_mb(), "entropy": metrics["loss/entropy"],
            "loss": metrics["loss/policy"], "load": os.getloadavg()[0]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trajectories", required=True, help="a run's trajectories/step_N.jsonl")
    parser.add_argument("--trees", nargs="+", required=True, help="checkouts to compare, the first the base")
    parser.add_argument("--rounds", type=int, default=3, help="updates per tree, the trees alternating")
    parser.add_argument("--tokenizer", default=str(TOKENIZER))
    args = parser.parse_args()

    from gym_swe.rollout.tiny import make_tiny_model

    records = [json.loads(line) for line in Path(args.trajectories).read_text().splitlines() if line.strip()]
    trees = [Path(tree).resolve() for tree in args.trees]
    codes = [tree_modules(tree) for tree in trees]
    scored = sum(sum(record["loss_mask"]) for record in records)
    tokens = sum(len(record["token_ids"]) for record in records)
    print(f"# {len(records)} trajectories, {tokens} tokens, {scored} sampled; threads: "
          f"{__import__('torch').get_num_threads()}", flush=True)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="gym_swe-update-replay-") as scratch:
        model_dir = str(make_tiny_model(args.tokenizer, Path(scratch) / "tiny-qwen2", architecture="qwen2"))
        replay(codes[-1], model_dir, records[:1])  # warm-up: first-call costs out of the figures
        results: dict[Path, list[dict[str, float]]] = {tree: [] for tree in trees}
        for number in range(args.rounds):
            order = list(zip(trees, codes))
            for tree, code in order if number % 2 == 0 else order[::-1]:
                result = replay(code, model_dir, records)
                results[tree].append(result)
                print(json.dumps({"tree": str(tree), "round": number, **result}), flush=True)
    base = statistics.median(r["cpu_s"] for r in results[trees[0]])
    print("\n| tree | CPU s per update (median) | / the first | wall s (median) | peak RSS MB (median) |")
    print("|---|---|---|---|---|")
    for tree in trees:
        cpu = statistics.median(r["cpu_s"] for r in results[tree])
        wall = statistics.median(r["wall_s"] for r in results[tree])
        peak = statistics.median(r["peak_rss_mb"] for r in results[tree])
        print(f"| {tree} | {cpu:.2f} | {cpu / base:.2f}x | {wall:.2f} | {peak:.0f} |")


if __name__ == "__main__":
    main()
