"""A Harbor-v0 episode's reset and verifier time against a bundled SWEGym-v0 task's, on the same sandbox.

For each env, ``--episodes`` episodes of one task, interleaved (Harbor, SWE, Harbor, SWE, ...) so that a load
change on the machine hits both alike: ``reset`` timed, then one ``submit`` with no change, whose grade is
the verifier run (Harbor: the work dir carried into a fresh sandbox, tests copied in, test.sh; SWE: the diff
taken into a fresh sandbox, hidden tests written, the runner). The first episode of each (image build, seal
calibration, environment preparation) is run untimed. Prints the medians and their ratios (Harbor / SWE).

    python bench/harbor.py --sandbox docker --harbor-task go-textwrap --episodes 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

import gymnasium

import gym_swe  # noqa: F401  (registers the envs)

SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'


def timed_episode(env: gymnasium.Env[Any, Any], task_id: str) -> tuple[float, float, dict[str, Any]]:
    """(reset seconds, grade seconds, the grade) of one no-change episode."""
    started = time.perf_counter()
    env.reset(options={"task_id": task_id})
    reset = time.perf_counter() - started
    started = time.perf_counter()
    *_, info = env.step(SUBMIT)
    return reset, time.perf_counter() - started, info["grade"]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sandbox", choices=["docker", "local"], default="docker")
    parser.add_argument("--harbor-tasks", default="bundled", help="Harbor-v0 tasks= (a folder, or bundled)")
    parser.add_argument("--harbor-task", required=True, help="the Harbor task id (its folder's name)")
    parser.add_argument("--swe-task", default="gymswe__inikit-1", help="a bundled SWEGym-v0 task id")
    parser.add_argument("--episodes", type=int, default=5)
    args = parser.parse_args()
    if args.episodes < 1:
        parser.error("--episodes must be >= 1")
    harbor = gymnasium.make("Harbor-v0", tasks=args.harbor_tasks, sandbox=args.sandbox)
    swe = gymnasium.make("SWEGym-v0", sandbox=args.sandbox)
    pairs = ((harbor, args.harbor_task, "harbor"), (swe, args.swe_task, "swe"))
    times: dict[str, dict[str, list[float]]] = {name: {"reset": [], "grade": []} for *_, name in pairs}
    try:
        for env, task_id, _ in pairs:  # untimed: builds, preparation, the oracle's calibration
            timed_episode(env, task_id)
        for _ in range(args.episodes):
            for env, task_id, name in pairs:
                reset, grade_seconds, grade = timed_episode(env, task_id)
                if grade["error"]:
                    print(f"{name}: {grade['error']}", file=sys.stderr)
                    return 1
                times[name]["reset"].append(reset)
                times[name]["grade"].append(grade_seconds)
    finally:
        harbor.close()
        swe.close()
    medians = {name: {part: statistics.median(values) for part, values in parts.items()}
               for name, parts in times.items()}  # fmt: skip
    for part in ("reset", "grade"):
        ratio = medians["harbor"][part] / medians["swe"][part]
        print(f"{part}: Harbor {medians['harbor'][part]:.3f} s, SWE {medians['swe'][part]:.3f} s, "
              f"ratio {ratio:.2f}x (median of {args.episodes})")  # fmt: skip
    print(json.dumps({"sandbox": args.sandbox, "harbor_task": args.harbor_task, "swe_task": args.swe_task,
                      "medians": medians, "episodes": args.episodes}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
