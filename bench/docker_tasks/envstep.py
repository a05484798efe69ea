"""Gold patch and no change through env.step() on docker, in a task image of another Python than the base
image's (django__django-15789: Python 3.9): ``python envstep.py TASKS MIRRORS ID [INTEGRITY]``."""

import base64
import json
import sys
from pathlib import Path

import gymnasium

import gym_swe  # noqa: F401
from tests.redteam.scripted import SUBMIT, bash, run_episode

tasks, mirrors, task_id = sys.argv[1:4]
integrity = sys.argv[4] if len(sys.argv) > 4 else "protected"
gold = next(json.loads(line) for line in Path(tasks).read_text().splitlines() if task_id in line)["patch"]
env = gymnasium.make("SWEGym-v0", tasks=tasks, repo_source=mirrors, sandbox="docker", image_naming="gym-swe",
                     integrity=integrity)  # fmt: skip
try:
    fix = base64.b64encode(gold.encode()).decode()
    env.reset(options={"task_id": task_id})
    shown, *_ = env.step(bash(f"python -V && echo {fix} | base64 -d | git apply && git status --short"))
    _, gold_reward, _, _, gold_info = env.step(SUBMIT)
    none_reward, _, _, none_info = run_episode(env, task_id, [])
    gold_grade, none_grade = gold_info["grade"], none_info["grade"]
    result = {"task": task_id, "integrity": integrity, "shown": str(shown)[-300:], "gold_reward": gold_reward,
              "gold_grade": gold_grade.get("integrity"), "gold_error": gold_grade.get("error"),
              "none_reward": none_reward, "none_error": none_grade.get("error")}  # fmt: skip
    print(json.dumps(result))
finally:
    env.close()
