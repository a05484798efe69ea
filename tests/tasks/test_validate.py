"""`gym-swe validate` and `gym-swe prepare` on records of a repository built here: each way a task can be
invalid is reported with what went wrong and what to do; junk ids and excluded tests are reported; the JSON
report has every test's outcome and the log tails."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from gym_swe.cli import main
from gym_swe.tasks.swe import load_swe_tasks
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
    ("passes-unfixed", "resolved without any change"),
    ("test-patch-stale", "the test patch does not apply"),
    ("django-ids", "not pytest node ids"),
    ("no-mirror", "no mirror of 'acme/other' in"),
    ("no-python", "Python 2.1 is not available here"),
    ("install-fails", "preparing install-fails failed at `cd /testbed && echo half-built >&2; exit 3` (exit 3)"),
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
            record("no-python", world.base, world.gold, world.test_patch, environment={"python": "2.1"})]  # fmt: skip
    records = write_records(world.root / "prepare.jsonl", rows)
    code = main(["prepare", "--tasks", str(records), "--repo-source", str(world.mirrors),
                 "--task-id", "no-mirror", "--task-id", "no-python", "--task-id", "valid"])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 1
    assert "prepared 1/3 task(s)" in captured.out and "valid: ready (Python " in captured.out
    assert "no-mirror: no mirror of 'acme/other'" in captured.err
    assert "no-python: Python 2.1 is not available here" in captured.err
    code = main(
        ["prepare", "--tasks", str(records), "--repo-source", str(world.mirrors), "--task-id", "valid"]
    )
    assert code == 0 and "prepared 1/1" in capsys.readouterr().out
