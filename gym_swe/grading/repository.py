"""Grading a repository task from the agent's diff, in a fresh sandbox, by FAIL_TO_PASS and PASS_TO_PASS.

1. The grading sandbox holds the pristine checkout. Before anything changes in it, the grader probes its
   environment (`pytest_driver` probe: pytest, the pytest11 plugins installed, the module names a new file
   must not shadow) and takes its manifest (`changes.manifest`).
2. Changes to protected paths are dropped from the diff (`diffs.filter_diff`); the rest is applied with
   ``git apply``, and its effect is checked: only the paths the filter kept may differ from the pristine
   tree afterwards, so a diff that reads differently to git than to the filter is rejected.
3. The test patch is applied, decoys of the FAIL_TO_PASS tests are planted beside them (`decoys`: copies
   with one expectation changed, which no correct code passes), and the test files of FAIL_TO_PASS and
   PASS_TO_PASS run under pytest through `pytest_driver`: pytest and its plugins imported from the
   environment before the workspace is on ``sys.path``, plugin autoloading off, the configuration file and
   rootdir the probe found on the pristine tree named explicitly (nothing the workspace adds is read as
   configuration), a fresh TMPDIR and a timeout.
4. Outcomes are read per test from the stream the driver wrote as each test ended (never from stdout, nor
   from a file the run could rewrite when it exits): a pipe the grading sandbox's executor read as the run
   went (`outcome_stream`), with the sealed checks' records. A stream the driver alone did not write (a line
   after its end, a second record for a test, a malformed line, a stream past its bound), a run that did not
   reach its end, or a JUnit XML report (still read, as a cross-check) whose tests, outcomes or order are not
   the streamed ones: the submission is rejected. Outcomes are matched back to the dataset's ids with their
   quirks (`test_ids`). A decoy that passed where its original passed means the code under test answered the
   test calling it, or changed the outcomes: the submission is rejected.
5. Resolved when every FAIL_TO_PASS and PASS_TO_PASS test passed; a test that did not run fails, and skipped
   is not passed.

A submission the grader cannot trust or cannot apply is *rejected* (``Grade.rejection``): scored 0, like any
failure, because it is the agent's doing; ``Grade.error`` is kept for a grader that could not do its job.
"""

from __future__ import annotations

import json
import random
import re
import secrets
import shlex
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gym_swe.errors import FileTooLargeError, GradingError, SandboxCrashedError, SandboxError
from gym_swe.grading import decoy_inputs, seals
from gym_swe.grading.base import Grade, TestResult, reward_for
from gym_swe.grading.changes import Entry, compare, manifest
from gym_swe.grading.decoy_report import missing, restore, restored_name, violations
from gym_swe.grading.decoys import TARGET_CHANCE, Planting, plant, probe
from gym_swe.grading.diffs import filter_diff, split_diff
from gym_swe.grading.outcome_stream import (
    MAX_STREAM_BYTES,
    RECORDS_FD,
    RECORDS_FD_VARIABLE,
    StreamError,
    cross_check,
    read_stream,
)
from gym_swe.grading.runners import runner_named
from gym_swe.grading.test_ids import (
    JUnitReportError,
    junit_outcomes,
    match_outcomes,
    parse_test_id,
)
from gym_swe.sandbox.base import Sandbox
from gym_swe.tasks.swe import SWETask

GRADER_DIR = "/tmp/gym_swe_grader"
DRIVER_SOURCE = Path(__file__).with_name("pytest_driver.py").read_bytes()
MAX_REPORT_BYTES = 64 * 1024 * 1024
MAX_TEST_FILE_BYTES = 8 * 1024 * 1024
NO_CONFIG = "/dev/null"
"""What pytest is given as its configuration file where the pristine tree has none (pytest reads nothing)."""


@dataclass(frozen=True)
class Environment:
    """What the pristine grading sandbox's python holds (from `pytest_driver` probe)."""

    python: str
    pytest: str
    plugins: tuple[str, ...]
    """Modules of the pytest11 plugins installed, loaded explicitly with -p."""
    shadowable: frozenset[str]
    """Top-level module names a new file in the repository must not take."""
    editable: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """The repository's directories an editable install puts on ``sys.path`` (``src``), relative to its root,
    each with the top-level modules it holds: a new module at the root must not take those names."""
    config: str | None = None
    """The configuration file pytest takes for the task's test files in the pristine tree (None: none)."""
    rootdir: str | None = None
    """pytest's rootdir for them (None when the probe could not ask pytest)."""
    self_hosted: bool = False
    """The repository is pytest itself: the runner is the workspace's own (its editable install)."""

    def config_options(self) -> list[str]:
        """pytest options that fix its configuration to the pristine tree's, whatever the workspace adds."""
        if self.rootdir is None:
            return []
        return ["-c", self.config or NO_CONFIG, f"--rootdir={self.rootdir}"]


def probe_environment(
    sandbox: Sandbox, workdir: str, files: Sequence[str] = (), needs_pytest: bool = True
) -> Environment:
    """Probe the task's python in ``sandbox``, which must be pristine (nothing of the agent's applied);
    ``files``: the test files the grade will run (they decide pytest's configuration file and rootdir);
    ``needs_pytest``: whether the task's runner is pytest (another runner's environment need not hold it)."""
    sandbox.write_file(f"{GRADER_DIR}/driver.py", DRIVER_SOURCE)
    arguments = " ".join(shlex.quote(path) for path in [workdir, *files])
    # No bytecode: the tree's manifest is taken next, and a pytest imported from the tree (pytest's own
    # repository) would leave src/_pytest/__pycache__ in it that no later sandbox of the task has (a docker
    # sandbox writes bytecode; a local one does not).
    run = sandbox.exec(
        f"cd {shlex.quote(workdir)} && python {GRADER_DIR}/driver.py probe {arguments}",
        timeout=300,
        max_output=16 * 1024 * 1024,
        env={"PYTHONDONTWRITEBYTECODE": "1"},
    )
    try:
        report = json.loads(run.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise GradingError(
            f"could not probe the task's python (exit {run.exit_code}): {run.output.strip()[-1500:]}"
        ) from None
    if needs_pytest and not report.get("pytest"):
        raise GradingError(f"the task's environment has no usable pytest: {report.get('error')}")
    return Environment(
        python=str(report["python"]),
        pytest=str(report.get("pytest") or ""),
        plugins=tuple(module for _, module in report["plugins"]),
        shadowable=frozenset(report["shadowable"]),
        editable={str(path): frozenset(names) for path, names in report.get("editable", {}).items()},
        config=report.get("config") or None,
        rootdir=report.get("rootdir") or None,
        self_hosted=bool(report.get("self_hosted")),
    )


def grade_repository(
    sandbox: Sandbox,
    task: SWETask,
    diff: str,
    reward: str = "binary",
    timeout: float = 1800.0,
    workdir: str = "/testbed",
    pytest_args: tuple[str, ...] = (),
    environment: Environment | None = None,
    pristine: dict[str, Entry] | None = None,
    sealed: Mapping[str, seals.Facts] | None = None,
    inputs: Mapping[str, Any] | None = None,
) -> Grade:
    """Grade ``diff`` for ``task`` in ``sandbox``, which must hold the pristine checkout at ``workdir``.

    ``environment`` and ``pristine`` (its manifest) are probed here unless given; a caller that took them
    already, before the sandbox changed, passes them in. ``sealed``: the checks to seal, by key, with what
    the gold patch taught of each (learned by `calibrate`); ``inputs``: the input leaves calibrated for
    decoys (learned by `probe_inputs`).
    """
    return _grade(
        sandbox, task, diff, reward, timeout, workdir, pytest_args, environment, pristine, sealed or {},
        GRADE, inputs,
    )[0]  # fmt: skip


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
            _, learned = _grade(
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
    return _grade(
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
    strings = _needles(sealable)
    found = {form for form in strings if form in readable} | _scan(sandbox, workdir, strings)
    _, unfixed = _grade(
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


def _needles(sealable: Mapping[str, seals.Facts]) -> list[str]:
    """Every spelling of every part of the sealable checks' literals (`seals.public_forms`)."""
    forms = [seals.public_forms(str(facts.get("expected", ""))) for facts in sealable.values()]
    return sorted({form for leaves in forms for leaf in leaves for form in leaf})


def _scan(sandbox: Sandbox, workdir: str, strings: Sequence[str]) -> set[str]:
    """The ``strings`` some text file of the (pristine) tree at ``workdir`` holds."""
    if not strings:
        return set()
    sandbox.exec(f"mkdir -p {GRADER_DIR}", timeout=60)
    sandbox.write_file(f"{GRADER_DIR}/driver.py", DRIVER_SOURCE)
    sandbox.write_file(f"{GRADER_DIR}/needles.json", json.dumps(list(strings)).encode())
    run = sandbox.exec(
        f"python {GRADER_DIR}/driver.py scan {shlex.quote(workdir)} {GRADER_DIR}/needles.json",
        timeout=600,
        max_output=64 * 1024 * 1024,
    )
    try:
        found = json.loads(run.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise GradingError(
            f"could not scan the repository (exit {run.exit_code}): {run.output[-1500:]}"
        ) from None
    return {str(item) for item in found}


GRADE, CALIBRATE, LEARN, PROBE = "grade", "calibrate", "learn", "probe"
"""`_grade`'s modes: an agent's diff; the gold patch, learning which checks can be sealed; no patch at all,
learning which sealed checks the bug fails; the gold patch with the checks sealed as a grade seals them,
learning which values of the tests' input literals it fails (`decoy_inputs`)."""


def _grade(
    sandbox: Sandbox,
    task: SWETask,
    diff: str,
    reward: str,
    timeout: float,
    workdir: str,
    pytest_args: tuple[str, ...],
    environment: Environment | None,
    pristine: dict[str, Entry] | None,
    sealed: Mapping[str, seals.Facts],
    mode: str = GRADE,
    inputs: Mapping[str, Any] | None = None,
) -> tuple[Grade, dict[str, dict[str, object]]]:
    """Grade ``diff``; with it, in CALIBRATE mode, the checks that can be sealed (key -> facts); in LEARN
    mode, each sealed check's key -> whether the run's records of it did not hold (``bug_fails``).

    The grade's tests carry the task's own ids, whatever node ids its runner graded them under."""
    names: dict[str, str] = {}
    grade, learned = _graded(
        sandbox, task, diff, reward, timeout, workdir, pytest_args, environment, pristine, sealed, mode,
        inputs, names,
    )  # fmt: skip
    return _named_as_the_task(grade, names), learned


def _named_as_the_task(grade: Grade, names: Mapping[str, str]) -> Grade:
    """``grade`` with each node id its runner graded a test under (``names``: node id -> the task's id)
    given back as the task's id."""
    if not names:
        return grade
    return replace(
        grade,
        tests=tuple(replace(test, name=names.get(test.name, test.name)) for test in grade.tests),
        groups={key: tuple(names.get(name, name) for name in ids) for key, ids in grade.groups.items()},
    )


def _node_named(task: SWETask, nodes: Mapping[str, str], names: dict[str, str]) -> SWETask:
    """``task`` with its ids replaced by the node ids its runner found for them (``nodes``), each noted in
    ``names`` (node id -> id); an id no test answers to is kept as it is, and fails as a test not run."""
    for raw, node in nodes.items():
        names.setdefault(node, raw)
    return replace(
        task,
        fail_to_pass=tuple(dict.fromkeys(nodes.get(raw, raw) for raw in task.fail_to_pass)),
        pass_to_pass=tuple(dict.fromkeys(nodes.get(raw, raw) for raw in task.pass_to_pass)),
    )


def _graded(
    sandbox: Sandbox,
    task: SWETask,
    diff: str,
    reward: str,
    timeout: float,
    workdir: str,
    pytest_args: tuple[str, ...],
    environment: Environment | None,
    pristine: dict[str, Entry] | None,
    sealed: Mapping[str, seals.Facts],
    mode: str,
    inputs: Mapping[str, Any] | None,
    names: dict[str, str],
) -> tuple[Grade, dict[str, dict[str, object]]]:
    calibrating = mode == CALIBRATE
    start = time.monotonic()
    runner = runner_named(task.test_runner)
    expected = list(task.fail_to_pass) + list(task.pass_to_pass)
    foreign = runner.unsupported(expected)
    if foreign:
        raise GradingError(
            f"{task.instance_id}: {len(foreign)} test id(s) are not {runner.name} test ids (e.g. "
            f"{foreign[0]!r})"
        )
    if pytest_args and runner.name != "pytest":
        raise GradingError(
            f"{task.instance_id}: pytest_args are for pytest; its tests run under {runner.name}"
        )
    files = runner.test_files(expected, task.test_patch)
    if environment is None:
        environment = probe_environment(sandbox, workdir, files, runner.needs_pytest)
    if pristine is None:
        pristine = manifest(sandbox, workdir)
    filtered = filter_diff(
        diff, task.test_patch, environment.shadowable, environment.editable, runner_paths=runner.protected
    )
    log = [f"python {environment.python}, pytest {environment.pytest}"
           f"{' (the repository itself)' if environment.self_hosted else ''}, plugins: "
           f"{', '.join(environment.plugins) or '-'}, configuration: {environment.config or 'none'}",
           f"agent diff: {len(filtered.kept)} file(s) kept: {', '.join(filtered.kept) or '-'}"]  # fmt: skip
    log += [f"dropped {path}: {reason}" for path, reason in filtered.dropped]

    sandbox.exec(f"rm -rf {GRADER_DIR}/tmp {GRADER_DIR}/*.diff && mkdir -p {GRADER_DIR}/tmp", timeout=60)
    # the probe, taken once per task in another sandbox, wrote none here
    sandbox.write_file(f"{GRADER_DIR}/driver.py", DRIVER_SOURCE)
    if filtered.diff.strip():
        sandbox.write_file(f"{GRADER_DIR}/agent.diff", filtered.diff.encode("utf-8", "surrogateescape"))
        applied = _apply(sandbox, f"{GRADER_DIR}/agent.diff", workdir, fallback=False)
        if applied is not None:
            log.append(applied)
            rejection = f"the agent's diff does not apply: {applied}"
            return _unsealed(_result(task, filtered.diff, {}, reward, log, start, rejection=rejection))
        stray = _unexpected_changes(sandbox, workdir, pristine, filtered.kept)
        if stray:
            return _unsealed(_result(
                task, filtered.diff, {}, reward, log, start,
                rejection=f"the diff changed {', '.join(stray[:5])}, which the filter did not keep: it reads "
                "differently to git apply than to the grader",
            ))  # fmt: skip
        failed = _rebuild(sandbox, task, workdir, filtered.kept, min(timeout, REBUILD_TIMEOUT), log)
        if failed is not None:
            return _unsealed(_result(task, filtered.diff, {}, reward, log, start, rejection=failed))
    # What the agent saw of the test files (the agent's diff never changes them): a decoy's value must be
    # written there exactly where its original's is.
    target_files = _files_of(task.fail_to_pass) if runner.name == "pytest" else files
    pristine_tests = _read_tests(sandbox, target_files, workdir) if mode in (GRADE, PROBE) else {}
    sandbox.write_file(f"{GRADER_DIR}/test.diff", task.test_patch.encode("utf-8", "surrogateescape"))
    applied = _apply(sandbox, f"{GRADER_DIR}/test.diff", workdir, fallback=True)
    if applied is not None:
        raise GradingError(f"{task.instance_id}: the test patch does not apply to base_commit: {applied}")
    # Nothing of what grading was given stays where the test run could read it: the test patch would show
    # which of the tests it finds are the task's own and which are decoys.
    sandbox.exec(f"rm -f {GRADER_DIR}/agent.diff {GRADER_DIR}/test.diff", timeout=60)
    if runner.name != "pytest":  # from here on the task's tests are named by node ids
        task = _node_named(task, runner.node_ids(expected, _read_tests(sandbox, files, workdir)), names)
        expected = list(task.fail_to_pass) + list(task.pass_to_pass)

    sealing, planting = _seal_and_plant(
        sandbox, task, workdir, sealed, calibrating, decoys=mode == GRADE, pristine=pristine_tests,
        inputs=inputs, probing=mode == PROBE,
    )  # fmt: skip
    if mode == PROBE:
        log.append(f"probes: {len(planting.probes)} input leaf/leaves, {_copies(planting)} copies")
    log.append(_describe(planting) if mode == GRADE else f"decoys: none ({mode} mode)")
    log.append(f"sealed checks: {', '.join(sorted(seal.check.key for seal in sealing.seals)) or 'none'}")
    integrity, chance = _integrity(sealing, sealed, planting) if mode == GRADE else ("", 1.0)
    if mode == GRADE:
        log.append(f"integrity: {integrity} (chance bound {chance:.4f})")
    unprotected = _unprotected(task, sealing, sealed)
    # What the code under test can read while it runs, the sealed files included: a literal there is no secret
    visible = _scan(sandbox, workdir, _needles(sealed)) if mode == LEARN else set()
    report = f"{GRADER_DIR}/report.xml"
    options = [
        "-p", "no:cacheprovider", "-o", "junit_family=xunit1", "-rA", "--continue-on-collection-errors",
        f"--junitxml={report}", *pytest_args,
    ] if runner.junit else []  # fmt: skip
    driver = f"{GRADER_DIR}/driver.py"
    if runner.driver:
        driver = f"{GRADER_DIR}/runner.py"
        sandbox.write_file(driver, runner.driver_source())
    command = runner.command(workdir, driver, files, environment, options)
    run = sandbox.exec(
        command,
        timeout=timeout,
        env={
            "TMPDIR": f"{GRADER_DIR}/tmp",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            "PYTEST_ADDOPTS": "",
            "PYTEST_PLUGINS": "",
            RECORDS_FD_VARIABLE: str(RECORDS_FD),
            **runner.environment(),
        },
        records=MAX_STREAM_BYTES,
    )
    log.append(f"$ {command.partition(' && ')[2] or command}\n[exit {run.exit_code}"
               f"{', timed out' if run.timed_out else ''}]\n{run.output[-30_000:]}")  # fmt: skip
    if run.records is None:
        raise GradingError(f"the {type(sandbox).__name__} gave the test run no record stream")
    stream = run.records
    if run.timed_out or run.interrupted:  # killed, maybe in the middle of a line: that line never ended
        stream = stream[: stream.rfind(b"\n") + 1]
    try:
        streamed = read_stream(stream, run.records_cut)
    except StreamError as error:
        log.append(f"record stream: {error}")
        return _unsealed(_result(
            task, filtered.diff, {}, reward, log, start,
            rejection=f"the test run cannot be trusted: {error}, so it was not written by the runner alone",
        ))  # fmt: skip
    reported: dict[str, str] | None = None
    if runner.junit:
        try:
            reported = junit_outcomes(_read_report(sandbox, report))
        except (OSError, FileTooLargeError, JUnitReportError) as error:
            if run.timed_out:
                reason = "timed out"
            else:
                reason = f"wrote no readable report (exit {run.exit_code}: {_cause(run.output) or error})"
            return _unsealed(
                _result(task, filtered.diff, {}, reward, log, start, rejection=f"the test run {reason}")
            )
    elif run.timed_out and not streamed.finished:
        return _unsealed(
            _result(task, filtered.diff, {}, reward, log, start, rejection="the test run timed out")
        )
    log.append(f"record stream: {streamed.tests} test(s), {len(streamed.records)} sealed record(s)"
               f"{'' if streamed.finished else ', no end line'}")  # fmt: skip
    if not streamed.finished:
        return _unsealed(_result(
            task, filtered.diff, {}, reward, log, start,
            rejection="the test run did not finish: its record stream has no end line (the session never "
            f"ended, or the run cut the stream){', yet it left a report' if runner.junit else ''}"
            f" (exit {run.exit_code}: {_cause(run.output) or 'no error line'})",
        ))  # fmt: skip
    differs = cross_check(streamed, reported) if reported is not None else None
    if differs is not None:
        log.append(f"JUnit report against the record stream: {differs}")
        return _unsealed(_result(
            task, filtered.diff, {}, reward, log, start,
            rejection=f"the test run cannot be trusted: {differs}; a report whose tests ended in an order or "
            "number the host did not see was not written by pytest alone",
        ))  # fmt: skip
    outcomes = streamed.outcomes
    if mode == PROBE:  # which copies the gold patch (or the bug, with no diff) fails is what is learned
        found = match_outcomes(expected, named_back(sealing, planting, outcomes, [])[0])
        grade = _result(task, filtered.diff, found, reward, log, start)
        fixed = bool(diff.strip())
        if fixed and not grade.resolved:
            return grade, {}
        return grade, decoy_inputs.learned(planting.probes, outcomes, fixed)
    left_out = missing(planting.groups, outcomes)
    if left_out:
        log.append("decoys missing from the report: " + "; ".join(left_out))
        return _unsealed(_result(
            task, filtered.diff, {}, reward, log, start,
            rejection="the test run cannot be trusted: its report leaves out decoys the grader planted "
            "beside tests it reports, so it was not written by pytest alone",
        ))  # fmt: skip
    answered = violations(planting.groups, outcomes)
    if answered:
        log.append("decoys that passed where their original passed: " + "; ".join(answered))
        return _unsealed(_result(
            task, filtered.diff, {}, reward, log, start,
            rejection="the test run cannot be trusted: a decoy the grader planted (a copy of one of the "
            "task's tests with an expectation no correct code meets) passed where its original passed, so "
            "the code under test answered the test calling it, or changed how outcomes are reported",
        ))  # fmt: skip
    outcomes, records = named_back(sealing, planting, outcomes, streamed.records if sealing.seals else [])
    # Calibrating, the checks held in the process (the gold patch is the task's own): the records only say
    # which of them can be sealed. Otherwise a case passes only where its sealed checks held outside.
    matched: dict[str, list[str]] = {}
    found = match_outcomes(expected, outcomes, matched)
    if calibrating:
        task_cases = {case for raw in task.fail_to_pass for case in matched.get(raw, [])}
        sealable = seals.calibrated(sealing.seals, records, outcomes, task_cases)
        return _result(task, filtered.diff, found, reward, log, start), sealable
    if mode == LEARN:
        holding = seals.holding(sealing.seals, records, sealed)
        learned: dict[str, dict[str, object]] = {
            seal.check.key: {"bug_fails": seal.check.key not in holding, "visible": sorted(visible)}
            for seal in sealing.seals
        }
        return _result(task, filtered.diff, found, reward, log, start), learned
    for raw, why in seals.judge(sealing.seals, records, outcomes, matched, sealed).items():
        if found.get(raw) == "passed":
            log.append(f"{raw}: reported passed, but {why}")
            found[raw] = "failed"
    return _result(
        task, filtered.diff, found, reward, log, start, integrity=integrity, chance=chance,
        unprotected=unprotected,
    ), {}  # fmt: skip


def named_back(
    sealing: seals.Sealing,
    planting: Planting,
    outcomes: Mapping[str, str],
    records: Sequence[seals.Record],
) -> tuple[dict[str, str], list[seals.Record]]:
    """A run's outcomes and records under the task's names: a renamed original's under its own name again (a
    decoy's, copies of its sealed checks, go), then a sealed table's cases named as pytest would have named
    them (their ids are the grader's tokens)."""
    restored = [
        replace(record, case=name)
        for record in records
        if (name := restored_name(planting.groups, record.case)) is not None
    ]
    return sealing.named(restore(planting.groups, outcomes)), sealing.named_records(restored)


def _read_report(sandbox: Sandbox, path: str) -> bytes:
    """What the run wrote at ``path``. It can leave anything there; what is not a readable file is an
    OSError here (the submission's doing), while a sandbox that died stays a SandboxCrashedError."""
    try:
        return sandbox.read_file(path, max_bytes=MAX_REPORT_BYTES)
    except (SandboxCrashedError, FileTooLargeError):
        raise
    except SandboxError as error:
        raise OSError(str(error)) from None


def _unsealed(grade: Grade) -> tuple[Grade, dict[str, dict[str, object]]]:
    """A grade that ended before the run was read: no check can be sealed from it."""
    return grade, {}


def _integrity(
    sealing: seals.Sealing, facts: Mapping[str, seals.Facts], planting: Planting
) -> tuple[str, float]:
    """What stands between a forged report and the reward, and the chance bound of a forger that cannot tell
    a decoy group's members apart: "sealed" (0) when a FAIL_TO_PASS check is sealed that protects it
    (`seals.protective`): then no report or record the run writes earns the reward without that value
    computed right; "decoys" when the decoys' chance bound is at most `TARGET_CHANCE`; else "unprotected"."""
    if any(seals.protective(seal.check, facts.get(seal.check.key)) for seal in sealing.seals):
        return "sealed", 0.0
    return ("decoys" if planting.chance <= TARGET_CHANCE else "unprotected"), planting.chance


def _unprotected(task: SWETask, sealing: seals.Sealing, facts: Mapping[str, seals.Facts]) -> set[str]:
    """The FAIL_TO_PASS ids without a protective sealed check of their own: a fraction of the tests counts
    them only in a grade that resolved the task (which every protection of the grade then let through)."""
    protected = {
        seal.check.node for seal in sealing.seals if seals.protective(seal.check, facts.get(seal.check.key))
    }
    return {raw for raw in task.fail_to_pass if parse_test_id(raw).node not in protected}


def _files_of(ids: Sequence[str]) -> list[str]:
    """The files of the tests (node ids) ``ids``."""
    return sorted({t.file for t in map(parse_test_id, ids) if t.file})


def _read_tests(sandbox: Sandbox, files: Sequence[str], workdir: str) -> dict[str, str]:
    """The test files ``files`` as they are in ``sandbox`` ("" for one that is not there)."""
    found = {}
    for path in files:
        try:
            data = sandbox.read_file(f"{workdir}/{path}", max_bytes=MAX_TEST_FILE_BYTES)
        except (FileNotFoundError, IsADirectoryError, FileTooLargeError):
            data = b""
        found[path] = data.decode("utf-8", errors="surrogateescape")
    return found


def _seal_and_plant(
    sandbox: Sandbox,
    task: SWETask,
    workdir: str,
    sealed: Mapping[str, seals.Facts],
    calibrating: bool,
    decoys: bool,
    pristine: Mapping[str, str] | None = None,
    inputs: Mapping[str, Any] | None = None,
    probing: bool = False,
) -> tuple[seals.Sealing, Planting]:
    """`seal_and_plant` the test files of the task's FAIL_TO_PASS tests in ``sandbox``, as the test patch left
    them, with tokens and decoys drawn afresh for every grade."""
    added: dict[str, set[str]] = {}
    for part in split_diff(task.test_patch):
        if part.new_path is not None:
            lines = part.text.splitlines()
            added[part.new_path] = {
                line[1:].strip() for line in lines if line[:1] == "+" and line[:3] != "+++"
            }
    sources: dict[str, str] = {}
    for path in sorted({t.file for t in map(parse_test_id, task.fail_to_pass) if t.file}):
        try:
            data = sandbox.read_file(f"{workdir}/{path}", max_bytes=MAX_TEST_FILE_BYTES)
        except (FileNotFoundError, IsADirectoryError, FileTooLargeError):
            continue
        sources[path] = data.decode("utf-8", errors="surrogateescape")
    rng = random.Random(secrets.randbits(64))
    known = [*task.fail_to_pass, *task.pass_to_pass]
    sealing, planting, changed = seal_and_plant(
        sources, task.fail_to_pass, known, sealed, calibrating, rng, added, decoys,
        public=f"{task.problem_statement}\n{task.hints_text}", pristine=pristine, inputs=inputs,
        probing=probing,
    )  # fmt: skip
    for path, text in changed.items():
        sandbox.write_file(f"{workdir}/{path}", text.encode("utf-8", "surrogateescape"))
    return sealing, planting


def seal_and_plant(
    sources: Mapping[str, str],
    fail_to_pass: Sequence[str],
    known: Sequence[str],
    sealed: Mapping[str, seals.Facts],
    calibrating: bool,
    rng: random.Random,
    added: Mapping[str, set[str]] | None = None,
    decoys: bool = True,
    public: str = "",
    pristine: Mapping[str, str] | None = None,
    inputs: Mapping[str, Any] | None = None,
    probing: bool = False,
) -> tuple[seals.Sealing, Planting, dict[str, str]]:
    """Seal the checks named in ``sealed`` (all that could be, ``calibrating``), then plant decoys beside the
    FAIL_TO_PASS tests without a protective sealed check (`seals.protective`; none, calibrating: the gold
    patch is the task's own, or without ``decoys``). ``sources``: the test files (path -> text); ``known``:
    all the task's test ids; ``added``: per file, the lines the test patch added; ``inputs``: the input
    leaves calibrated for decoys (`decoy_inputs`). ``probing``: plant the copies that calibrate them instead
    of decoys (`decoys.probe`). Returns the sealing, the planting and the files' new texts."""
    targets = [parse_test_id(raw) for raw in fail_to_pass]
    sealing = seals.Sealing()
    if seals.SEAL_CHECKS and (sealed or calibrating):
        checks = [c for c in seals.candidates(sources, targets, known) if calibrating or c.key in sealed]
        sealing = seals.seal(sources, checks, rng, calibrating)
    changed = dict(sealing.sources)
    planting = Planting()
    if (decoys or probing) and not calibrating:
        sealed_tests = {
            seal.check.node
            for seal in sealing.seals
            if seals.protective(seal.check, sealed.get(seal.check.key))
        }
        unsealed = [target for target in targets if target.node not in sealed_tests]
        if probing:
            planting = probe({**sources, **changed}, unsealed, rng, added, public=public, pristine=pristine)
        else:
            planting = plant({**sources, **changed}, unsealed, rng, added, public=public, pristine=pristine,
                             inputs=inputs)  # fmt: skip
        changed.update(planting.sources)
    return sealing, planting, changed


def _copies(planting: Planting) -> int:
    return sum(len(copies) for _, _, copies in planting.probes)


def _describe(planting: Planting) -> str:
    """The grade log's line about the decoys (the log is never shown to the agent)."""
    if not planting.groups:
        why = "; ".join(planting.notes) or "every FAIL_TO_PASS test has a strong sealed check"
        return f"decoys: none planted ({why})"
    groups = [
        f"{group.node(group.original)} -> {group.kind}{' (protective)' if group.protective else ''}"
        f"{' (new check)' if group.new else ''}, "
        f"{len(group.members) - 1} decoy(s), original planted as {group.members[group.original_index]}"
        for group in planting.groups
    ]
    return "decoys: " + "; ".join(groups + planting.notes)


_CAUSE = re.compile(
    r"^(?:E\s+)?(?:\w+\.)*\w*(?:Error|Exception|Warning)\b.*$|^ERROR: .*$|^INTERNALERROR> .*$", re.M
)


def _cause(output: str) -> str | None:
    """The line of a test run's output that says why it stopped (the last error line), if any."""
    found = _CAUSE.findall(output[-30_000:])
    return found[-1].strip()[:500] if found else None


def _unexpected_changes(
    sandbox: Sandbox, workdir: str, pristine: dict[str, Entry], kept: Collection[str]
) -> list[str]:
    """Paths that differ from the pristine tree but are not among the ``kept`` ones."""
    changed = compare(pristine, manifest(sandbox, workdir)).paths
    return [path for path in changed if path not in set(kept)]


COMPILED_SUFFIXES = (
    ".c",
    ".cc",
    ".cpp",
    ".cxx",
    ".h",
    ".hh",
    ".hpp",
    ".pyx",
    ".pxd",
    ".pxi",
    ".f",
    ".f90",
    ".cu",
)
"""Sources a build compiles: a change to one takes effect only once the task's ``rebuild`` commands ran."""
REBUILD_TIMEOUT = 1800.0


def _rebuild(
    sandbox: Sandbox, task: SWETask, workdir: str, kept: Sequence[str], timeout: float, log: list[str]
) -> str | None:
    """Build again what the install built, where the agent's diff (its ``kept`` paths) changes a compiled
    source and the task's environment says how (``rebuild``); None when that went well or was not needed,
    else why the diff does not build (the submission fails: the tests would run the old build)."""
    compiled = [path for path in kept if path.lower().endswith(COMPILED_SUFFIXES)]
    if not compiled:
        return None
    commands = task.environment.rebuild
    if not commands:
        log.append(f"compiled sources changed ({', '.join(compiled[:5])}), but the task's environment has no "
                   "rebuild commands: the tests run the prepared build")  # fmt: skip
        return None
    deadline = time.monotonic() + timeout
    for command in commands:
        left = deadline - time.monotonic()
        result = sandbox.exec(f"cd {shlex.quote(workdir)} && {command}", timeout=max(1.0, left))
        ended = f"exit {result.exit_code}{', timed out' if result.timed_out else ''}"
        log.append(f"rebuild: $ {command}\n[{ended}]\n{result.output[-5000:]}")
        if not result.ok:
            how = "took longer than its limit" if result.timed_out else f"failed (exit {result.exit_code})"
            cause = _cause(result.output) or result.output.strip()[-300:]
            return (
                f"the diff changes compiled sources ({', '.join(compiled[:3])}) and rebuilding them {how}: "
                + (f"`{command}`: {cause}")
            )
    return None


def _apply(sandbox: Sandbox, patch_file: str, workdir: str, fallback: bool) -> str | None:
    """Apply a patch with git (or, for the task's own test patch, with patch(1) where git refuses); None
    when it applied, else why not. The agent's diff gets git alone: patch(1) reads diffs its own way."""
    quoted = shlex.quote(workdir)
    result = sandbox.exec(f"cd {quoted} && git apply --whitespace=nowarn {patch_file}", timeout=300)
    if result.ok:
        return None
    if fallback:
        again = sandbox.exec(
            f"cd {quoted} && patch --batch --forward --no-backup-if-mismatch -p1 -i {patch_file}", timeout=300
        )
        if again.ok:
            return None
    return (result.stderr or result.stdout).strip()[-2000:]


def _result(
    task: SWETask,
    diff: str,
    matched: dict[str, str],
    reward: str,
    log: list[str],
    start: float,
    rejection: str | None = None,
    integrity: str = "",
    chance: float | None = None,
    unprotected: Collection[str] = (),
) -> Grade:
    expected = list(dict.fromkeys(list(task.fail_to_pass) + list(task.pass_to_pass)))
    tests = tuple(TestResult(name, matched.get(name, "not_run")) for name in expected)
    resolved = rejection is None and all(test.passed for test in tests)
    # A fraction pays a FAIL_TO_PASS test that only decoys (or nothing) protect only when the task resolved:
    # a forger that passed one group's original by chance earns nothing for it.
    paid = (
        tests
        if resolved
        else tuple(
            replace(test, outcome="failed") if test.name in unprotected and test.passed else test
            for test in tests
        )
    )
    return Grade(
        tests=tests,
        resolved=resolved,
        reward=reward_for(resolved, paid, reward) if rejection is None else 0.0,
        chance=chance,
        groups={"FAIL_TO_PASS": tuple(task.fail_to_pass), "PASS_TO_PASS": tuple(task.pass_to_pass)},
        rejection=rejection,
        log="\n".join(log)[-60_000:],
        diff=diff,
        duration=time.monotonic() - start,
        integrity=integrity,
    )
