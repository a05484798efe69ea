"""Gold patch and no change through env.step() on real Django instances (default integrity), local and
docker."""

import base64
import json
import sys

sys.path.insert(0, "/work/wt-34r")
from pathlib import Path

import gymnasium

import gym_swe  # noqa
from tests.redteam.scripted import bash, run_episode

cases = [
    ("lite.jsonl", "django__django-16873", "local", {}),
    ("lite.jsonl", "django__django-16873", "docker", {"image_naming": "gym-swe"}),
    ("verified.jsonl", "django__django-17087", "local", {}),
]
for tasks, tid, backend, extra in cases:
    gold = next(json.loads(line) for line in Path(tasks).read_text().splitlines() if tid in line)["patch"]
    env = gymnasium.make("SWEGym-v0", tasks=tasks, repo_source="mirrors", sandbox=backend, **extra)
    try:
        fix = base64.b64encode(gold.encode()).decode()
        r1, t1, _, i1 = run_episode(
            env, tid, [bash(f"echo {fix} | base64 -d | git apply && git status --short")]
        )
        g1 = i1["grade"]
        r0, t0, _, i0 = run_episode(env, tid, [])
        g0 = i0["grade"]
        print(
            json.dumps(
                {
                    "task": tid,
                    "backend": backend,
                    "gold_reward": r1,
                    "gold_integrity": g1.get("integrity"),
                    "gold_error": g1.get("error"),
                    "none_reward": r0,
                    "none_error": g0.get("error"),
                }
            ),
            flush=True,
        )
    finally:
        env.close()
