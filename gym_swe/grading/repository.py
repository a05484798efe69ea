"""Grading a repository task from the agent's diff, in a fresh sandbox, by FAIL_TO_PASS and PASS_TO_PASS.

1. The grading sandbox holds the pristine checkout. Before anything changes in it, the grader probes its
   environment (`pytest_driver` probe: pytest, the pytest11 plugins installed, the module names a new file
   must not shadow) and takes its manifest (`changes.manifest`).
2. Changes to protected paths are dropped from the diff (`diffs.filter_diff`); the rest is applied with
   ``git apply``, and its effect is checked: only the paths the filter kept may differ from the pristine
   tree afterwards, so a diff that reads differently to git than to the filter is rejected.
3. The test patch is applied, canary tests are planted among the task's tests (`canaries`), and the test
   files of FAIL_TO_PASS and PASS_TO_PASS run under pytest through `pytest_driver`: pytest and its plugins
   imported from the environment before the workspace is on ``sys.path``, plugin autoloading off, a fresh
   TMPDIR and a timeout.
4. Outcomes are read per test from pytest's JUnit XML report (never from stdout) and matched back to the
   dataset's ids with their quirks (`test_ids`). Unless every canary came out as planted, the run is not
   trusted and the submission is rejected.
5. Resolved when every FAIL_TO_PASS and PASS_TO_PASS test passed; a test that did not run fails, and skipped
   is not passed.

A submission the grader cannot trust or cannot apply is *rejected* (``Grade.rejection``): scored 0, like any
failure, because it is the agent's doing; ``Grade.error`` is kept for a grader that could not do its job.
"""

from __future__ import annotations

import json
import random
import secrets
import shlex
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gym_swe.errors import FileTooLargeError, GradingError
from gym_swe.grading.base import Grade, TestResult, reward_for
from gym_swe.grading.canaries import Canary, plant
from gym_swe.grading.changes import Entry, compare, manifest
from gym_swe.grading.diffs import filter_diff
from gym_swe.grading.test_ids import (
    JUnitReportError,
    files_to_run,
    junit_outcomes,
    match_outcomes,
    parse_test_id,
    unsupported,
)
from gym_swe.sandbox.base import Sandbox
from gym_swe.tasks.swe import SWETask

GRADER_DIR = "/tmp/gym_swe_grader"
DRIVER_SOURCE = Path(__file__).with_name("pytest_driver.py").read_bytes()
MAX_REPORT_BYTES = 64 * 1024 * 1024
MAX_TEST_FILE_BYTES = 8 * 1024 * 1024
# Besides the files of FAIL_TO_PASS, canaries go into the classes of this many PASS_TO_PASS tests.
EXTRA_CANARY_CLASSES = 3


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


def probe_environment(sandbox: Sandbox, workdir: str) -> Environment:
    """Probe the task's python in ``sandbox``, which must be pristine (nothing of the agent's applied)."""
    sandbox.write_file(f"{GRADER_DIR}/driver.py", DRIVER_SOURCE)
    run = sandbox.exec(
        f"cd {shlex.quote(workdir)} && python {GRADER_DIR}/driver.py probe {shlex.quote(workdir)}",
        timeout=300,
        max_output=16 * 1024 * 1024,
    )
    try:
        report = json.loads(run.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise GradingError(
            f"could not probe the task's python (exit {run.exit_code}): {run.output.strip()[-1500:]}"
        ) from None
    if not report.get("pytest"):
        raise GradingError(f"the task's environment has no usable pytest: {report.get('error')}")
    return Environment(
        python=str(report["python"]),
        pytest=str(report["pytest"]),
        plugins=tuple(module for _, module in report["plugins"]),
        shadowable=frozenset(report["shadowable"]),
        editable={str(path): frozenset(names) for path, names in report.get("editable", {}).items()},
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
) -> Grade:
    """Grade ``diff`` for ``task`` in ``sandbox``, which must hold the pristine checkout at ``workdir``.

    ``environment`` and ``pristine`` (its manifest) are probed here unless given; a caller that took them
    already, before the sandbox changed, passes them in.
    """
    start = time.monotonic()
    expected = list(task.fail_to_pass) + list(task.pass_to_pass)
    foreign = unsupported(expected)
    if foreign:
        raise GradingError(
            f"{task.instance_id}: {len(foreign)} test id(s) are not pytest node ids (e.g. {foreign[0]!r}); "
            "gym_swe runs repository tests with pytest only"
        )
    if environment is None:
        environment = probe_environment(sandbox, workdir)
    if pristine is None:
        pristine = manifest(sandbox, workdir)
    filtered = filter_diff(diff, task.test_patch, environment.shadowable, environment.editable)
    log = [f"python {environment.python}, pytest {environment.pytest}, plugins: "
           f"{', '.join(environment.plugins) or '-'}",
           f"agent diff: {len(filtered.kept)} file(s) kept: {', '.join(filtered.kept) or '-'}"]  # fmt: skip
    log += [f"dropped {path}: {reason}" for path, reason in filtered.dropped]

    sandbox.exec(f"rm -rf {GRADER_DIR}/tmp {GRADER_DIR}/*.diff && mkdir -p {GRADER_DIR}/tmp", timeout=60)
    if filtered.diff.strip():
        sandbox.write_file(f"{GRADER_DIR}/agent.diff", filtered.diff.encode("utf-8", "surrogateescape"))
        applied = _apply(sandbox, f"{GRADER_DIR}/agent.diff", workdir, fallback=False)
        if applied is not None:
            log.append(applied)
            rejection = f"the agent's diff does not apply: {applied}"
            return _result(task, filtered.diff, {}, reward, log, start, rejection=rejection)
        stray = _unexpected_changes(sandbox, workdir, pristine, filtered.kept)
        if stray:
            return _result(
                task, filtered.diff, {}, reward, log, start,
                rejection=f"the diff changed {', '.join(stray[:5])}, which the filter did not keep: it reads "
                "differently to git apply than to the grader",
            )  # fmt: skip
    sandbox.write_file(f"{GRADER_DIR}/test.diff", task.test_patch.encode("utf-8", "surrogateescape"))
    applied = _apply(sandbox, f"{GRADER_DIR}/test.diff", workdir, fallback=True)
    if applied is not None:
        raise GradingError(f"{task.instance_id}: the test patch does not apply to base_commit: {applied}")

    files = files_to_run(expected)
    canaries = _plant_canaries(sandbox, task, workdir, files, environment.shadowable)
    report = f"{GRADER_DIR}/report.xml"
    pytest_options = [
        "-p", "no:cacheprovider", "-o", "junit_family=xunit1", "-rA", "--continue-on-collection-errors",
        f"--junitxml={report}", *pytest_args, *files,
    ]  # fmt: skip
    command = (
        f"cd {shlex.quote(workdir)} && python {GRADER_DIR}/driver.py run {shlex.quote(workdir)} "
        f"{shlex.quote(','.join(environment.plugins))} -- {' '.join(map(shlex.quote, pytest_options))}"
    )
    run = sandbox.exec(
        command,
        timeout=timeout,
        env={
            "TMPDIR": f"{GRADER_DIR}/tmp",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            "PYTEST_ADDOPTS": "",
            "PYTEST_PLUGINS": "",
        },
    )
    log.append(f"$ pytest {' '.join(pytest_options)}\n[exit {run.exit_code}"
               f"{', timed out' if run.timed_out else ''}]\n{run.output[-30_000:]}")  # fmt: skip
    try:
        outcomes = junit_outcomes(sandbox.read_file(report, max_bytes=MAX_REPORT_BYTES))
    except (FileNotFoundError, FileTooLargeError, JUnitReportError) as error:
        reason = "timed out" if run.timed_out else f"wrote no readable report ({error})"
        return _result(task, filtered.diff, {}, reward, log, start, rejection=f"the test run {reason}")
    planted = {canary.node_id: canary.expected for canary in canaries}
    came_out = match_outcomes(list(planted), outcomes)
    if came_out != planted or run.exit_code == 0:
        log.append(f"canaries: {json.dumps(planted)} came out {json.dumps(came_out)}")
        return _result(
            task, filtered.diff, {}, reward, log, start,
            rejection="the test run cannot be trusted: the grader's canary tests did not come out as planted "
            "(code under test changed how outcomes are reported, or the test files did not run)",
        )  # fmt: skip
    names = {"::" + node_id.rsplit("::", 1)[1] for node_id in planted}
    outcomes = {key: outcome for key, outcome in outcomes.items() if not key.endswith(tuple(names))}
    return _result(task, filtered.diff, match_outcomes(expected, outcomes), reward, log, start)


def _plant_canaries(
    sandbox: Sandbox, task: SWETask, workdir: str, files: list[str], installed: Collection[str]
) -> list[Canary]:
    """Plant canaries beside the FAIL_TO_PASS tests (and a few PASS_TO_PASS classes); returns them."""
    rng = random.Random(secrets.randbits(64))  # drawn afresh for every grade
    targets = [parse_test_id(raw) for raw in task.fail_to_pass]
    classes = [parse_test_id(raw) for raw in task.pass_to_pass if parse_test_id(raw).node]
    classes = [test for test in classes if test.node and test.node.count("::") == 2]
    targets += rng.sample(classes, min(EXTRA_CANARY_CLASSES, len(classes)))
    sources: dict[str, str] = {}
    for path in sorted({t.file for t in targets if t.file}):
        try:
            data = sandbox.read_file(f"{workdir}/{path}", max_bytes=MAX_TEST_FILE_BYTES)
        except (FileNotFoundError, IsADirectoryError, FileTooLargeError):
            continue
        sources[path] = data.decode("utf-8", errors="surrogateescape")
    planting = plant(sources, targets, rng, installed)
    if not planting.canaries:
        raise GradingError(
            f"{task.instance_id}: found no test file to plant the grader's canaries in ({files})"
        )
    for path, text in planting.sources.items():
        sandbox.write_file(f"{workdir}/{path}", text.encode("utf-8", "surrogateescape"))
    return planting.canaries


def _unexpected_changes(
    sandbox: Sandbox, workdir: str, pristine: dict[str, Entry], kept: Collection[str]
) -> list[str]:
    """Paths that differ from the pristine tree but are not among the ``kept`` ones."""
    changed = compare(pristine, manifest(sandbox, workdir)).paths
    return [path for path in changed if path not in set(kept)]


def _apply(sandbox: Sandbox, patch_file: str, workdir: str, fallback: bool) -> str | None:
    """Apply a patch with git (or, for the task's own test patch, with patch(1) where git refuses); None
    when it applied, else why not. The agent's diff gets git alone: patch(1) reads diffs its own way."""
    quoted = shlex.quote(workdir)
    result = sandbox.exec(f"cd {quoted} && git apply --whitespace=nowarn {patch_file}", timeout=300)
    if result.ok:
        return None
    if fallback:
        again = sandbox.exec(f"cd {quoted} && patch --batch --forward -p1 -i {patch_file}", timeout=300)
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
) -> Grade:
    expected = list(dict.fromkeys(list(task.fail_to_pass) + list(task.pass_to_pass)))
    tests = tuple(TestResult(name, matched.get(name, "not_run")) for name in expected)
    resolved = rejection is None and all(test.passed for test in tests)
    return Grade(
        tests=tests,
        resolved=resolved,
        reward=reward_for(resolved, tests, reward) if rejection is None else 0.0,
        groups={"FAIL_TO_PASS": tuple(task.fail_to_pass), "PASS_TO_PASS": tuple(task.pass_to_pass)},
        rejection=rejection,
        log="\n".join(log)[-60_000:],
        diff=diff,
        duration=time.monotonic() - start,
    )
