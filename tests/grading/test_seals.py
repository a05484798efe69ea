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
from gym_swe.grading.environment import DRIVER_SOURCE
from gym_swe.grading.outcome_stream import RECORDS_FD_VARIABLE
from gym_swe.grading.test_ids import junit_outcomes, match_outcomes, parse_test_id

CORRECT = textwrap.dedent(
    """
    from fractions import Fraction


    class Version:
        def __init__(self, text):
            self.text = text

        def __eq__(self, other):
            return str(other).split("+")[0] == self.text.split("+")[0]


    class ShopError(ValueError):
        pass


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


    def price(text):
        value = float(text)
        if value < 0:
            raise ShopError("negative price: %s" % text)
        return value


    def find(items, name):
        return items.get(name)


    def greeting(name):
        return "Hello, %s." % name


    def count(text):
        return len(text.split())
    """
)
BUGGY = (
    CORRECT.replace('return text.upper() + "!"', "return text.upper()")
    .replace("return text.split()", "return text.split(' ')")
    .replace("Fraction(1, 4)", "Fraction(1, 3)")
    .replace('("ms", 0.001), ("s", 1.0), ("m", 60.0)', '("s", 1.0), ("m", 60.0), ("ms", 0.001)')
    .replace("if value < 0:", "if value < -100:")
    .replace("return items.get(name)", 'return items.get(name, "")')
    .replace('"Hello, %s."', '"Hello %s."')
    .replace("return len(text.split())", "return len(text.split(' '))")
)
# Another correct fix: its own exception classes (of the kind the tests expect, under a base of its own that
# the gold patch's exception does not have) with a longer message, a much longer greeting. The grader must
# not refuse it for not being the gold patch.
ANOTHER_FIX = CORRECT.replace(
    'raise ShopError("negative price: %s" % text)',
    'raise NegativePrice("negative price: %s (a price is zero or more, as the price list says)" % text)',
).replace(
    '"Hello, %s."', '("Hello, %s. " + "Nice to meet you, and welcome to the shop. " * 10)'
) + textwrap.dedent(
    """

    class PriceError(ValueError):
        pass


    class NegativePrice(PriceError):
        pass
    """
)
TESTS = textwrap.dedent(
    """
    import unittest

    import pytest

    from shop import Version, count, find, greeting, price, quarter, ratio, shout, words


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


    def test_greeting():
        message = greeting("Ada")
        assert "Hello, Ada" in message
        assert message != "Hello Ada."


    def test_negative_price():
        with pytest.raises(ValueError, match="negative price") as info:
            price("-1")
        assert info.value.args


    def test_missing():
        assert find({}, "x") is None


    @pytest.mark.parametrize("text", ["a  b", "a   b"])
    def test_count(text):
        assert count(text) == 2


    def test_inside_with():
        with open(__file__) as handle:
            assert shout("a") == "A!"
        assert handle.closed


    class ShoutTests(unittest.TestCase):
        def test_shout_equal(self):
            self.assertEqual(shout("x"), "X!")

        def test_price_raises(self):
            with self.assertRaisesRegex(ValueError, "negative"):
                price("-2")

        def test_missing_unittest(self):
            self.assertIsNone(find({}, "y"))
    """
)
FILE = "tests/test_shop.py"
TARGETS = [
    f"{FILE}::test_shout", f"{FILE}::test_words[a  b]", f"{FILE}::test_ratio", f"{FILE}::test_quarter",
    f"{FILE}::test_version_object", f"{FILE}::test_shout_contains", f"{FILE}::test_greeting",
    f"{FILE}::test_negative_price", f"{FILE}::test_missing", f"{FILE}::test_count[a  b]",
    f"{FILE}::test_count[a   b]", f"{FILE}::test_inside_with", f"{FILE}::ShoutTests::test_shout_equal",
    f"{FILE}::ShoutTests::test_price_raises", f"{FILE}::ShoutTests::test_missing_unittest",
]  # fmt: skip
SEALABLE = {
    f"{FILE}::{name}"
    for name in ("test_shout", "test_ratio", "test_quarter", "test_shout_contains", "test_greeting",
                 "test_negative_price", "test_missing", "test_count", "test_inside_with",
                 "ShoutTests::test_shout_equal", "ShoutTests::test_price_raises",
                 "ShoutTests::test_missing_unittest")
}  # fmt: skip
WRONG_WHEN_BUGGY = SEALABLE - {f"{FILE}::test_ratio"}
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
    for stale in ("report.xml", "stream.jsonl"):
        (root / stale).unlink(missing_ok=True)
    return run_driver(root, "tests/test_shop.py", *options)


def run_driver(root: Path, test_file: str, *options: str) -> tuple[dict[str, str], list[seals.Record]]:
    """Run ``test_file`` under ``root/driver.py`` (the grader's pytest driver) as the grader would: the
    JUnit report's outcomes, and the sealed records the driver streamed to its records descriptor."""
    with open(root / "stream.jsonl", "wb") as stream:  # the driver's records descriptor
        subprocess.run(
            [sys.executable, str(root / "driver.py"), "run", str(root), "", "--", "-p", "no:cacheprovider",
             "-o", "junit_family=xunit1", f"--junitxml={root}/report.xml", "-c", "/dev/null",
             f"--rootdir={root}", *options, test_file],
            cwd=root, capture_output=True, text=True, timeout=300,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1",
                 RECORDS_FD_VARIABLE: str(stream.fileno())},
            pass_fds=(stream.fileno(),),
        )  # fmt: skip
    records_file = root / "stream.jsonl"
    records = seals.read_records(records_file.read_bytes()) if records_file.exists() else []
    return junit_outcomes((root / "report.xml").read_text()), records


def _task_cases(outcomes: dict[str, str]) -> set[str]:
    """The report ids the task's FAIL_TO_PASS ids (all of TARGETS here) were matched to."""
    matched: dict[str, list[str]] = {}
    match_outcomes(TARGETS, outcomes, matched)
    return {case for cases in matched.values() for case in cases}


@pytest.fixture
def calibrated(tmp_path: Path) -> dict[str, dict[str, object]]:
    targets = [parse_test_id(target) for target in TARGETS]
    checks = seals.candidates({FILE: TESTS}, targets)
    sealing = seals.seal({FILE: TESTS}, checks, random.Random(0), calibrating=True)
    outcomes, records = _run(tmp_path / "calibration", CORRECT, sealing.sources[FILE])
    assert all(outcome == "passed" for outcome in outcomes.values()), outcomes  # checks held in the process
    return seals.calibrated(sealing.seals, records, outcomes, _task_cases(outcomes))


def _sealed(sealable: dict[str, dict[str, object]], rng: int = 1) -> seals.Sealing:
    targets = [parse_test_id(target) for target in TARGETS]
    checks = [c for c in seals.candidates({FILE: TESTS}, targets) if c.key in sealable]
    return seals.seal({FILE: TESTS}, checks, random.Random(rng))


def _judged(sealing: seals.Sealing, facts, outcomes, records) -> set[str]:  # type: ignore[no-untyped-def]
    """The task's ids that the grader fails although the report passed them."""
    matched: dict[str, list[str]] = {}
    match_outcomes(TARGETS, outcomes, matched)
    return set(seals.judge(sealing.seals, records, outcomes, matched, facts))


def test_calibration_seals_literal_expectations_on_plain_data_and_exception_blocks(calibrated) -> None:  # type: ignore[no-untyped-def]
    """Not: a project object compared by its own __eq__; a parametrised test one of whose cases is not the
    task's (its one literal could come from a case the bug gets right). Yes: both cases of a test whose
    cases are all the task's, a check inside a with block, exception blocks (pytest's and unittest's)."""
    tests = {key.split("@")[0] for key in calibrated}
    assert tests == SEALABLE, tests ^ SEALABLE
    raises = next(facts for key, facts in calibrated.items() if "test_negative_price" in key)
    assert raises["names"] == ["builtins.ValueError"] and raises["expected"] == "ValueError"
    builtins = {"builtins.ValueError", "builtins.Exception", "builtins.BaseException", "builtins.object"}
    assert set(raises["allowed"]) == builtins  # the builtin ancestors of the gold's and the expected class
    assert all("expected" in facts for facts in calibrated.values())  # what `protection` scans for


def test_a_sealed_file_holds_no_expectation(calibrated) -> None:  # type: ignore[no-untyped-def]
    text = _sealed(calibrated).sources[FILE]
    for literal in ('"HI!"', "0.3333333", "0.25", '"X!"', '"Hello, Ada"', "ValueError", '"negative', '"A!"',
                    "is None", "assertIsNone", "!= "):  # fmt: skip
        assert literal not in text, (literal, text)
    assert '== "1.2"' in text and "len(found) == 2" in text  # the checks not sealed stay as written
    assert "pytest.raises(BaseException)" in text and "self.assertRaises(BaseException)" in text


def test_correct_code_passes_sealed_and_buggy_code_fails_even_with_a_forged_report(
    tmp_path: Path, calibrated
) -> None:  # type: ignore[no-untyped-def]
    sealing = _sealed(calibrated)
    text = sealing.sources[FILE]
    for name, code in (("correct", CORRECT), ("another fix", ANOTHER_FIX)):
        outcomes, records = _run(tmp_path / name, code, text)
        assert seals.broken(sealing.seals, records, outcomes, calibrated) == {}, name
        assert all(outcome == "passed" for outcome in outcomes.values()), (name, outcomes)

    outcomes, records = _run(tmp_path / "forged", BUGGY, text, "-p", "force_pass")
    assert all(outcome == "passed" for outcome in outcomes.values())  # the report says all passed
    failed = {raw.split("[")[0] for raw in _judged(sealing, calibrated, outcomes, records)}
    assert failed == WRONG_WHEN_BUGGY, failed ^ WRONG_WHEN_BUGGY


# Code that knows its tests are sealed and answers the checks it cannot see with values made to meet any
# expectation: a message holding every likely phrase, an exception of every likely class.
STUFFED = BUGGY + textwrap.dedent(
    """

    _LIKELY = ["Hello, Ada", "Hello Ada", "Hi, Ada", "Hello, ada", "Greetings, Ada", "Hello, Ada!"]


    def greeting(name):
        return " ".join(phrase.replace("Ada", name) for phrase in _LIKELY) * 3


    class Anything(ValueError, TypeError, KeyError, IndexError, AttributeError, RuntimeError, LookupError):
        pass


    def price(text):
        raise Anything("negative price " + " ".join(_LIKELY))
    """
)


def test_values_made_to_meet_any_expectation(tmp_path: Path, calibrated) -> None:  # type: ignore[no-untyped-def]
    """An exception of every likely builtin class holds no sealed exception block; a message of every likely
    phrase does hold an ``in`` check, which is why ``in`` is not `seals.strong` (its test keeps decoys)."""
    sealing = _sealed(calibrated)
    outcomes, records = _run(tmp_path / "stuffed", STUFFED, sealing.sources[FILE], "-p", "force_pass")
    failed = {raw.split("[")[0] for raw in _judged(sealing, calibrated, outcomes, records)}
    stuffed = {f"{FILE}::test_negative_price", f"{FILE}::ShoutTests::test_price_raises"}
    assert stuffed <= failed and f"{FILE}::test_greeting" not in failed, failed
    assert not any(seals.strong(seal.check) for seal in sealing.seals if "test_greeting" in seal.check.node)
    # The control: without the seals the same code passes every one of those tests as written.
    outcomes, _ = _run(tmp_path / "open", STUFFED, TESTS)
    assert all(outcomes[test] == "passed" for test in stuffed), outcomes


def test_a_sealed_test_reported_under_another_id_is_not_trusted(tmp_path: Path, calibrated) -> None:  # type: ignore[no-untyped-def]
    """The red team's bypass: the report names the sealed test so that the task's id still matches it (a
    space after the name, as a cut id would have it) while no sealed record belongs to that name."""
    sealing = _sealed(calibrated)
    outcomes, records = _run(tmp_path / "correct", CORRECT, sealing.sources[FILE])
    tried = 0
    for variant in (f"{FILE}::test_shout x", f" {FILE}::test_shout"):
        forged = {key: value for key, value in outcomes.items() if key != f"{FILE}::test_shout"}
        forged[variant] = "passed"
        matched: dict[str, list[str]] = {}
        found = match_outcomes(TARGETS, forged, matched)
        if found[f"{FILE}::test_shout"] != "passed":
            continue  # the matcher does not take it for the test at all
        tried += 1
        judged = seals.judge(sealing.seals, records, forged, matched, calibrated)
        assert f"{FILE}::test_shout" in judged, (variant, judged)
    assert tried  # the matcher does take at least one rewording for the test


def test_records_the_run_forges_do_not_hold_without_the_values(calibrated) -> None:  # type: ignore[no-untyped-def]
    """Code under test can write records too, for every token the file shows: with a value it guessed."""
    sealing = _sealed(calibrated)
    strong = [seal for seal in sealing.seals if seals.strong(seal.check)]
    outcomes = {f"{seal.check.node}": "passed" for seal in strong}
    forged = [seals.Record(seal.token, seal.check.node, "a guess") for seal in strong]
    assert set(seals.broken(strong, forged, outcomes, calibrated)) == set(outcomes)
    assert set(seals.broken(strong, [], outcomes, calibrated)) == set(outcomes)  # nothing recorded
    lines = b'{"token": "x", "case": "c", "plain": true, "value": {"$": "float", "v": "nope"}}\n[1]\n\xff\n'
    assert seals.read_records(lines) == []  # what the run writes that is not a record counts for nothing


def test_a_test_of_sealed_checks_none_strong_keeps_its_decoys(calibrated) -> None:  # type: ignore[no-untyped-def]
    """Only equality with a literal one value meets is strong: ``is None``, ``in``, ``!=`` and exception
    blocks are sealed, but a guess meets them (the buggy value's opposite, a stuffed message, one of the few
    likely exceptions): their tests still get decoys."""
    strength = {}
    for seal in _sealed(calibrated).seals:
        strength.setdefault(seal.check.node.split("::", 1)[1], set()).add(seals.strong(seal.check))
    assert strength["test_missing"] == {False} and strength["test_shout_contains"] == {False}
    assert strength["test_greeting"] == {False} and strength["test_negative_price"] == {False}
    assert strength["test_shout"] == {True} and strength["test_count"] == {False}  # `== 2`: a small integer


@pytest.mark.parametrize(
    ("op", "expected", "value", "result"),
    [
        ("==", [1, 2], [1, 2], True), ("==", [1, 2], (1, 2), False), ("==", 1, 1.0, True),
        ("!=", "a", "b", True), ("<", 3, 2, True), ("<", 3, "2", False), (">=", "b", "a", False),
        ("is", None, None, True), ("is not", None, seals.OPAQUE, True), ("is", True, 1, False),
        ("not in", "z", "abc", True), ("not in", "a", 3, False),
        ("approx", 0.3333333, 1 / 3, True), ("approx", 0.3, 0.31, False), ("approx", 1.0, float("inf"), False),
        ("approx", [0.1, 0.2], [0.1, 0.2000000001], True), ("==", "x", seals.OPAQUE, False),
    ],
)  # fmt: skip
def test_holds_is_pythons_own_semantics_on_data(
    op: str, expected: object, value: object, result: bool
) -> None:
    singleton = next((repr(one) for one in (None, True, False) if value is one), "")
    assert seals.holds(op, expected, value, None, singleton) is result


def test_identity_is_held_by_which_singleton_the_run_saw() -> None:
    """A project's object is ``not None`` (its value is not data, its identity is), as in Python."""
    assert seals.holds("is not", None, seals.OPAQUE, None, "")
    assert not seals.holds("is", None, seals.OPAQUE, None, "")
    assert seals.holds("is", None, None, None, "None") and not seals.holds("is not", None, None, None, "None")
    assert seals.holds("is", True, True, None, "True") and not seals.holds("is", True, 1, None, "")


def test_a_sealed_literal_the_agent_can_read_is_public() -> None:
    """Its parts, each spelt as it would be written: a string's lines, a number (an integral float also as an
    int), a container of one item as that item, a container of more as a whole (its items may all be in
    sight, as the inputs of a sort are: which of them, in which order, is what the code computes)."""
    assert seals.public_forms('"1.5.0\\n"') == [["1.5.0"]]
    assert seals.public_forms('"a\\nb"') == [["a"], ["b"]]
    assert seals.public_forms("5400.0") == [["5400.0", "5400"]]
    assert seals.public_forms('["auth"]') == [["auth"]] and seals.public_forms('{"a": 1}') == [["a"], ["1"]]
    assert seals.public_forms('["auth", "cache"]') == [
        ["['auth', 'cache']", '["auth", "cache"]', "auth, cache", "auth,cache", "auth cache", "auth\ncache"]
    ]


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
    sealable = seals.calibrated(calibration.seals, records, outcomes, set())
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
    for raw in seals.judge(sealing.seals, records, outcomes, matched, {}):
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


def test_a_literal_spelled_over_several_lines_is_read_as_the_test_reads_it() -> None:
    """``assert f() == ("a"\\n    "b")``: the literal's source segment has no parentheses of its own, and
    read alone its second line is an indent (found generating tasks from toolz: it stopped the grader)."""
    source = 'def test_join():\n    assert join() == (\n        "abc"\n        "def"\n    )\n'
    (check,) = seals.candidates({FILE: source}, [parse_test_id(f"{FILE}::test_join")])
    assert "\n" in check.expected
    assert seals.forms.literal_value(check.expected) == "abcdef"
    from gym_swe.grading.seals.judging import expectation
    from gym_swe.grading.seals.writing import Seal

    assert expectation(Seal(check=check, token="t")) == "abcdef"  # type: ignore[call-arg]
