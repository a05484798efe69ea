"""What the task's gold patch teaches its grades, learned once per task before an agent's diff is graded: each
a run of the grade itself (`repository.grade_in_mode`) in a learning mode. `calibrate`: which checks of the
FAIL_TO_PASS tests can be sealed (the gold patch graded with every one that could be sealed sealed);
`protection`: which of those protect the reward (`seals.protective`: an expectation the agent cannot read, a
check the unfixed code fails); `probe_inputs`: which values of the tests' input literals decoys may take
(`decoy_inputs`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager

from gym_swe.grading import decoy_inputs, seals
from gym_swe.grading.base import Grade
from gym_swe.grading.changes import Entry
from gym_swe.grading.environment import Environment, scan
from gym_swe.grading.guards import needles
from gym_swe.grading.repository import CALIBRATE, LEARN, PROBE, grade_in_mode
from gym_swe.sandbox.base import Sandbox
from gym_swe.tasks.swe import SWETask


def probe_inputs(
    sandboxes: Callable[[], AbstractContextManager[Sandbox]],
    task: SWETask,
    sealed: Mapping[str, seals.Facts],
    timeout: float = 1800.0,
    workdir: str = "/testbed",
    environment: Environment | None = None,
    pristine: dict[str, Entry] | None = None,
) -> dict[str, dict[str, object]]:
    """Which values of the literals of the last statement of each FAIL_TO_PASS test decoys may take
    (`decoy_inputs`): the checks sealed as a grade seals them (``sealed``, what `protection` learned), one
    copy per value of each leaf's block beside each test, run with the gold patch (a copy must fail) and with
    no fix (a copy must fail as the original does), each in a fresh pristine sandbox from ``sandboxes`` (a
    callable giving one). ``{}`` when the gold patch did not resolve the task in its run."""
    runs = []
    for diff in (task.patch, ""):
        with sandboxes() as sandbox:
            _, learned = grade_in_mode(
                sandbox, task, diff, "binary", timeout, workdir, (), environment, pristine, sealed, PROBE
            )
        if not learned:
            return {}
        runs.append(learned)
    return decoy_inputs.both(*runs)


def calibrate(
    sandbox: Sandbox,
    task: SWETask,
    reward: str = "binary",
    timeout: float = 1800.0,
    workdir: str = "/testbed",
    environment: Environment | None = None,
    pristine: dict[str, Entry] | None = None,
) -> tuple[Grade, dict[str, dict[str, object]]]:
    """Grade the task's own fix (its gold patch) with every check that could be sealed sealed the
    calibrating way; return that grade (a true one: the checks also hold in the process) and the checks
    that can be sealed in this task's grades, by key, with what the grader must know of each (`seals`)."""
    return grade_in_mode(
        sandbox, task, task.patch, reward, timeout, workdir, (), environment, pristine, {}, CALIBRATE
    )


def protection(
    sandbox: Sandbox,
    task: SWETask,
    sealable: Mapping[str, seals.Facts],
    timeout: float = 1800.0,
    workdir: str = "/testbed",
    environment: Environment | None = None,
    pristine: dict[str, Entry] | None = None,
) -> dict[str, dict[str, object]]:
    """What `calibrate` learned (``sealable``), with what decides whether each check is `seals.protective`:
    whether its expectation is ``public`` (every part of it written where the agent reads it, or the code
    under test does while it is graded, so either can copy it into forged records: the issue, the hints, a
    text file of the repository at its base commit, or of the tree the tests run in, the test files as they
    are sealed and the other files the test patch changes included) and whether the unfixed code fails it
    (``bug_fails``: with no fix, the tests run with every check sealed, no decoys). ``sandbox`` must be a
    fresh, pristine one (the repository is scanned before anything is applied)."""
    if not sealable:
        return {}
    readable = f"{task.problem_statement}\n{task.hints_text}"
    strings = needles(sealable)
    found = {form for form in strings if form in readable} | scan(sandbox, workdir, strings)
    _, unfixed = grade_in_mode(
        sandbox, task, "", "binary", timeout, workdir, (), environment, pristine, sealable, LEARN
    )
    learned = {}
    for key, facts in sealable.items():
        run = unfixed.get(key) or {}
        seen = found | set(run.get("visible", ()))  # type: ignore[call-overload]
        leaves = seals.public_forms(str(facts.get("expected", "")))
        learned[key] = {
            **facts,
            # unknown (the unfixed run ended before it was read) counts as public: never protective
            "public": not run or all(any(form in seen for form in leaf) for leaf in leaves),
            # a check the unfixed run recorded nothing for (it failed before the check) is one the bug fails
            "bug_fails": bool(run.get("bug_fails", True)),
        }
    return learned
