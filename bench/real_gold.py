"""Gold patch and no change through ``env.step()`` on real SWE-bench instances: a JSON line per episode pair.

For each task and each ``--integrity`` asked, two episodes of ``SWEGym-v0``: the first applies the record's
gold ``patch`` with one ``bash`` tool call (``git apply``) and submits, the second submits with no change.
The gold patch should earn 1.0 and no change 0.0; under ``integrity="protected"`` (the default) a task whose
grade is not protected is "not graded" (0.0 with ``grade.error``), which the line shows.

    python bench/real_gold.py --tasks SWE-bench_Lite-test.parquet --repo-source mirrors \\
        --task-id pallets__flask-4992 --integrity protected --integrity any

Each line: task, sandbox, integrity asked, gold reward / grade integrity / chance / error / rejection,
no-change reward / error / rejection, seconds. (Issue 34; generalises bench/django_sdist/envstep.py.)
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import time
from pathlib import Path

import gymnasium

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.redteam.scripted, from a checkout

import gym_swe  # noqa: F401
from tests.redteam.scripted import bash, run_episode


def gold_action(patch: str) -> str:
    """One bash turn that applies ``patch`` in /testbed (base64, so any text survives the shell)."""
    encoded = base64.b64encode(patch.encode()).decode()
    return bash(f"echo {encoded} | base64 -d | git apply && git status --short")


def pair(env: gymnasium.Env, task_id: str) -> dict[str, object]:
    """The gold episode and the no-change episode of ``task_id`` in ``env``, as one result row."""
    patch = env.unwrapped.tasks.get(task_id).patch
    started = time.monotonic()
    gold_reward, _, _, gold_info = run_episode(env, task_id, [gold_action(patch)])
    gold = gold_info.get("grade") or {}
    none_reward, _, _, none_info = run_episode(env, task_id, [])
    none = none_info.get("grade") or {}
    return {
        "gold_reward": gold_reward,
        "gold_integrity": gold.get("integrity"),
        "gold_chance": gold.get("chance"),
        "gold_error": gold.get("error") or gold_info.get("error"),
        "gold_rejection": gold.get("rejection"),
        "none_reward": none_reward,
        "none_integrity": none.get("integrity"),
        "none_error": none.get("error") or none_info.get("error"),
        "none_rejection": none.get("rejection"),
        "seconds": round(time.monotonic() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", required=True, help="a .jsonl or .parquet of records, or a source")
    parser.add_argument("--repo-source", help="the mirrors directory (local sandbox)")
    parser.add_argument("--task-id", action="append", required=True, help="a task to play (repeatable)")
    parser.add_argument("--sandbox", choices=("local", "docker"), default="local")
    parser.add_argument(
        "--integrity", action="append", choices=("protected", "sealed", "any"),
        help="what the env pays (repeatable: each gets its own env and episodes); default protected",
    )  # fmt: skip
    parser.add_argument("--image-naming", default=None, help="docker: the image naming (e.g. gym-swe)")
    args = parser.parse_args(argv)
    failed = 0
    for integrity in args.integrity or ["protected"]:
        options: dict[str, object] = {"integrity": integrity, "sandbox": args.sandbox}
        if args.repo_source:
            options["repo_source"] = args.repo_source
        if args.image_naming:
            options["image_naming"] = args.image_naming
        env = gymnasium.make("SWEGym-v0", tasks=args.tasks, **options)
        try:
            for task_id in args.task_id:
                row: dict[str, object] = {"task": task_id, "sandbox": args.sandbox, "integrity": integrity}
                try:
                    row.update(pair(env, task_id))
                except Exception as error:  # a crash is a row too, and the next task still runs
                    row["crash"] = f"{type(error).__name__}: {error}"
                failed += row.get("gold_reward") != 1.0 or row.get("none_reward") != 0.0
                print(json.dumps(row), flush=True)
        finally:
            env.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
