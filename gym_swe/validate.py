"""`gym-swe validate`: every task of a source, graded with its fix (must resolve) and without (must not).

For SWEGym-v0 the fix is the gold patch and "without" the empty diff; for CodeDebug-v0 they are the
canonical solution and the buggy one. Each is graded exactly as an episode's final state would be.

A task that is not valid gets a ``problem``: what went wrong and what to do about it, in words (`advice`),
the likely cause first, so that its first line names it (the network a test reached for, the grader). The fix
resolves its task by definition: a grader that rejects it is at fault (gym_swe's bug), never the fix, unless
the fix does not apply to the checkout (the record's fault). Each row also holds every test's outcome under
both grades and the tail of each test run's log. `Progress` shows the tasks in flight and each verdict as it
lands.
"""

from __future__ import annotations

import re
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TextIO

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
from gym_swe.tasks.environments import is_prepared, own_runner, prepare_environment

ENVS = ("CodeDebug-v0", "SWEGym-v0", "Harbor-v0")
LOG_TAIL_CHARS = 6000
EXCLUDE_HINT = (
    "What to do: if they cannot pass on this machine (they need the network, say), exclude them with "
    "`--exclude-test ID` or the record's exclude_tests field; otherwise read the log (-v, or --json) and fix "
    "the task's environment (its `environment` field: python, packages, install, env)."
)
# Errors a grade can meet, by a phrase of their message, with what to do. The message itself says what
# went wrong; this says how to get past it.
ADVICE = (
    ("test id(s) are not",
     "the record's ids are written for another test runner: name it in the record's test_runner field."),
    ("every FAIL_TO_PASS test is excluded",
     "nothing would tell a fix from no fix on this machine: leave this task out of the source."),
    ("test patch does not apply",
     "the record's test_patch must apply to base_commit: check both fields of the record."),
    ("no usable pytest",
     "the task's venv must hold pytest: list a pytest that works with its Python in environment.packages."),
    ("could not probe the task's python",
     "the venv's python does not start in the jail: check environment.python, run `gym-swe prepare` again."),
    ("found no test file",
     "the files of FAIL_TO_PASS are not in the checkout after the test patch: check the record's ids."),
    ("is not here and pulling it failed",
     "pull the record's image where a registry is reachable, or build gym_swe's image of the task "
     "(gym-swe images build --tasks SOURCE --task-id ID) and grade it under image_naming='gym-swe'."),
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


def _grades(env: Any, task: Any, phase: Callable[[str], None]) -> tuple[Grade, Grade]:
    if env.spec.id == "SWEGym-v0":
        if env.sandbox_backend == "local" and not is_prepared(task):
            phase("preparing its environment")  # the first grade prepares it: minutes, not seconds
        phase("grading the fix")
        fixed = env.grade_diff(task, task.patch)
        phase("grading no fix")
        return fixed, env.grade_diff(task, "")
    if env.spec.id == "Harbor-v0":  # its oracle (solution/solve.sh) is its gold fix
        phase("running its oracle")
        fixed = env.grade_oracle(task)
        phase("grading no change")
        return fixed, env.grade_unchanged(task)
    from gym_swe.grading.functions import grade_function

    grades = []
    for what, code in (("the fix", task.fixed_code), ("no fix", task.buggy_code)):
        phase(f"grading {what}")
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
        return unstarted(fixed, unfixed) or rejected_fix(fixed.rejection, fixed.log)
    if not fixed.resolved:
        failed = [f"{test.name} ({test.outcome})" for test in fixed.tests if not test.passed]
        # The likely cause first: the verdict line and a reader both stop after the first few words.
        network = network_cause(fixed.log)
        cause = (
            dropped_from_fix(fixed.log)
            or network
            or skip_cause(fixed.log, failed)
            or missing_cause(fixed, unfixed)
            or environment_cause(fixed, unfixed)
        )
        targets = set(fixed.groups.get("FAIL_TO_PASS", ()))
        if (
            cause == network
            and cause
            and targets
            and targets <= {t.name for t in fixed.tests if not t.passed}
        ):
            # requests-1724: excluding them would leave nothing to grade, so no exclusion is advised
            return (
                f"cannot be graded here: every FAIL_TO_PASS test needs the network{cause}: "
                f"{len(targets)} FAIL_TO_PASS test(s) did not pass with the fix. What to do: leave this task "
                "out of the source (with no FAIL_TO_PASS test left, nothing tells a fix from none here)."
            )
        return (
            f"the fix does not resolve the task{cause}: {len(failed)} test(s) did not pass with it: "
            f"{', '.join(failed)}. {EXCLUDE_HINT}"
        )
    if unfixed.resolved:
        return (
            "the task is resolved without any change: every FAIL_TO_PASS test already passes at base_commit "
            "with the test patch, so no grade can tell a fix from none. What to do: check the record's "
            "FAIL_TO_PASS and test_patch (and, with exclusions, that a test the fix repairs is left)."
        )
    return None


def rejected_fix(rejection: str, log: str = "") -> str:
    """What a rejected fix means. The fix is the task's own (the gold patch, the canonical solution): one
    that does not apply is the record's fault; any other rejection is the grader refusing a fix that
    resolves the task, which is gym_swe's (with what in ``log``, the grade's, shows why)."""
    rejection = rejection.rstrip().rstrip(".")
    if "does not apply" in rejection:
        return (
            f"the fix does not apply: {rejection}. What to do: the record's patch must apply to the prepared "
            "checkout at base_commit: check the record's patch (and base_commit), and the log (-v)."
        )
    if "timed out" in rejection:
        return (
            f"the test run timed out with the fix ({rejection}). What to do: the task's tests take longer "
            "here than the grader's timeout (the env's test_timeout): give them more time, or exclude the "
            "slow tests (--exclude-test)."
        )
    detail = grader_detail(log)
    if detail.startswith("the log ends: ") and detail[len("the log ends: ") :].rstrip("…") in rejection:
        detail = ""  # the rejection names it already
    return (
        f"the grader rejected a fix that resolves the task ({rejection}{'; ' + detail if detail else ''}): "
        "that is a gym_swe bug, not the task's. What to do: report it to gym_swe with the log from -v (or "
        "--json's fix_log)."
    )


NO_TEST_RAN = "record stream: 0 test(s)"
"""The grade log's line for a run that ended before any test did (`gym_swe.grading.repository`)."""


def unstarted(fixed: Grade, unfixed: Grade) -> str | None:
    """The environment, where the test run broke before any test, with the fix and without it alike (sympy
    1.1 in a task image of Python 3.11: ``from collections import Mapping`` fails as sympy is imported, so
    bin/test never gets to a test): neither the patch nor the grader is the cause; None otherwise."""
    if not (fixed.rejection and unfixed.rejection) or "did not finish" not in fixed.rejection:
        return None
    if not all(NO_TEST_RAN in grade.log for grade in (fixed, unfixed)):
        return None
    why = fixed.rejection.rstrip().rstrip(".")
    return (
        f"the tests cannot start here (the environment: no test ran, with the fix or without it: {why}): "
        "the task's Python or packages cannot run this checkout. What to do: give the task an environment "
        "its code runs in (environment.python, environment.packages); on docker, gym_swe's task images run "
        "the base image's Python, not the task's."
    )


def grader_detail(log: str) -> str:
    """What a grade's log shows of why the grader refused the fix: the decoys that passed or were missing
    from the report, else the log's last line (the error that ended a run that wrote no
    report); empty if none."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith("decoys that passed where their original passed: "):
            decoys = line.split(": ", 1)[1].split("; ")
            return f"decoys that passed: {'; '.join(decoys[:2])}{'; ...' if len(decoys) > 2 else ''}"
        if line.startswith("decoys missing from the report: "):
            return line[:300]
    if lines and not lines[-1].startswith(("$ pytest", "[exit")):
        last = lines[-1]
        return f"the log ends: {last if len(last) <= 200 else last[:199] + '…'}"
    return ""


# Messages of the standard library, urllib3 and requests when a test reaches for a network the jail lacks.
NETWORK_ERRORS = (
    "Network is unreachable",
    "Temporary failure in name resolution",
    "Name or service not known",
    "No address associated with hostname",
    "getaddrinfo failed",
    "nodename nor servname provided",
    "Failed to establish a new connection",
)


def environment_cause(fixed: Grade, unfixed: Grade) -> str:
    """A clause naming the environment as the cause when every test that did not pass with the fix is a
    PASS_TO_PASS test that did not pass without it either (xarray-6938: a release of ``sparse`` newer than
    the task's date): the patch is not what breaks them; empty otherwise. Where some of them did not run
    either way or were skipped (matplotlib-25433 on the 3.6.1 release: three tests that release does not
    have, one that needs xelatex), the clause says how many of each, not only "a package"."""
    regressions = set(fixed.groups.get("PASS_TO_PASS", ()))
    before = {test.name: test.passed for test in unfixed.tests}
    was = {test.name: test.outcome for test in unfixed.tests}
    failing = [test for test in fixed.tests if not test.passed]
    if not failing or not all(t.name in regressions and before.get(t.name) is False for t in failing):
        return ""
    missing = sum(test.outcome == "not_run" and was.get(test.name) == "not_run" for test in failing)
    skipped = sum(test.outcome == "skipped" for test in failing)
    broken = len(failing) - missing - skipped
    causes = []
    if missing:
        causes.append(f"{missing} did not run either way (no such test here)")
    if skipped:
        causes.append(f"{skipped} {'was' if skipped == 1 else 'were'} skipped here")
    if broken:
        package = "a package newer than the task's date is the usual cause: pin it in environment.packages"
        causes.append(package if not causes else f"{broken} failed ({package})")
    return (
        f" (the environment: {'its' if len(failing) == 1 else 'all ' + str(len(failing))} PASS_TO_PASS "
        f"test(s) that fail with the fix fail without it too, so the patch is not what breaks them; "
        f"{'; '.join(causes)})"
    )


def missing_cause(fixed: Grade, unfixed: Grade) -> str:
    """A clause naming the record's ids as the cause when every test that did not pass with the fix did not
    run at all, with the fix or without it: no test of the run had that id (a test renamed or removed in the
    checkout the record is graded on: django__django-13033 rebased onto Django 3.2a1, whose
    ``test_order_by_constant_value_without_output_field`` was gone), so neither the patch nor a package is
    what fails it; empty otherwise."""
    before = {test.name: test.outcome for test in unfixed.tests}
    failing = [test for test in fixed.tests if not test.passed]
    if not failing or not all(
        test.outcome == "not_run" and before.get(test.name) == "not_run" for test in failing
    ):
        return ""
    return (
        f" (no such test here: {'it' if len(failing) == 1 else 'all ' + str(len(failing))} did not run, with "
        "the fix or without it: the checkout at base_commit with the test patch has no test of that id, or "
        "the runner found none it names)"
    )


def network_cause(log: str) -> str:
    """A clause naming the network as the cause when the test run's log shows tests reaching for it (the
    sandbox has none); empty otherwise."""
    seen = [message for message in NETWORK_ERRORS if message in log]
    if not seen:
        return ""
    return (
        f" (its tests need the network, which the sandbox does not have: the log shows "
        f"{' and '.join(repr(message) for message in seen[:2])})"
    )


_SKIP_LINE = re.compile(r"^SKIPPED \[\d+\] [^:]+:\d+: (.+)$", re.M)


def skip_cause(log: str, failed: Sequence[str]) -> str:
    """A clause naming why the fix's tests were skipped (pytest's ``-rA`` summary: a missing program, a
    missing module), when the tests that did not pass were skipped; empty otherwise."""
    if not failed or not all(name.endswith("(skipped)") for name in failed):
        return ""
    reasons = list(dict.fromkeys(match.strip() for match in _SKIP_LINE.findall(log)))
    if not reasons:
        return ""
    shown = "; ".join(reason if len(reason) <= 120 else reason[:119] + "…" for reason in reasons[:2])
    return f" (its tests were skipped here: {shown})"


def dropped_from_fix(log: str) -> str:
    """A clause naming the parts of the fix the grader's diff filter dropped as protected paths, so that
    the tests ran without them (a gym_swe bug if they need them); empty when it dropped none."""
    dropped = [line[len("dropped ") :] for line in log.splitlines() if line.startswith("dropped ")]
    if not dropped:
        return ""
    return (
        f" (the grader dropped part of the fix as protected paths, {'; '.join(dropped[:3])}, and ran the "
        "tests without it: if they need it, that is a gym_swe bug; report it with the log from -v)"
    )


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
    progress: Progress | None = None,
    image_naming: str | None = None,
) -> list[dict[str, Any]]:
    """One row per task, in the order of the source: whether the fix resolved it, the no-fix did not, why
    not, and each test's outcome under both (``tests``), with the tail of each run's log (``fix_log``,
    ``no_fix_log``). ``progress`` hears of each task as it starts, each step it takes, and its row as it
    lands."""
    if env_id not in ENVS:
        raise ConfigError(unknown_name("env", env_id, ENVS))
    kwargs: dict[str, Any] = {"tasks": tasks, "sandbox": sandbox}
    if env_id == "SWEGym-v0":
        if repo_source:
            kwargs["repo_source"] = repo_source
        if exclude_tests:
            kwargs["exclude_tests"] = tuple(exclude_tests)
        if image_naming:  # docker: which image each task runs in (SWEGym's image_naming)
            kwargs["image_naming"] = image_naming
    elif image_naming:
        raise ConfigError("image_naming applies to SWEGym-v0 tasks only")
    elif exclude_tests:
        raise ConfigError(
            "exclude_tests applies to SWEGym-v0 tasks only; CodeDebug-v0 tasks have no test ids"
        )
    from gym_swe.envs.unwrapped import tool_env

    env = tool_env(gymnasium.make(env_id, **kwargs))
    refused = env.tasks.refused
    if task_ids:
        selected = [task_id if task_id in refused else env.tasks.get(task_id) for task_id in task_ids]
    else:
        selected = [*env.tasks, *refused]
    progress = progress or Progress(file=None)

    def reported(task: Any) -> dict[str, Any]:
        done = refused_row(task) if isinstance(task, str) else row(task)
        progress.done(done)  # here, in the task's thread: before the pool starts the next task
        return done

    def refused_row(task_id: str) -> dict[str, Any]:
        """A task refused where it loaded: its reason, the one line the loader gave."""
        why = refused[task_id]
        return {"task_id": task_id, "ok": False, "error": why, "problem": with_advice(why, advice(why)),
                "dropped_ids": [], "excluded_tests": [], "seconds": 0.0}  # fmt: skip

    def row(task: Any) -> dict[str, Any]:
        progress.phase(task.task_id, "starting")
        notes = {
            "dropped_ids": list(getattr(task, "dropped_ids", ())),
            "excluded_tests": list(getattr(task, "excluded_tests", ())),
        }
        started = time.monotonic()
        try:
            fixed, unfixed = _grades(env, task, lambda what: progress.phase(task.task_id, what))
        except GymSweError as error:
            return {"task_id": task.task_id, "ok": False, "error": str(error),
                    "problem": _problem(env, task, error), **notes,
                    "seconds": round(time.monotonic() - started, 2)}  # fmt: skip
        problem = diagnose(fixed, unfixed)
        fix, no_fix = _outcomes(fixed), _outcomes(unfixed)
        return {
            "task_id": task.task_id,
            "ok": problem is None,
            "fix_resolved": fixed.resolved,
            "no_fix_resolved": unfixed.resolved,
            "fix_passed": f"{fixed.passed}/{fixed.total}",
            "no_fix_passed": f"{unfixed.passed}/{unfixed.total}",
            "integrity": fixed.integrity,
            "chance": fixed.chance,
            "error": fixed.error or unfixed.error,
            "problem": problem,
            "fix_failed": [name for name, outcome in fix.items() if outcome != "passed"],
            "tests": {name: {"fix": fix[name], "no_fix": no_fix.get(name, "not_run")} for name in fix},
            **notes,
            "fix_log": fixed.log[-LOG_TAIL_CHARS:],
            "no_fix_log": unfixed.log[-LOG_TAIL_CHARS:],
            "seconds": round(fixed.duration + unfixed.duration, 2),
        }

    progress.start(len(selected))
    try:
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            return list(pool.map(reported, selected))
    finally:
        progress.close()


def _problem(env: Any, task: Any, error: GymSweError) -> str:
    """What went wrong and what to do, for a grade that raised ``error``. A repository that is pytest itself
    has no pytest in its venv but its own install, in the checkout: a grader that finds none there is
    gym_swe's fault, and the problem says so."""
    if "no usable pytest" in str(error) and env.spec.id == "SWEGym-v0" and env.sandbox_backend == "local":
        try:
            own = own_runner(task, prepare_environment(task, env.repo_source).checkout)
        except GymSweError:
            own = False
        if own:
            return with_advice(
                f"the grader found no pytest outside the repository, which is pytest itself: its own install "
                f"(the task's install commands) is the only pytest its venv has ({error})",
                "gym_swe's grader must take pytest from the repository's own install there: a gym_swe bug, "
                "not the task's; report it with the log from -v.",
            )
    return with_advice(str(error), advice(error))


class Progress:
    """What `gym-swe validate` shows as it goes, on stderr: a progress bar over the tasks with the tasks in
    flight and what each is doing (preparing its environment, grading the fix, grading no fix), and each
    task's verdict on a line of its own as it lands. ``file=None`` shows nothing; ``desc`` names the bar
    (`gym-swe tasks generate` shows its own)."""

    def __init__(self, file: TextIO | None = sys.stderr, desc: str = "validate") -> None:
        self.file = file
        self.desc = desc
        self.bar: Any = None
        self.valid = self.failed = 0
        self.in_flight: dict[str, str] = {}
        self._lock = threading.Lock()  # tasks are graded in the pool's threads

    def start(self, total: int) -> None:
        if self.file is None:
            return
        from tqdm import tqdm

        self.bar = tqdm(
            total=total,
            desc=self.desc,
            file=self.file,
            dynamic_ncols=True,
            mininterval=0,  # a task takes seconds to minutes: draw every change
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} tasks [{elapsed}<{remaining}"
            "{postfix}]",
        )

    def phase(self, task_id: str, what: str) -> None:
        with self._lock:
            self.in_flight[task_id] = what
            self._draw()

    def done(self, row: dict[str, Any]) -> None:
        with self._lock:
            self.in_flight.pop(row["task_id"], None)
            self.valid += bool(row["ok"])
            self.failed += not row["ok"]
            if self.bar is not None:
                self._draw(refresh=False)
                self.bar.write(verdict_line(row), file=self.file)
                self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def _draw(self, refresh: bool = True) -> None:
        if self.bar is None:
            return
        flight = "; ".join(f"{task_id}: {what}" for task_id, what in self.in_flight.items())
        counts = f"{self.valid} ok, {self.failed} FAILED"
        self.bar.set_postfix_str(f"{counts}{' | ' + flight if flight else ''}", refresh=refresh)


def verdict_line(row: dict[str, Any]) -> str:
    """One line for a task that is done: its verdict, its counts and seconds, and what went wrong (the
    problem up to its advice, which the report at the end gives in full)."""
    counts = f"fix {row['fix_passed']}, no fix {row['no_fix_passed']}, " if "fix_passed" in row else ""
    if row["ok"]:
        return f"{row['task_id']}: ok ({counts}{row.get('seconds', 0)} s)"
    problem = (row.get("problem") or "").split("What to do:")[0].strip().splitlines() or [""]
    what = problem[0] if len(problem[0]) <= 300 else problem[0][:299] + "…"
    return f"{row['task_id']}: FAILED ({counts}{row.get('seconds', 0)} s): {what}"


def print_table(rows: list[dict[str, Any]], verbose: bool = False) -> None:
    """The report: one line per task, then each invalid task's problem in full (with ``verbose``: every
    task's per-test outcomes and its log tails)."""
    width = max([28, *(len(row["task_id"]) for row in rows)])
    repository = any(row.get("integrity") for row in rows)
    protected = f" {'protected':<17}" if repository else ""
    print(f"{'task':<{width}} {'result':<6} {'fix':>7} {'no fix':>7} {'s':>6}{protected}")
    for row in rows:
        result = "ok" if row["ok"] else "FAIL"
        print(f"{row['task_id']:<{width}} {result:<6} {row.get('fix_passed', '-'):>7} "
              f"{row.get('no_fix_passed', '-'):>7} {row.get('seconds', 0):>6}"
              f"{f' {protection(row):<17}' if repository else ''}")  # fmt: skip
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
    for line in protection_summary(rows):
        print(line)


def protection(row: dict[str, Any]) -> str:
    """A task's protection as the table shows it: "sealed", "decoys 1.6%" (its chance bound) or "no 25%"."""
    integrity, chance = row.get("integrity") or "", row.get("chance")
    if integrity == "sealed" or not integrity:
        return integrity or "-"
    bound = f" {chance:.1%}" if isinstance(chance, (int, float)) else ""
    return ("decoys" if integrity == "decoys" else "no") + bound


def repository_of(task_id: str) -> str:
    """``owner/name`` of a SWE-bench style id (``owner__name-1234``); the id itself otherwise."""
    match = re.fullmatch(r"(.+?)__(.+)-\d+", task_id)
    return f"{match.group(1)}/{match.group(2)}" if match else task_id


def protection_summary(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Per repository, the share of its valid tasks whose grade the default (``integrity="protected"``)
    pays: sealed, or decoys with a chance bound of at most 2%."""
    valid = [row for row in rows if row["ok"] and row.get("integrity")]
    if not valid:
        return []
    by_repository: dict[str, list[dict[str, Any]]] = {}
    for row in valid:
        by_repository.setdefault(repository_of(row["task_id"]), []).append(row)
    lines = ["protected (paid under the default integrity='protected'):"]
    for name, group in sorted(by_repository.items()):
        paid = sum(row["integrity"] in ("sealed", "decoys") for row in group)
        lines.append(f"  {name}: {paid}/{len(group)} ({paid / len(group):.0%})")
    paid = sum(row["integrity"] in ("sealed", "decoys") for row in valid)
    lines.append(f"  all: {paid}/{len(valid)} ({paid / len(valid):.0%})")
    unpaid = [row["task_id"] for row in valid if row["integrity"] == "unprotected"]
    if unpaid:
        lines.append(
            f"{len(unpaid)} valid task(s) are unprotected (protected: no): the default leaves their grades "
            "out (not graded); integrity='any' pays them, and code that forges the test report can earn "
            f"those (README, Security): {', '.join(unpaid[:10])}{' ...' if len(unpaid) > 10 else ''}"
        )
    return lines
