"""`gym-swe validate`: every task of a source, graded with its fix (must resolve) and without (must not).

For SWEGym-v0 the fix is the gold patch and "without" the empty diff; for CodeDebug-v0 they are the
canonical solution and the buggy one. Each is graded exactly as an episode's final state would be.

A task that is not valid gets a ``problem``: what went wrong and what to do about it, in words (`advice`).
Each row also holds every test's outcome under both grades and the tail of each test run's log.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium

import gym_swe  # noqa: F401  (registers the envs)
from gym_swe.errors import (
    ConfigError,
    GradingError,
    GymSweError,
    SandboxError,
    TaskError,
    unknown_name,
)
from gym_swe.grading.base import Grade

ENVS = ("CodeDebug-v0", "SWEGym-v0")
LOG_TAIL_CHARS = 6000
EXCLUDE_HINT = (
    "What to do: if they cannot pass on this machine (they need the network, say), exclude them with "
    "`--exclude-test ID` or the record's exclude_tests field; otherwise read the log (-v, or --json) and fix "
    "the task's environment (its `environment` field: python, packages, install, env)."
)
# Errors a grade can meet, by a phrase of their message, with what to do. The message itself says what
# went wrong; this says how to get past it.
ADVICE = (
    ("not pytest node ids", "gym_swe grades repositories with pytest: leave this task out of the source."),
    ("test patch does not apply",
     "the record's test_patch must apply to base_commit: check both fields of the record."),
    ("no usable pytest",
     "the task's venv must hold pytest: list a pytest that works with its Python in environment.packages."),
    ("could not probe the task's python",
     "the venv's python does not start in the jail: check environment.python, run `gym-swe prepare` again."),
    ("found no test file",
     "the files of FAIL_TO_PASS are not in the checkout after the test patch: check the record's ids."),
    ("preparing", "fix the record's `environment` (packages, install, env) and run `gym-swe prepare` again."),
)  # fmt: skip


def advice(error: GymSweError | str) -> str:
    """What to do about ``error`` (a message or an exception), or a general hint when nothing is known."""
    message = str(error)
    for phrase, hint in ADVICE:
        if phrase in message:
            return hint
    if isinstance(error, SandboxError):
        return "the sandbox could not run: see the message above, or try --sandbox docker."
    if isinstance(error, TaskError):
        return "fix the record or the repository source as the message says, then run this again."
    if isinstance(error, GradingError):
        return "the grader could not grade this task: see the message; -v shows the log."
    return "see the message above; -v or --json shows each test's outcome and the log."


def with_advice(message: str, hint: str) -> str:
    """``message`` and then what to do (after a long message, such as a log tail, on a line of its own)."""
    message = message.rstrip().rstrip(".")
    return f"{message}\nWhat to do: {hint}" if "\n" in message else f"{message}. What to do: {hint}"


def _grades(env: Any, task: Any) -> tuple[Grade, Grade]:
    if env.spec.id == "SWEGym-v0":
        return env.grade_diff(task, task.patch), env.grade_diff(task, "")
    from gym_swe.grading.functions import grade_function

    grades = []
    for code in (task.fixed_code, task.buggy_code):
        with env.new_sandbox(task) as box:
            grades.append(grade_function(box, task, code, test_timeout=env.test_timeout,
                                         total_timeout=env.grade_timeout))  # fmt: skip
    return grades[0], grades[1]


def diagnose(fixed: Grade, unfixed: Grade) -> str | None:
    """Why a task is not valid, and what to do; None when it is."""
    if fixed.error or unfixed.error:
        message = fixed.error or unfixed.error or ""
        return with_advice(f"the grader failed: {message}", advice(message))
    if fixed.rejection:
        return (
            f"the fix was rejected: {fixed.rejection}. What to do: the gold patch must apply to the "
            "prepared checkout and leave pytest's reporting alone: check the record's patch and the log (-v)."
        )
    if not fixed.resolved:
        failed = [f"{test.name} ({test.outcome})" for test in fixed.tests if not test.passed]
        return (
            f"the fix does not resolve the task: {len(failed)} test(s) did not pass with it: "
            f"{', '.join(failed)}. {EXCLUDE_HINT}"
        )
    if unfixed.resolved:
        return (
            "the task is resolved without any change: every FAIL_TO_PASS test already passes at base_commit "
            "with the test patch, so no grade can tell a fix from none. What to do: check the record's "
            "FAIL_TO_PASS and test_patch (and, with exclusions, that a test the fix repairs is left)."
        )
    return None


def _outcomes(grade: Grade) -> dict[str, str]:
    return {test.name: test.outcome for test in grade.tests}


def validate(
    env_id: str,
    tasks: str = "bundled",
    sandbox: str = "local",
    workers: int = 2,
    repo_source: str | None = None,
    task_ids: Sequence[str] | None = None,
    exclude_tests: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """One row per task: whether the fix resolved it, the no-fix did not, why not, and each test's outcome
    under both (``tests``), with the tail of each run's log (``fix_log``, ``no_fix_log``)."""
    if env_id not in ENVS:
        raise ConfigError(unknown_name("env", env_id, ENVS))
    kwargs: dict[str, Any] = {"tasks": tasks, "sandbox": sandbox}
    if env_id == "SWEGym-v0":
        if repo_source:
            kwargs["repo_source"] = repo_source
        if exclude_tests:
            kwargs["exclude_tests"] = tuple(exclude_tests)
    elif exclude_tests:
        raise ConfigError(
            "exclude_tests applies to SWEGym-v0 tasks only; CodeDebug-v0 tasks have no test ids"
        )
    env = gymnasium.make(env_id, **kwargs).unwrapped
    selected = [env.tasks.get(task_id) for task_id in task_ids] if task_ids else list(env.tasks)

    def row(task: Any) -> dict[str, Any]:
        notes = {
            "dropped_ids": list(getattr(task, "dropped_ids", ())),
            "excluded_tests": list(getattr(task, "excluded_tests", ())),
        }
        try:
            fixed, unfixed = _grades(env, task)
        except GymSweError as error:
            return {"task_id": task.task_id, "ok": False, "error": str(error),
                    "problem": with_advice(str(error), advice(error)), **notes}  # fmt: skip
        problem = diagnose(fixed, unfixed)
        fix, no_fix = _outcomes(fixed), _outcomes(unfixed)
        return {
            "task_id": task.task_id,
            "ok": problem is None,
            "fix_resolved": fixed.resolved,
            "no_fix_resolved": unfixed.resolved,
            "fix_passed": f"{fixed.passed}/{fixed.total}",
            "no_fix_passed": f"{unfixed.passed}/{unfixed.total}",
            "error": fixed.error or unfixed.error,
            "problem": problem,
            "fix_failed": [name for name, outcome in fix.items() if outcome != "passed"],
            "tests": {name: {"fix": fix[name], "no_fix": no_fix.get(name, "not_run")} for name in fix},
            **notes,
            "fix_log": fixed.log[-LOG_TAIL_CHARS:],
            "no_fix_log": unfixed.log[-LOG_TAIL_CHARS:],
            "seconds": round(fixed.duration + unfixed.duration, 2),
        }

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(row, selected))


def print_table(rows: list[dict[str, Any]], verbose: bool = False) -> None:
    """The report: one line per task, then each invalid task's problem in full (with ``verbose``: every
    task's per-test outcomes and its log tails)."""
    width = max([28, *(len(row["task_id"]) for row in rows)])
    print(f"{'task':<{width}} {'result':<6} {'fix':>7} {'no fix':>7} {'s':>6}")
    for row in rows:
        result = "ok" if row["ok"] else "FAIL"
        print(f"{row['task_id']:<{width}} {result:<6} {row.get('fix_passed', '-'):>7} "
              f"{row.get('no_fix_passed', '-'):>7} {row.get('seconds', 0):>6}")  # fmt: skip
    for row in rows:
        lines = []
        if row.get("problem"):
            lines.append(row["problem"])
        if row.get("dropped_ids"):
            lines.append(f"dropped from the record (log fragments, not tests): {row['dropped_ids']}")
        if row.get("excluded_tests"):
            lines.append(f"excluded tests: {', '.join(row['excluded_tests'])}")
        if verbose and row.get("tests"):
            lines += [f"  {outcomes['fix']:>8} with the fix, {outcomes['no_fix']:>8} without: {name}"
                      for name, outcomes in row["tests"].items()]  # fmt: skip
            for which in ("fix_log", "no_fix_log"):
                if row[which].strip():
                    lines.append(f"--- {which.replace('_', ' ')} (tail) ---\n{row[which]}")
        if lines:
            print(f"\n{row['task_id']}:")
            for line in lines:
                print(textwrap.indent(line, "  "))
    failed = sum(not row["ok"] for row in rows)
    print(f"\n{len(rows) - failed}/{len(rows)} tasks valid" + (f", {failed} FAILED" if failed else ""))
