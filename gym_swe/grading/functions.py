"""Grading a function-level task: the agent's final file against the hidden tests, in a fresh sandbox.

The sandbox given here must be fresh (the agent never ran anything in it). The runner (function_runner.py)
compares results as data in a process the solution cannot reach; see its docstring for why.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from gym_swe.errors import GymSweError
from gym_swe.grading.base import OUTCOMES, Grade, TestResult, reward_for
from gym_swe.sandbox.base import Sandbox
from gym_swe.tasks.functions import FunctionTask

RUNNER_SOURCE = Path(__file__).with_name("function_runner.py").read_bytes()
GRADER_DIR = "/tmp/gym_swe_grader"
REPORT_PREFIX = "GYM_SWE_REPORT "
MAX_LOG_BYTES = 64 * 1024


def grade_function(
    sandbox: Sandbox,
    task: FunctionTask,
    solution_code: str | bytes,
    reward: str = "binary",
    test_timeout: float = 5.0,
    total_timeout: float = 60.0,
    solution_name: str = "solution.py",
) -> Grade:
    """Run ``task``'s hidden tests against ``solution_code`` (text, or the file's bytes as they are) in the
    fresh ``sandbox``."""
    start = time.monotonic()
    solution_path = f"{sandbox.workdir.rstrip('/')}/{solution_name}"
    config = {
        "solution": solution_path,
        "entry_point": task.entry_point,
        "reference": task.reference,
        "test": task.test,
        "test_timeout": test_timeout,
        "total_timeout": total_timeout,
        "log": f"{GRADER_DIR}/log.txt",
    }
    sandbox.write_file(solution_path, solution_code)
    sandbox.write_file(f"{GRADER_DIR}/runner.py", RUNNER_SOURCE)
    sandbox.write_file(f"{GRADER_DIR}/config.json", json.dumps(config))
    # exec: no shell stays behind holding the runner's stdout, where the solution could write a report.
    # -I: the runner's own directory, which the solution's process can write, is not on its import path.
    run = sandbox.exec(
        f"cd {GRADER_DIR} && exec python3 -I -B runner.py config.json",
        timeout=total_timeout + 30,
        env={"TMPDIR": GRADER_DIR},
    )
    try:
        log_text = sandbox.exec(f"tail -c {MAX_LOG_BYTES} {GRADER_DIR}/log.txt", timeout=30).stdout
    except GymSweError:
        log_text = ""
    log = (log_text + run.stderr)[-20_000:]
    report = _report(run.stdout)
    if report is None:
        # The runner is gym_swe's; the only other code in this fresh sandbox is the solution, which shares
        # its uid: a runner that never reported was stopped by the solution (or ran out of time on it).
        reason = "timed out" if run.timed_out else f"exited with {run.exit_code}"
        return _failed(f"the grading run {reason} without a report", log, start, rejection=True)
    if report.get("error"):
        return _failed(f"grading failed: {report['error']}", log, start)
    try:
        tests = tuple(
            TestResult(str(t["name"]), str(t["outcome"]), str(t.get("message", ""))) for t in report["tests"]
        )
    except (KeyError, TypeError):
        return _failed("the grading run's report is malformed", log, start, rejection=True)
    if any(test.outcome not in OUTCOMES for test in tests):
        return _failed("the grading run's report is malformed", log, start, rejection=True)
    if not tests:
        return _failed("the hidden tests hold no assert to grade", log, start)
    resolved = all(test.passed for test in tests)
    return Grade(
        tests=tests,
        resolved=resolved,
        reward=reward_for(resolved, tests, reward),
        log=log,
        duration=time.monotonic() - start,
    )


def _report(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(REPORT_PREFIX):
            try:
                report: dict[str, Any] = json.loads(line[len(REPORT_PREFIX) :])
                return report
            except json.JSONDecodeError:
                return None
    return None


def _failed(reason: str, log: str, start: float, rejection: bool = False) -> Grade:
    """A grade without outcomes: the grader's failure (``error``) or the submission's (``rejection``)."""
    return Grade(
        tests=(),
        resolved=False,
        reward=0.0,
        error=None if rejection else reason,
        rejection=reason if rejection else None,
        log=log,
        duration=time.monotonic() - start,
    )
