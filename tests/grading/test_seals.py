"""Sealed checks under real pytest, through the grader's driver: calibrating on correct code learns which
checks can be sealed (equality with a literal, in a test of one case, on plain data or a number that is one);
sealed, the expectation is gone from the file, correct code passes, and buggy code fails even when its run
reports every test passed, under whatever id it reports it."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gym_swe.grading import seals
from gym_swe.grading.repository import DRIVER_SOURCE
from gym_swe.grading.test_ids import junit_outcomes, match_outcomes, parse_test_id

CORRECT = textwrap.dedent(
    """
    from fractions import Fraction


    class Version:
        def __init__(self, text):
            self.text = text

        def __eq__(self, other):
            return str(other).split("+")[0] == self.text.split("+")[0]


    def shout(text):
        return text.upper() + "!"


    def words(text):
        return text.split()


    def ratio(a, b):
        return a / b


    def quarter():
        return Fraction(1, 4)


    def seconds(text):
        for unit, scale in (("ms", 0.001), ("s", 1.0), ("m", 60.0)):
            if text.endswith(unit):
                return float(text[: -len(unit)]) * scale
    """
)
BUGGY = (
    CORRECT.replace('return text.upper() + "!"', "return text.upper()")
    .replace("return text.split()", "return text.split(' ')")
    .replace("Fraction(1, 4)", "Fraction(1, 3)")
    .replace('("ms", 0.001), ("s", 1.0), ("m", 60.0)', '("s", 1.0), ("m", 60.0), ("ms", 0.001)')
)
TESTS = textwrap.dedent(
    """
    import unittest

    import pytest

    from shop import Version, quarter, ratio, shout, words


    def test_shout():
        value = shout("hi")
        assert value == "HI!"


    @pytest.mark.parametrize("text", ["a  b", "a b"])
    def test_words(text):
        found = words(text)
        assert len(found) == 2
        assert "b" in found


    def test_ratio():
        assert ratio(1, 3) == pytest.approx(0.3333333)


    def test_quarter():
        assert quarter() == 0.25


    def test_version_object():
        assert Version("1.2+local") == "1.2"


    def test_shout_contains():
        assert "!" in shout("x")


    class ShoutTests(unittest.TestCase):
        def test_shout_equal(self):
            self.assertEqual(shout("x"), "X!")
    """
)
TARGETS = [
    "tests/test_shop.py::test_shout", "tests/test_shop.py::test_words[a  b]", "tests/test_shop.py::test_ratio",
    "tests/test_shop.py::test_quarter", "tests/test_shop.py::test_version_object",
    "tests/test_shop.py::test_shout_contains", "tests/test_shop.py::ShoutTests::test_shout_equal",
]  # fmt: skip
SEALED = ["tests/test_shop.py::test_shout", "tests/test_shop.py::test_quarter",
          "tests/test_shop.py::ShoutTests::test_shout_equal"]  # fmt: skip
FORCE_PASS = """import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
"""


def _run(root: Path, code: str, text: str, *options: str) -> tuple[dict[str, str], list[seals.Record]]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "shop.py").write_text(code)
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "test_shop.py").write_text(text)
    (root / "force_pass.py").write_text(FORCE_PASS)
    (root / "driver.py").write_text(DRIVER_SOURCE.decode())
    for stale in ("report.xml", "seals.jsonl"):
        (root / stale).unlink(missing_ok=True)
    subprocess.run(
        [sys.executable, str(root / "driver.py"), "run", str(root), "", "--", "-p", "no:cacheprovider",
         "-o", "junit_family=xunit1", f"--junitxml={root}/report.xml", "-c", "/dev/null",
         f"--rootdir={root}", *options, "tests/test_shop.py"],
        cwd=root, capture_output=True, text=True, timeout=300,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1",
             seals.RECORDS_VARIABLE: str(root / "seals.jsonl")},
    )  # fmt: skip
    records_file = root / "seals.jsonl"
    records = seals.read_records(records_file.read_bytes()) if records_file.exists() else []
    return junit_outcomes((root / "report.xml").read_text()), records


@pytest.fixture
def calibrated(tmp_path: Path) -> frozenset[str]:
    targets = [parse_test_id(target) for target in TARGETS]
    checks = seals.candidates({"tests/test_shop.py": TESTS}, targets)
    sealing = seals.seal({"tests/test_shop.py": TESTS}, checks, random.Random(0), calibrating=True)
    outcomes, records = _run(tmp_path / "calibration", CORRECT, sealing.sources["tests/test_shop.py"])
    assert all(outcome == "passed" for outcome in outcomes.values()), outcomes  # checks held in the process
    return frozenset(seals.calibrated(sealing.seals, records, outcomes))


def _sealed(sealable: frozenset[str]) -> seals.Sealing:
    targets = [parse_test_id(target) for target in TARGETS]
    checks = [c for c in seals.candidates({"tests/test_shop.py": TESTS}, targets) if c.key in sealable]
    return seals.seal({"tests/test_shop.py": TESTS}, checks, random.Random(1))


def test_calibration_seals_equality_on_plain_data_in_one_case_tests(tmp_path: Path, calibrated) -> None:  # type: ignore[no-untyped-def]
    """Not: a project object compared by its own __eq__, `in` (a forged record holds it without the
    literal), a parametrised test (its one literal would come from a case the bug gets right)."""
    tests = {key.split("@")[0] for key in calibrated}
    assert tests == {*SEALED, "tests/test_shop.py::test_ratio"}, calibrated


def test_a_sealed_file_holds_no_expectation(tmp_path: Path, calibrated) -> None:  # type: ignore[no-untyped-def]
    text = _sealed(calibrated).sources["tests/test_shop.py"]
    for literal in ('"HI!"', "0.3333333", "0.25", '"X!"'):
        assert literal not in text, text
    assert '== "1.2"' in text and '"!" in shout' in text  # the checks not sealed stay as written


def test_correct_code_passes_sealed_and_buggy_code_fails_even_with_a_forged_report(
    tmp_path: Path, calibrated
) -> None:  # type: ignore[no-untyped-def]
    sealing = _sealed(calibrated)
    text = sealing.sources["tests/test_shop.py"]
    outcomes, records = _run(tmp_path / "correct", CORRECT, text)
    assert seals.broken(sealing.seals, records, outcomes) == {}
    assert all(outcome == "passed" for outcome in outcomes.values()), outcomes

    outcomes, records = _run(tmp_path / "forged", BUGGY, text, "-p", "force_pass")
    assert all(outcome == "passed" for outcome in outcomes.values())  # the report says all passed
    matched: dict[str, list[str]] = {}
    match_outcomes(TARGETS, outcomes, matched)
    assert set(seals.judge(sealing.seals, records, outcomes, matched)) == set(SEALED)


def test_a_sealed_test_reported_under_another_id_is_not_trusted(tmp_path: Path, calibrated) -> None:  # type: ignore[no-untyped-def]
    """The red team's bypass: the report names the sealed test so that the task's id still matches it (a
    space after the name, as a cut id would have it) while no sealed record belongs to that name."""
    sealing = _sealed(calibrated)
    outcomes, records = _run(tmp_path / "correct", CORRECT, sealing.sources["tests/test_shop.py"])
    tried = 0
    for variant in ("tests/test_shop.py::test_shout x", " tests/test_shop.py::test_shout"):
        forged = {key: value for key, value in outcomes.items() if key != "tests/test_shop.py::test_shout"}
        forged[variant] = "passed"
        matched: dict[str, list[str]] = {}
        found = match_outcomes(TARGETS, forged, matched)
        if found["tests/test_shop.py::test_shout"] != "passed":
            continue  # the matcher does not take it for the test at all
        tried += 1
        judged = seals.judge(sealing.seals, records, forged, matched)
        assert "tests/test_shop.py::test_shout" in judged, (variant, judged)
    assert tried  # the matcher does take at least one rewording for the test


def test_records_the_run_forges_do_not_hold_without_the_values(tmp_path: Path, calibrated) -> None:  # type: ignore[no-untyped-def]
    """Code under test can write records too, for every token the file shows: with a value it guessed."""
    sealing = _sealed(calibrated)
    outcomes = {f"{seal.check.node}": "passed" for seal in sealing.seals}
    forged = [seals.Record(seal.token, seal.check.node, "a guess") for seal in sealing.seals]
    assert set(seals.broken(sealing.seals, forged, outcomes)) == set(outcomes)
    assert set(seals.broken(sealing.seals, [], outcomes)) == set(outcomes)  # nothing recorded
    lines = b'{"token": "x", "case": "c", "plain": true, "value": {"$": "float", "v": "nope"}}\n[1]\n\xff\n'
    assert seals.read_records(lines) == []  # what the run writes that is not a record counts for nothing


@pytest.mark.parametrize(
    ("op", "expected", "value", "result"),
    [
        ("==", [1, 2], [1, 2], True), ("==", [1, 2], (1, 2), False), ("==", 1, 1.0, True),
        ("in", "b", ["a", "b"], False), ("not in", "z", "abc", False),  # never sealed: no record is trusted
        ("approx", 0.3333333, 1 / 3, True), ("approx", 0.3, 0.31, False), ("approx", 1.0, float("inf"), False),
        ("approx", [0.1, 0.2], [0.1, 0.2000000001], True), ("==", "x", seals.OPAQUE, False),
    ],
)  # fmt: skip
def test_holds_is_pythons_own_semantics_on_data(
    op: str, expected: object, value: object, result: bool
) -> None:
    assert seals.holds(op, expected, value) is result


# A test parametrised by a table whose column is the expectation: the rows the bug gets wrong ("250ms" reads
# as a number of minutes... of "250m" seconds) are the task's, the others pass already. The case "1 m" is
# named as SWE-bench's log parsing cuts it, at the space.
TABLE = textwrap.dedent(
    """
    import pytest

    from shop import seconds


    @pytest.mark.parametrize(
        "text,expected",
        [("250ms", 0.25), ("2s", 2.0), ("1 m", 60.0)],
    )
    def test_seconds(text, expected):
        assert seconds(text) == pytest.approx(expected)
    """
)
TABLE_NODE = "tests/test_shop.py::test_seconds"
TABLE_IDS = [f"{TABLE_NODE}[250ms-0.25]", f"{TABLE_NODE}[2s-2.0]", f"{TABLE_NODE}[1"]
# Code under test that answers from the table: the test function's parametrize mark, in memory.
ANSWER_KEY = """

import sys as _sys

_buggy_seconds = seconds


def seconds(text):
    module = _sys.modules.get("test_shop") or _sys.modules.get("tests.test_shop")
    for mark in getattr(getattr(module, "test_seconds", None), "pytestmark", []):
        for row in mark.args[1]:
            if row[0] == text:
                return row[1]
    return _buggy_seconds(text)
"""


def _table_sealing(known: list[str], rng: int, calibrating: bool = False) -> seals.Sealing:
    checks = seals.candidates({"tests/test_shop.py": TABLE}, [parse_test_id(TABLE_IDS[0])], known)
    return seals.seal({"tests/test_shop.py": TABLE}, checks, random.Random(rng), calibrating)


def _named_run(root: Path, code: str, sealing: seals.Sealing) -> tuple[dict[str, str], list[seals.Record]]:
    outcomes, records = _run(root, code, sealing.sources["tests/test_shop.py"])
    return sealing.named(outcomes), sealing.named_records(records)


def test_a_parameter_table_is_sealed_row_by_row_and_its_cases_keep_the_tasks_names(tmp_path: Path) -> None:
    calibration = _table_sealing(TABLE_IDS, 0, calibrating=True)
    outcomes, records = _named_run(tmp_path / "calibration", CORRECT, calibration)
    assert outcomes == {f"{TABLE_NODE}[250ms-0.25]": "passed", f"{TABLE_NODE}[2s-2.0]": "passed",
                        f"{TABLE_NODE}[1 m-60.0]": "passed"}  # fmt: skip
    sealable = seals.calibrated(calibration.seals, records, outcomes)
    assert len(sealable) == 3 and all(key.startswith(TABLE_NODE + "@") for key in sealable), sealable

    sealing = _table_sealing(TABLE_IDS, 1)
    text = sealing.sources["tests/test_shop.py"]
    for literal in ("0.25", "2.0", "60.0"):
        assert literal not in text, text  # neither in the table nor in the ids pytest would make of it
    outcomes, records = _named_run(tmp_path / "correct", CORRECT, sealing)
    assert set(outcomes) == {f"{TABLE_NODE}[250ms-0.25]", f"{TABLE_NODE}[2s-2.0]", f"{TABLE_NODE}[1 m-60.0]"}
    assert seals.broken(sealing.seals, records, outcomes) == {}
    matched: dict[str, list[str]] = {}
    assert set(match_outcomes(TABLE_IDS, outcomes, matched).values()) == {"passed"}


@pytest.mark.parametrize(
    ("code", "wrong"),
    [(BUGGY, TABLE_IDS[:1]), (BUGGY + ANSWER_KEY, TABLE_IDS)],  # the answer key returns the tokens it finds
    ids=["buggy", "answer key from the table"],
)
def test_a_sealed_table_fails_the_rows_the_code_gets_wrong(
    tmp_path: Path, code: str, wrong: list[str]
) -> None:
    sealing = _table_sealing(TABLE_IDS, 2)
    outcomes, records = _named_run(tmp_path / "run", code, sealing)
    matched: dict[str, list[str]] = {}
    found = match_outcomes(TABLE_IDS, outcomes, matched)
    for raw in seals.judge(sealing.seals, records, outcomes, matched):
        found[raw] = "failed"  # as the grader does: reported passed, but its sealed check did not hold
    assert found == {raw: "failed" if raw in wrong else "passed" for raw in TABLE_IDS}, outcomes


def test_control_the_answer_key_reads_an_unsealed_table(tmp_path: Path) -> None:
    """The same answer key, the table as written: its rows pass, so the seals above are what stops it."""
    outcomes, _ = _run(tmp_path / "open", BUGGY + ANSWER_KEY, TABLE)
    assert outcomes[f"{TABLE_NODE}[250ms-0.25]"] == "passed", outcomes
    outcomes, _ = _run(tmp_path / "buggy", BUGGY, TABLE)
    assert outcomes[f"{TABLE_NODE}[250ms-0.25]"] == "failed", outcomes


def test_a_table_is_sealed_only_where_the_tasks_ids_name_every_row() -> None:
    assert _table_sealing(TABLE_IDS, 3).seals
    assert not _table_sealing(TABLE_IDS[:2], 3).seals  # a row the task does not name: names would be guesses
    assert not _table_sealing([*TABLE_IDS, f"{TABLE_NODE}[1 m-60.0]"], 3).seals  # two names for one row
    assert not _table_sealing([], 3).seals
