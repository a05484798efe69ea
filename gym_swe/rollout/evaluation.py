"""Scores over collected trajectories: pass@k (the unbiased estimator), the mean reward and the mean share of
tests passed, per task and overall, and why episodes failed.

A failed episode ended on an error (the generator, the env or the sandbox) instead of by ``submit`` or a
limit. It stays in ``n`` as a sample that did not resolve its task, so failures lower pass@k rather than hide.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from math import comb
from typing import Any

from gym_swe.rollout.trajectory import Trajectory


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of ``k`` samples, drawn without replacement from ``n`` of which ``c``
    are correct, is correct: ``1 - C(n - c, k) / C(n, k)`` (Chen et al., 2021)."""
    if not 0 <= c <= n or k < 1:
        raise ValueError(f"pass_at_k needs 0 <= c <= n and k >= 1, got n={n}, c={c}, k={k}")
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples per task, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def tests_passed(trajectory: Trajectory) -> float:
    """The share of the grade's tests that passed: what ``reward="fraction"`` pays (0 without a grade or
    tests, as for a failed episode)."""
    grade = trajectory.grade or {}
    total = grade.get("total") or 0
    return float(grade.get("passed") or 0) / total if total else 0.0


def summarize(trajectories: Iterable[Trajectory], ks: Sequence[int] = (1,)) -> dict[str, Any]:
    """Per task: samples, resolved, failed runs, the mean reward, the mean share of tests passed and pass@k;
    overall: the means over tasks.

    pass@k of a task with fewer than k samples is not defined, so it is never counted (as 0 or otherwise): the
    task's row has no ``pass@k``, and the overall ``pass@k`` is left out unless every task has one; the tasks
    short of samples are listed in ``short_of[k]``."""
    by_task: dict[str, list[Trajectory]] = {}
    for trajectory in trajectories:
        by_task.setdefault(trajectory.task_id, []).append(trajectory)
    tasks = []
    for task_id, group in by_task.items():
        n, c = len(group), sum(t.resolved for t in group)
        row: dict[str, Any] = {
            "task_id": task_id,
            "n": n,
            "resolved": c,
            "failed": sum(t.failed for t in group),
            "mean_reward": sum(t.reward for t in group) / n,
            "tests_passed": sum(tests_passed(t) for t in group) / n,
        }
        row.update({f"pass@{k}": pass_at_k(n, c, k) for k in ks if k <= n})
        tasks.append(row)
    short_of = {k: [row["task_id"] for row in tasks if row["n"] < k] for k in ks}
    overall: dict[str, float] = {}
    if tasks:
        overall = {
            f"pass@{k}": sum(row[f"pass@{k}"] for row in tasks) / len(tasks) for k in ks if not short_of[k]
        }
        overall["mean_reward"] = sum(row["mean_reward"] for row in tasks) / len(tasks)
        overall["tests_passed"] = sum(row["tests_passed"] for row in tasks) / len(tasks)
    return {
        "tasks": tasks,
        "overall": overall,
        "episodes": sum(row["n"] for row in tasks),
        "short_of": {k: ids for k, ids in short_of.items() if ids},
    }


def failure_reasons(
    trajectories: Iterable[Trajectory], limit: int = 3, width: int = 300
) -> list[tuple[str, int]]:
    """The first ``limit`` distinct reasons episodes failed for, each on one line of at most ``width``
    characters, with how many episodes failed for it; in the order they first came."""
    reasons = Counter(_one_line(t.error, width) for t in trajectories if t.error is not None)
    return list(reasons.items())[:limit]


def _one_line(text: str, width: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 3] + "..."
