"""Gold patch and no change through env.step() on a real sympy instance (bench/real_instances_sympy.md).

    python bench/sympy_gold.py TASKS REPO_SOURCE TASK_ID [local|docker] [protected|any|sealed]

One episode applies the record's gold patch with one ``bash`` call and submits; a second submits with no
change. Prints one JSON line: the rewards, the grade's integrity and chance, and any error. docker grades in
gym_swe's task image (``image_naming="gym-swe"``: ``gym-swe images build --tasks TASKS --task-id ID`` first).
"""

import base64
import json
import sys
from pathlib import Path

import gymnasium

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gym_swe  # noqa: F401
from gym_swe.tasks.swe import load_swe_tasks
from tests.redteam.scripted import bash, run_episode


def main(
    tasks: str, repo_source: str, task_id: str, backend: str = "local", integrity: str = "protected"
) -> None:
    gold = next(task for task in load_swe_tasks(tasks) if task.instance_id == task_id).patch
    extra = {"image_naming": "gym-swe"} if backend == "docker" else {}
    env = gymnasium.make(
        "SWEGym-v0", tasks=tasks, repo_source=repo_source, sandbox=backend, integrity=integrity, **extra
    )
    try:
        fix = base64.b64encode(gold.encode()).decode()
        gold_reward, _, _, gold_info = run_episode(
            env, task_id, [bash(f"echo {fix} | base64 -d | git apply && git status --short")]
        )
        none_reward, _, _, none_info = run_episode(env, task_id, [])
    finally:
        env.close()
    gold_grade, none_grade = gold_info["grade"], none_info["grade"]
    print(
        json.dumps(
            {
                "task": task_id,
                "backend": backend,
                "integrity_setting": integrity,
                "gold_reward": gold_reward,
                "gold_integrity": gold_grade.get("integrity"),
                "gold_chance": gold_grade.get("chance"),
                "gold_error": gold_grade.get("error"),
                "none_reward": none_reward,
                "none_error": none_grade.get("error"),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
