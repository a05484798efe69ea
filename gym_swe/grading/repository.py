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

This module is the grade itself; its parts live beside it: `environment` (the probe of step 1), `patching`
(applying a diff, checking its effect, rebuilding compiled sources: step 2), `guards` (sealing checks and
planting decoys, step 3, and naming the run back) and `calibration` (what the gold patch teaches the grades,
learned by grading in a learning mode).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

from gym_swe.errors import FileTooLargeError, GradingError, SandboxCrashedError, SandboxError
from gym_swe.grading import decoy_inputs, seals
from gym_swe.grading.base import Grade, TestResult, reward_for
from gym_swe.grading.changes import Entry, manifest
from gym_swe.grading.decoy_report import missing, violations
from gym_swe.grading.diffs import filter_diff
from gym_swe.grading.environment import DRIVER_SOURCE, GRADER_DIR, Environment, probe_environment, scan
from gym_swe.grading.guards import (
    MAX_TEST_FILE_BYTES,
    describe_planting,
    grade_integrity,
    named_back,
    needles,
    probe_copies,
    seal_and_plant_in_sandbox,
    unprotected_ids,
)
from gym_swe.grading.outcome_stream import (
    MAX_STREAM_BYTES,
    RECORDS_FD,
    RECORDS_FD_VARIABLE,
    StreamError,
    cross_check,
    read_stream,
)
from gym_swe.grading.patching import REBUILD_TIMEOUT, apply, cause_of, rebuild, unexpected_changes
from gym_swe.grading.runners import runner_named
from gym_swe.grading.test_ids import (
    JUnitReportError,
    junit_outcomes,
    match_outcomes,
    parse_test_id,
)
from gym_swe.sandbox.base import Sandbox
from gym_swe.tasks.swe import SWETask

MAX_REPORT_BYTES = 64 * 1024 * 1024


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
    return grade_in_mode(
        sandbox, task, diff, reward, timeout, workdir, pytest_args, environment, pristine, sealed or {},
        GRADE, inputs,
    )[0]  # fmt: skip


GRADE, CALIBRATE, LEARN, PROBE = "grade", "calibrate", "learn", "probe"
"""`grade_in_mode`'s modes: an agent's diff; the gold patch, learning which checks can be sealed; no patch at
all, learning which sealed checks the bug fails; the gold patch with the checks sealed as a grade seals them,
learning which values of the tests' input literals it fails (`decoy_inputs`)."""


def grade_in_mode(
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
        applied = apply(sandbox, f"{GRADER_DIR}/agent.diff", workdir, fallback=False)
        if applied is not None:
            log.append(applied)
            rejection = f"the agent's diff does not apply: {applied}"
            return _unsealed(_result(task, filtered.diff, {}, reward, log, start, rejection=rejection))
        stray = unexpected_changes(sandbox, workdir, pristine, filtered.kept)
        if stray:
            return _unsealed(_result(
                task, filtered.diff, {}, reward, log, start,
                rejection=f"the diff changed {', '.join(stray[:5])}, which the filter did not keep: it reads "
                "differently to git apply than to the grader",
            ))  # fmt: skip
        failed = rebuild(sandbox, task, workdir, filtered.kept, min(timeout, REBUILD_TIMEOUT), log)
        if failed is not None:
            return _unsealed(_result(task, filtered.diff, {}, reward, log, start, rejection=failed))
    # What the agent saw of the test files (the agent's diff never changes them): a decoy's value must be
    # written there exactly where its original's is.
    target_files = _files_of(task.fail_to_pass) if runner.name == "pytest" else files
    pristine_tests = _read_tests(sandbox, target_files, workdir) if mode in (GRADE, PROBE) else {}
    sandbox.write_file(f"{GRADER_DIR}/test.diff", task.test_patch.encode("utf-8", "surrogateescape"))
    applied = apply(sandbox, f"{GRADER_DIR}/test.diff", workdir, fallback=True)
    if applied is not None:
        raise GradingError(f"{task.instance_id}: the test patch does not apply to base_commit: {applied}")
    # Nothing of what grading was given stays where the test run could read it: the test patch would show
    # which of the tests it finds are the task's own and which are decoys.
    sandbox.exec(f"rm -f {GRADER_DIR}/agent.diff {GRADER_DIR}/test.diff", timeout=60)
    if runner.name != "pytest":  # from here on the task's tests are named by node ids
        task = _node_named(task, runner.node_ids(expected, _read_tests(sandbox, files, workdir)), names)
        expected = list(task.fail_to_pass) + list(task.pass_to_pass)

    sealing, planting = seal_and_plant_in_sandbox(
        sandbox, task, workdir, sealed, calibrating, decoys=mode == GRADE, pristine=pristine_tests,
        inputs=inputs, probing=mode == PROBE,
    )  # fmt: skip
    if mode == PROBE:
        log.append(f"probes: {len(planting.probes)} input leaf/leaves, {probe_copies(planting)} copies")
    log.append(describe_planting(planting) if mode == GRADE else f"decoys: none ({mode} mode)")
    log.append(f"sealed checks: {', '.join(sorted(seal.check.key for seal in sealing.seals)) or 'none'}")
    integrity, chance = grade_integrity(sealing, sealed, planting) if mode == GRADE else ("", 1.0)
    if mode == GRADE:
        log.append(f"integrity: {integrity} (chance bound {chance:.4f})")
    unprotected = unprotected_ids(task, sealing, sealed)
    # What the code under test can read while it runs, the sealed files included: a literal there is no secret
    visible = scan(sandbox, workdir, needles(sealed)) if mode == LEARN else set()
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
                reason = f"wrote no readable report (exit {run.exit_code}: {cause_of(run.output) or error})"
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
            f" (exit {run.exit_code}: {cause_of(run.output) or 'no error line'})",
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
