"""`gym-swe validate` and `gym-swe prepare` on records of a repository built here: each way a task can be
invalid is reported with what went wrong and what to do; junk ids and excluded tests are reported; the JSON
report has every test's outcome and the log tails."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from gym_swe.cli import main
from gym_swe.grading.base import Grade
from gym_swe.grading.base import TestResult as Outcome
from gym_swe.tasks.swe import load_swe_tasks
from gym_swe.validate import Progress, diagnose, validate
from tests.conftest import require_bwrap
from tests.tasks.local_repos import World, record, verpkg_world, write_records

NETWORK_TEST = "tests/test_pkg.py::test_download"
PASS_TO_PASS = [
    "tests/test_pkg.py::test_version_from_the_record",
    "tests/test_pkg.py::test_installed_metadata",
    "tests/test_pkg.py::test_generated_module",
]
BAD_TEST_PATCH = """diff --git a/tests/test_pkg.py b/tests/test_pkg.py
--- a/tests/test_pkg.py
+++ b/tests/test_pkg.py
@@ -1,3 +1,3 @@
-import this_line_is_not_there
+import nor_this_one
 import socket
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    require_bwrap()
    with verpkg_world(tmp_path_factory.mktemp("validate")) as built:
        yield built


@pytest.fixture(scope="module")
def records(world: World) -> Path:
    """One record per way a task can fare; all share one prepared environment (same commit and spec)."""
    base, gold, tests = world.base, world.gold, world.test_patch
    p2p = lambda *extra: json.dumps([*PASS_TO_PASS, *extra])  # noqa: E731
    rows = [
        record("valid", base, gold, tests),
        record("needs-network", base, gold, tests, PASS_TO_PASS=p2p(NETWORK_TEST)),
        record("network-excluded", base, gold, tests, PASS_TO_PASS=p2p(NETWORK_TEST),
               exclude_tests=[NETWORK_TEST]),
        record("network-only", base, gold, tests, FAIL_TO_PASS=json.dumps([NETWORK_TEST])),  # requests-1724
        record("log-fragments", base, gold, tests, PASS_TO_PASS=p2p("[100%]", "[")),
        record("passes-unfixed", base, gold, tests, FAIL_TO_PASS=json.dumps(PASS_TO_PASS[:1])),
        record("test-patch-stale", base, gold, BAD_TEST_PATCH),
        record("django-ids", base, gold, tests, PASS_TO_PASS=p2p("test_x (app.tests.T)")),
        record("no-mirror", base, gold, tests, repo="acme/other"),
        record("no-python", base, gold, tests, environment={"python": "2.1"}),
        record("install-fails", base, gold, tests, environment={"install": ["echo half-built >&2; exit 3"]}),
    ]  # fmt: skip
    return write_records(world.root / "records.jsonl", rows)


@pytest.fixture(scope="module")
def report(world: World, records: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("report") / "report.json"
    code = main(["validate", "--env", "SWEGym-v0", "--tasks", str(records), "--repo-source",
                 str(world.mirrors), "--json", str(out)])  # fmt: skip
    rows = {row["task_id"]: row for row in json.loads(out.read_text())}
    return {"code": code, "rows": rows}


def test_the_valid_task_reports_every_tests_outcome_and_the_logs(report: dict) -> None:
    assert report["code"] == 1  # some records are not valid
    row = report["rows"]["valid"]
    assert row["ok"] and row["problem"] is None and row["fix_failed"] == []
    assert row["tests"]["tests/test_fix.py::test_add"] == {"fix": "passed", "no_fix": "failed"}
    assert row["tests"]["tests/test_pkg.py::test_installed_metadata"] == {"fix": "passed", "no_fix": "passed"}
    assert "passed" in row["fix_log"] and "test_add" in row["no_fix_log"]


def test_a_failing_test_under_the_fix_is_named_with_what_to_do(report: dict) -> None:
    row = report["rows"]["needs-network"]
    assert not row["ok"] and row["fix_resolved"] is False
    assert row["fix_failed"] == [NETWORK_TEST]
    assert f"{NETWORK_TEST} (failed)" in row["problem"] and "--exclude-test" in row["problem"]
    # The cause comes first, named from the log: the test reached for a network the jail does not have.
    assert row["problem"].startswith("the fix does not resolve the task (its tests need the network")
    excluded = report["rows"]["network-excluded"]
    assert excluded["ok"] and excluded["excluded_tests"] == [NETWORK_TEST]
    assert NETWORK_TEST not in excluded["tests"]


def test_log_fragments_are_dropped_with_a_warning_and_reported(report: dict, records: Path, caplog) -> None:
    row = report["rows"]["log-fragments"]
    assert row["ok"] and row["dropped_ids"] == ["[100%]", "["]
    load_swe_tasks.cache_clear()
    with caplog.at_level(logging.WARNING, logger="gym_swe"):
        task = load_swe_tasks(str(records)).get("log-fragments")
    assert "[100%]" not in task.pass_to_pass and task.dropped_ids == ("[100%]", "[")
    assert "log-fragments: dropped 2 id(s)" in caplog.text


@pytest.mark.parametrize(("task_id", "says"), [
    ("needs-network", "did not pass with it"),
    ("network-only", "cannot be graded here: every FAIL_TO_PASS test needs the network (its tests need the"),
    ("passes-unfixed", "resolved without any change"),
    ("test-patch-stale", "the test patch does not apply"),
    ("django-ids", "django-ids: cannot be graded here: 1 test id(s) are not pytest test ids"),
    ("no-mirror", "no mirror of 'acme/other' in"),
    ("no-python", "Python 2.1 is not available here"),
    ("install-fails", "preparing install-fails failed: half-built (exit 3, at `cd /testbed && echo half-built >&2; "
                      "exit 3`)"),
])  # fmt: skip
def test_every_failure_says_what_went_wrong_and_what_to_do(report: dict, task_id: str, says: str) -> None:
    row = report["rows"][task_id]
    assert not row["ok"]
    assert says in row["problem"]
    assert re.search(r"What to do: \S.{20,}", row["problem"]), row["problem"]


def test_validate_cli_prints_problems_in_full_and_per_test_outcomes(
    world: World, records: Path, capsys
) -> None:
    code = main(["validate", "--env", "SWEGym-v0", "--tasks", str(records), "--repo-source", str(world.mirrors),
                 "--task-id", "needs-network", "--task-id", "no-mirror"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1 and "0/2 tasks valid, 2 FAILED" in out
    # No cut: the whole advice is there, the mirror's path included.
    assert "`git clone --mirror https://github.com/acme/other" in out and "--exclude-test ID" in out
    code = main(["validate", "--env", "SWEGym-v0", "--tasks", str(records), "--repo-source", str(world.mirrors),
                 "--task-id", "needs-network", "--exclude-test", NETWORK_TEST, "-v"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "1/1 tasks valid" in out
    assert f"excluded tests: {NETWORK_TEST}" in out
    assert re.search(r"passed with the fix,\s+failed without: tests/test_fix.py::test_add", out)
    assert "--- fix log (tail) ---" in out
    code = main(["validate", "--env", "SWEGym-v0", "--tasks", str(records), "--repo-source", str(world.mirrors),
                 "--exclude-test", "tests/test_pkg.py::test_nothing"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "exclude_tests: ['tests/test_pkg.py::test_nothing'] are not" in err
    assert len(err.strip().splitlines()) == 1


def test_prepare_goes_past_failing_tasks_and_reports_them_all(world: World, capsys) -> None:
    rows = [record("valid", world.base, world.gold, world.test_patch),
            record("no-mirror", world.base, world.gold, world.test_patch, repo="acme/other"),
            record("no-python", world.base, world.gold, world.test_patch, environment={"python": "2.1"}),
            record("django-ids", world.base, world.gold, world.test_patch,
                   FAIL_TO_PASS=json.dumps(["test_x (app.tests.T)"]))]  # fmt: skip
    records = write_records(world.root / "prepare.jsonl", rows)
    code = main(["prepare", "--tasks", str(records), "--repo-source", str(world.mirrors),
                 "--task-id", "no-mirror", "--task-id", "no-python", "--task-id", "valid"])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 1
    assert "prepared 1/3 task(s)" in captured.out and "[3/3] valid: ready (Python " in captured.out
    assert "[1/3] no-mirror: FAILED (no mirror of 'acme/other' in" in captured.out  # as it happens, in short
    # in one line, cut between words
    line = next(line for line in captured.out.splitlines() if line.startswith("[1/3] no-mirror"))
    assert line.endswith(")") and (len(line) < 200 or line.endswith(" …)")), line
    assert "no-mirror: no mirror of 'acme/other'" in captured.err
    assert "no-python: Python 2.1 is not available here" in captured.err
    code = main(
        ["prepare", "--tasks", str(records), "--repo-source", str(world.mirrors), "--task-id", "valid"]
    )
    assert code == 0 and "prepared 1/1" in capsys.readouterr().out
    # a task refused where it loads is listed with the others, and the rest are prepared
    code = main(["prepare", "--tasks", str(records), "--repo-source", str(world.mirrors)])
    out = capsys.readouterr().out
    assert code == 1 and "prepared 1/4 task(s)" in out
    assert "[4/4] django-ids: FAILED (cannot be graded here: 1 test id(s) are not pytest test ids" in out


def test_validate_shows_each_task_in_flight_and_its_verdict_as_it_lands(world: World, records: Path) -> None:
    shown = io.StringIO()
    rows = validate("SWEGym-v0", tasks=str(records), repo_source=str(world.mirrors), workers=1,
                    task_ids=["valid", "needs-network", "no-mirror"], progress=Progress(file=shown))  # fmt: skip
    assert [row["task_id"] for row in rows] == ["valid", "needs-network", "no-mirror"]  # the source's order
    text = shown.getvalue()
    assert "3/3 tasks" in text and "2 FAILED" in text
    assert "valid: grading the fix" in text and "valid: grading no fix" in text  # what is in flight
    lines = [line.strip() for line in text.replace("\r", "\n").splitlines()]
    verdicts = [line for line in lines if re.match(r"[\w-]+: (ok|FAILED) \(", line)]
    assert len(verdicts) == 3, verdicts
    assert re.fullmatch(r"valid: ok \(fix 4/4, no fix 3/4, [\d.]+ s\)", verdicts[0])
    assert re.fullmatch(r"needs-network: FAILED \(fix 4/5, no fix 3/5, [\d.]+ s\): the fix does not resolve "
                        r"the task \(its tests need the network.*", verdicts[1])  # fmt: skip
    assert re.fullmatch(r"no-mirror: FAILED \([\d.]+ s\): no mirror of 'acme/other' in \S+.*", verdicts[2])
    assert "What to do" not in "".join(verdicts)  # the advice is in the report at the end


def grade(rejection: str | None = None, resolved: bool = False, log: str = "") -> Grade:
    tests = (Outcome("tests/test_a.py::test_a", "passed" if resolved else "failed"),)
    return Grade(tests=tests, resolved=resolved, reward=float(resolved), rejection=rejection, log=log)


@pytest.mark.parametrize(("fixed", "says", "blames"), [
    (grade("the agent's diff does not apply: error: patch failed: src/a.py:3"),
     "the fix does not apply: the agent's diff does not apply: error: patch failed: src/a.py:3.",
     "check the record's patch"),
    (grade("the test run cannot be trusted: its report leaves out decoys the grader planted"),
     "the grader rejected a fix that resolves the task (the test run cannot be trusted: ",
     "gym_swe bug, not the task's"),
    (grade("the test run wrote no readable report (Malformed JUnit XML report)"),
     "the grader rejected a fix that resolves the task (the test run wrote no readable report",
     "report it to gym_swe with the log from -v"),
    # What the log shows of why is named: the decoys missing or that passed, the error that ended the run.
    (grade("the test run cannot be trusted", log="decoys missing from the report: t.py::T::test_x"),
     "the grader rejected a fix that resolves the task (the test run cannot be trusted; decoys missing from "
     "the report: t.py::T::test_x)", "gym_swe bug"),
    (grade("the test run cannot be trusted: a decoy the grader planted passed",
           log="decoys that passed where their original passed: t.py::test_a; t.py::test_b; t.py::test_c"),
     "the grader rejected a fix that resolves the task (the test run cannot be trusted: a decoy the grader "
     "planted passed; decoys that passed: t.py::test_a; t.py::test_b; ...)", "gym_swe bug"),
    (grade("the test run wrote no readable report (exit 1: KeyError: 'x')", log="[exit 1]\nKeyError: 'x'"),
     "the grader rejected a fix that resolves the task (the test run wrote no readable report (exit 1: "
     "KeyError: 'x')): that is a gym_swe bug", "gym_swe bug"),
    (grade("the test run wrote no readable report ([Errno 2] No such file)", log="$ pytest -p x\n[exit 1]\n"
           "  raise\npytest.PytestAssertRewriteWarning: Module already imported so cannot be rewritten: xdist"),
     "the grader rejected a fix that resolves the task (the test run wrote no readable report ([Errno 2] No "
     "such file); the log ends: pytest.PytestAssertRewriteWarning: Module already imported so cannot be "
     "rewritten: xdist)", "gym_swe bug"),
    (grade("the test run timed out"), "the test run timed out with the fix", "give them more time"),
    (grade(log="E   socket.gaierror: [Errno -3] Temporary failure in name resolution"),
     "the fix does not resolve the task (its tests need the network, which the sandbox does not have: the "
     "log shows 'Temporary failure in name resolution'): 1 test(s) did not pass with it",
     "--exclude-test"),
    (grade(log="agent diff: 1 file(s) kept: src/a.py\ndropped setup.cfg: test configuration"),
     "the fix does not resolve the task (the grader dropped part of the fix as protected paths, setup.cfg: "
     "test configuration, and ran the tests without it", "if they need it, that is a gym_swe bug"),
    (grade(log="E   assert 1 == 2"), "the fix does not resolve the task: 1 test(s) did not pass with it: "
     "tests/test_a.py::test_a (failed).", "fix the task's environment"),
])  # fmt: skip
def test_a_rejected_or_failing_fix_is_blamed_on_what_caused_it(fixed: Grade, says: str, blames: str) -> None:
    problem = diagnose(fixed, grade())
    assert problem is not None and "\n" not in problem  # one line
    assert problem.startswith(says), problem
    assert blames in problem.split("What to do:")[-1] or blames in problem, problem
    if "does not apply" not in says:
        assert "the gold patch must" not in problem and "leave pytest's reporting alone" not in problem


def test_a_pass_to_pass_test_failing_with_and_without_the_fix_is_blamed_on_the_environment() -> None:
    groups = {"FAIL_TO_PASS": ("t.py::test_fix",), "PASS_TO_PASS": ("t.py::test_sparse", "t.py::test_ok")}

    def graded(**outcomes: str) -> Grade:
        tests = tuple(Outcome(f"t.py::{name}", outcome) for name, outcome in outcomes.items())
        return Grade(tests=tests, resolved=False, reward=0.0, groups=groups)

    fixed = graded(test_fix="passed", test_sparse="failed", test_ok="passed")
    unfixed = graded(test_fix="failed", test_sparse="failed", test_ok="passed")
    problem = diagnose(fixed, unfixed)
    assert problem is not None and problem.startswith(
        "the fix does not resolve the task (the environment: its PASS_TO_PASS test(s) that fail with the fix "
        "fail without it too, so the patch is not what breaks them"
    ), problem
    # A PASS_TO_PASS test the fix breaks is the fix's doing: no such clause.
    unfixed = graded(test_fix="failed", test_sparse="passed", test_ok="passed")
    assert "the environment" not in str(diagnose(fixed, unfixed))


def test_a_test_that_never_ran_with_or_without_the_fix_is_named_as_missing() -> None:
    """django__django-13033 on Django 3.2a1: a PASS_TO_PASS id the release no longer defines is not run in
    either grade; that is no package's fault, and the problem says so."""
    groups = {"FAIL_TO_PASS": ("t.py::test_fix",), "PASS_TO_PASS": ("t.py::test_gone", "t.py::test_ok")}

    def graded(**outcomes: str) -> Grade:
        tests = tuple(Outcome(f"t.py::{name}", outcome) for name, outcome in outcomes.items())
        return Grade(tests=tests, resolved=False, reward=0.0, groups=groups)

    fixed = graded(test_fix="passed", test_gone="not_run", test_ok="passed")
    unfixed = graded(test_fix="failed", test_gone="not_run", test_ok="passed")
    problem = diagnose(fixed, unfixed)
    assert problem is not None and problem.startswith(
        "the fix does not resolve the task (no such test here: it did not run, with the fix or without it"
    ), problem
    assert "the environment" not in problem and "--exclude-test" in problem
    # One that ran without the fix and not with it is no missing test.
    unfixed = graded(test_fix="failed", test_gone="failed", test_ok="passed")
    assert "no such test" not in str(diagnose(fixed, unfixed))


def test_a_run_that_breaks_before_any_test_with_and_without_the_fix_is_the_environment() -> None:
    """sympy__sympy-13043 (sympy 1.1) in a task image of Python 3.11: sympy does not import, so no test runs
    with the gold patch or without it; that is the environment, not a gym_swe bug."""
    why = (
        "the test run did not finish: its record stream has no end line (the session never ended, or the "
        "run cut the stream) (exit 1: ImportError: cannot import name 'Mapping' from 'collections')"
    )
    log = "record stream: 0 test(s), 0 sealed record(s), no end line"
    problem = diagnose(grade(why, log=log), grade(why, log=log))
    assert problem is not None and "\n" not in problem
    assert problem.startswith(
        "the tests cannot start here (the environment: no test ran, with the fix or "
        "without it: the test run did not finish"
    ), problem
    assert "ImportError: cannot import name 'Mapping'" in problem and "gym_swe bug" not in problem
    # A fix whose run broke where the run without it did not is still the grader's to explain.
    ran = grade(log="record stream: 3 test(s), 0 sealed record(s)")
    assert "gym_swe bug" in str(diagnose(grade(why, log=log), ran))
    assert "gym_swe bug" in str(
        diagnose(grade(why, log=log.replace("0 test", "2 test")), grade(why, log=log))
    )


def test_pass_to_pass_tests_missing_or_skipped_both_ways_are_not_blamed_on_a_package() -> None:
    """matplotlib-25433 rebased onto the 3.6.1 release: of the four PASS_TO_PASS tests that did not pass with
    the fix or without it, three that release does not have did not run, and one needing xelatex was skipped;
    "a package newer than the task's date" named none of that. The clause counts each kind."""
    names = ("test_gone_a", "test_gone_b", "test_pgf", "test_sparse")
    groups = {"FAIL_TO_PASS": ("t.py::test_fix",), "PASS_TO_PASS": tuple(f"t.py::{name}" for name in names)}

    def graded(**outcomes: str) -> Grade:
        tests = tuple(Outcome(f"t.py::{name}", outcome) for name, outcome in outcomes.items())
        return Grade(tests=tests, resolved=False, reward=0.0, groups=groups)

    both = {"test_gone_a": "not_run", "test_gone_b": "not_run", "test_pgf": "skipped"}
    problem = diagnose(graded(test_fix="passed", **both), graded(test_fix="failed", **both))
    assert problem is not None and problem.startswith(
        "the fix does not resolve the task (the environment: all 3 PASS_TO_PASS test(s) that fail with the "
        "fix fail without it too, so the patch is not what breaks them; 2 did not run either way (no such test "
        "here); 1 was skipped here): 3 test(s) did not pass with it"
    ), problem
    assert "a package newer" not in problem
    # With one that ran and failed both ways too, the package is named for that one.
    both["test_sparse"] = "failed"
    problem = diagnose(graded(test_fix="passed", **both), graded(test_fix="failed", **both))
    expected = (
        "2 did not run either way (no such test here); 1 was skipped here; 1 failed (a package newer than the "
        "task's date is the usual cause: pin it in environment.packages))"
    )
    assert problem is not None and expected in problem, problem
