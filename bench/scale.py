"""Collector throughput as episodes in flight grow, with envs in this process and through the Ray env pool.

    python bench/scale.py [--in-flight 1,2,4,8,16,32] [--steps 10] [--command "sleep 0.01"] [--rounds 2]

CodeDebug-v0 in local sandboxes, driven by `collect` with a scripted generator that costs next to nothing
(pre-tokenized turns: ``--steps - 1`` bash calls of ``--command``, then submit), so the envs' cost dominates:
reset (a jail and the task's files), the steps, grading in a fresh jail. For each number of episodes in
flight, local envs and the pool's envs (Ray actors on this machine, ``--envs-per-actor`` envs each) run in
alternation, ``--rounds`` times; we report episodes/s and env steps/s (medians), and the Ray overhead per env
step: the median time of ``env.step`` as the collector sees it through the pool over the same in-process
(target: <= 1.1x, about 1 ms over a ~10 ms step). Last, Ray's own floor under that ratio: a bare call to an
actor (ping), and a call that only sleeps as long as a local step.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from array import array
from pathlib import Path

import gymnasium
from timing import median_ms, timed  # bench/timing.py

import gym_swe  # noqa: F401
from gym_swe.rollout.chat import ChatFormat
from gym_swe.rollout.collector import collect
from gym_swe.rollout.generators.base import Sample, SamplingParams

# Tasks whose unfixed code grades in well under a second (some buggy functions loop until the grader's
# timeout, which would measure that timeout, not the envs).
TASKS = ["GymSwe/0", "GymSwe/1"]


class ScriptedTurns:
    """A generator with no model: ``steps - 1`` copies of one tool call, then submit. It counts the earlier
    turns by finding the call's exact ids in the prompt (the collector keeps sampled ids verbatim)."""

    name = "scripted"

    def __init__(self, tokenizer, command: str, steps: int) -> None:  # type: ignore[no-untyped-def]
        self.tokenizer, self.steps = tokenizer, steps
        stop = ChatFormat(tokenizer).end_of_turn_id()
        call = {"name": "bash", "arguments": {"command": command}}
        self.action = [*tokenizer.encode(f"<tool_call>\n{json.dumps(call)}\n</tool_call>",
                                         add_special_tokens=False), stop]  # fmt: skip
        submit = '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>'
        self.submit = [*tokenizer.encode(submit, add_special_tokens=False), stop]
        self.texts = {id(self.action): tokenizer.decode(self.action[:-1]), id(self.submit): submit}
        self.pattern = array("i", self.action).tobytes()

    def generate(self, prompts, params: SamplingParams) -> list[Sample]:  # type: ignore[no-untyped-def]
        samples = []
        for prompt in prompts:
            done = array("i", prompt).tobytes().count(self.pattern)
            ids = self.action if done < self.steps - 1 else self.submit
            samples.append(Sample(token_ids=list(ids), logprobs=[-0.5] * len(ids), text=self.texts[id(ids)],
                                  finish_reason="stop"))  # fmt: skip
        return samples

    def close(self) -> None:
        pass


def _sleep(actor, seconds: float) -> None:  # type: ignore[no-untyped-def]
    time.sleep(seconds)


def run(envs, generator, episodes: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    tasks = [TASKS[i % len(TASKS)] for i in range(episodes)]
    started = time.perf_counter()
    trajectories = collect(envs, generator, tasks, sampling=SamplingParams(max_tokens=256),
                           max_model_len=16384, check_rerender=False)  # fmt: skip
    wall = time.perf_counter() - started
    failed = [t.error for t in trajectories if t.failed or t.end_reason != "submitted"]
    if failed:
        raise SystemExit(f"{len(failed)} episode(s) did not end by submit: {failed[:3]}")
    steps = [turn.env_seconds for t in trajectories for turn in t.turns]
    step_ms = statistics.median(steps) * 1000
    return {"episodes/s": episodes / wall, "steps/s": len(steps) / wall, "step_ms": step_ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--in-flight", default="1,2,4,8,16,32", help="episodes at once, comma-separated")
    parser.add_argument("--episodes-per-env", type=int, default=2, help="episodes per env in a measurement")
    parser.add_argument("--steps", type=int, default=10, help="env steps per episode (the last is submit)")
    parser.add_argument("--command", default="sleep 0.01", help="the bash command of each step")
    parser.add_argument("--rounds", type=int, default=2, help="alternations of local and Ray per setting")
    parser.add_argument("--envs-per-actor", type=int, default=4)
    args = parser.parse_args()
    # The bench's own scratch (the tokenizer, Ray's session files), gone at the end; short, as Ray's socket
    # paths live under it.
    with tempfile.TemporaryDirectory(prefix="gym_swe-scale-", ignore_cleanup_errors=True) as scratch:
        measure(args, Path(scratch))


def measure(args: argparse.Namespace, scratch: Path) -> None:
    """Every setting of episodes in flight, local and through Ray; the table, then Ray's floor."""
    import ray
    import transformers

    from gym_swe.integrations.ray import RayEnvPool
    from gym_swe.rollout.tiny import make_tiny_tokenizer

    counts = [int(n) for n in args.in_flight.split(",")]
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(make_tiny_tokenizer(scratch / "tokenizer")))
    generator = ScriptedTurns(tokenizer, args.command, args.steps)

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(num_cpus=os.cpu_count(), _temp_dir=str(scratch / "ray"), include_dashboard=False,
             logging_level="WARNING")  # fmt: skip
    make = dict(max_turns=args.steps + 1, max_episode_steps=args.steps + 1)
    local = [gymnasium.make("CodeDebug-v0", **make) for _ in range(max(counts))]
    # One pool for every setting: n episodes in flight use its first n envs (so n <= envs_per_actor share
    # one actor). Actors reserve no CPU: they wait on their sandboxes, and the machine has few cores.
    pool = RayEnvPool("CodeDebug-v0", make, num_envs=max(counts), envs_per_actor=args.envs_per_actor,
                      num_cpus=0, health_check_s=0)  # fmt: skip
    run(local[:2], generator, 2), run(pool[:2], generator, 2)  # warm up: imports, first jails, page cache
    print(f"CodeDebug-v0, local sandboxes, {args.steps} steps an episode (`{args.command}`), "
          f"{os.cpu_count()} CPUs, Ray {ray.__version__}, {args.envs_per_actor} envs per actor")  # fmt: skip
    columns = ["in flight", "local episodes/s", "local steps/s", "Ray episodes/s", "Ray steps/s",
               "step ms local", "step ms Ray", "Ray per-step ratio", "added ms/step"]  # fmt: skip
    print("| " + " | ".join(columns) + " |\n|" + "---|" * len(columns))
    rows = []
    for count in counts:
        episodes = count * args.episodes_per_env
        measured: dict[str, list[dict[str, float]]] = {"local": [], "ray": []}
        for _ in range(args.rounds):
            measured["local"].append(run(local[:count], generator, episodes))
            measured["ray"].append(run(pool[:count], generator, episodes))
        row = {mode: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
               for mode, runs in measured.items()}  # fmt: skip
        ratio = row["ray"]["step_ms"] / row["local"]["step_ms"]
        rows.append((count, row, ratio))
        here, there = row["local"], row["ray"]
        print(f"| {count} | {here['episodes/s']:.2f} | {here['steps/s']:.1f} | {there['episodes/s']:.2f} | "
              f"{there['steps/s']:.1f} | {here['step_ms']:.1f} | {there['step_ms']:.1f} | {ratio:.2f}x | "
              f"{there['step_ms'] - here['step_ms']:+.1f} |",
              flush=True)  # fmt: skip
    # The floor under the per-step overhead: one call to an actor and back, doing nothing.
    actor = pool.actors[0]
    pings = timed(lambda: ray.get(actor.ping.remote()), 300)
    print(f"A bare call to an env actor and back (ping): {median_ms(pings):.2f} ms (median of 300)")
    # Ray's own floor for a call as long as a step: one that sleeps the local step's median in the actor.
    # A call that blocks for milliseconds costs more than a ping (the ends go idle in between), and no pool
    # can do better than this.
    step_s = rows[0][1]["local"]["step_ms"] / 1000
    sleeps = timed(lambda: ray.get(actor.__ray_call__.remote(_sleep, step_s)), 100)
    floor = median_ms(sleeps) - step_s * 1000
    best = (step_s * 1000 + floor) / (step_s * 1000)
    print(f"A call that sleeps {step_s * 1000:.1f} ms in an env actor: +{floor:.2f} ms over the sleep "
          f"(median of 100), a per-step ratio of {best:.2f}x at best")  # fmt: skip
    for env in local:
        env.close()
    pool.close()
    ray.shutdown()
    worst = max(ratio for _, _, ratio in rows)
    print(f"Ray overhead per env step, worst setting: {worst:.2f}x (target <= 1.10x: "
          f"{'met' if worst <= 1.10 else 'not met'})")  # fmt: skip


if __name__ == "__main__":
    main()
