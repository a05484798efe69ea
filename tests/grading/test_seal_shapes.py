"""Sealed checks in every shape of test the real repositories of SWE-bench have (the shapes of
tests/grading/test_decoys.py, plus the forms sealing adds), through the grader's own pipeline
(`guards.seal_and_plant`: seal what calibration learned, then decoys beside the tests without a strong
sealed check) and its driver, under real pytest.

For each shape: calibrating on correct code learns what can be sealed; sealed, correct code passes every
target with no sealed check broken and no decoy tripped (an honest fix is never refused);
and buggy code that reads the assertion calling it (an answer key) under a report that says every test passed
fails every target that has a strong sealed check and that the bug really fails.
"""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import pytest

from gym_swe.grading import seals
from gym_swe.grading.decoy_report import violations
from gym_swe.grading.environment import DRIVER_SOURCE
from gym_swe.grading.guards import named_back, seal_and_plant
from gym_swe.grading.test_ids import match_outcomes
from tests.grading.test_decoys import ANSWER_KEY, FORCE_PASS, SHAPES, Shape
from tests.grading.test_seals import run_driver

FILE = "tests/test_shape.py"

MORE_SHAPES = {
    "every sealed form: ordering, identity, containment, exceptions with match and as": Shape(
        """
        import pytest

        from shop.core import double, words


        class NotDoubled(ValueError):
            pass


        def test_forms():
            assert double(3) != 5
            assert double(3) >= 6
            assert 7 < double(4)
            assert "b" in words("a b")
            assert "z" not in words("a b")
            assert double(None if False else 0) is not None


        def test_raises_with_match_and_as():
            with pytest.raises((TypeError, NotDoubled), match="unsupported|can't") as info:
                double(None)
            assert info.type is TypeError


        def test_raises_a_base_exception():
            with pytest.raises(SystemExit):
                raise SystemExit(double(1))


        def test_a_check_that_must_fail_inside_raises():
            with pytest.raises(AssertionError):
                assert double(1) == 3
        """,
        [
            f"{FILE}::test_forms",
            f"{FILE}::test_raises_with_match_and_as",
            f"{FILE}::test_raises_a_base_exception",
            f"{FILE}::test_a_check_that_must_fail_inside_raises",
        ],
        answerable=False,
    ),
}
MORE_SHAPES["a sealed table whose test also gets decoys (its cases named back through both)"] = Shape(
    """
    import pytest

    from shop.core import double


    @pytest.mark.parametrize("value,expected", [(1, 2), (21, 42), (-4, -8)])
    def test_double_table(value, expected):
        found = double(value)
        assert found > value or value <= 0
        assert found == expected
    """,
    [
        f"{FILE}::test_double_table[1-2]",
        f"{FILE}::test_double_table[21-42]",
        f"{FILE}::test_double_table[-4--8]",
    ],
    answerable=False,
)
ALL_SHAPES = {**SHAPES, **MORE_SHAPES}
BUGGY = 'def double(x):\n    return 2 * x + 1\n\n\ndef words(text):\n    return text.split(" ")[:1]\n'
BUGGY_KEY = ANSWER_KEY + BUGGY.replace("return 2 * x + 1", "return answer(2 * x + 1)").replace(
    'return text.split(" ")[:1]', 'return answer(text.split(" ")[:1])'
)


def _write(root: Path, shape: Shape, package: str, tests: str) -> None:
    (root / "shop").mkdir(parents=True, exist_ok=True)
    (root / "tests").mkdir(exist_ok=True)
    (root / "shop" / "__init__.py").write_text("")
    (root / "shop" / "core.py").write_text(package)
    (root / FILE).write_text(tests)
    (root / "force_pass.py").write_text(FORCE_PASS)
    (root / "driver.py").write_text(DRIVER_SOURCE.decode())
    for stale in ("report.xml", "stream.jsonl"):
        (root / stale).unlink(missing_ok=True)


def _run(root: Path, *options: str) -> tuple[dict[str, str], list[seals.Record]]:
    return run_driver(root, FILE, *options)


def _calibrate(root: Path, shape: Shape) -> dict[str, dict[str, object]]:
    tests = textwrap.dedent(shape.tests).lstrip()
    sealing, _, changed = seal_and_plant(
        {FILE: tests}, shape.targets, shape.targets, {}, True, random.Random(0)
    )
    _write(root, shape, shape.package, changed.get(FILE, tests))
    outcomes, records = _run(root)
    matched: dict[str, list[str]] = {}
    match_outcomes(shape.targets, sealing.named(outcomes), matched)
    cases = {case for raw in shape.targets for case in matched.get(raw, [])}
    return seals.calibrated(sealing.seals, sealing.named_records(records), sealing.named(outcomes), cases)


def _graded(root: Path, shape: Shape, sealed, seed: int, package: str, *options: str):  # type: ignore[no-untyped-def]
    """The targets' outcomes as the grader would take them: the report's, named back, with what the sealed
    checks say; and whether a decoy was tripped."""
    tests = textwrap.dedent(shape.tests).lstrip()
    sealing, planting, changed = seal_and_plant(
        {FILE: tests}, shape.targets, shape.targets, sealed, False, random.Random(seed)
    )
    _write(root, shape, package, changed.get(FILE, tests))
    outcomes, records = _run(root, *options)
    tripped = violations(planting.groups, outcomes)
    outcomes, records = named_back(sealing, planting, outcomes, records)
    matched: dict[str, list[str]] = {}
    found = match_outcomes(shape.targets, outcomes, matched)
    for raw in seals.judge(sealing.seals, records, outcomes, matched, sealed):
        found[raw] = "failed"
    strong = {seal.check.node for seal in sealing.seals if seals.strong(seal.check)}
    return found, tripped, strong


@pytest.mark.parametrize("shape", list(ALL_SHAPES))
def test_sealed_shapes_pass_an_honest_fix_and_fail_an_answer_key(shape: str, tmp_path: Path) -> None:
    spec = ALL_SHAPES[shape]
    sealed = _calibrate(tmp_path / "calibration", spec)
    runnable = [t for t in spec.targets if "::shop." not in t]  # a doctest id is not a test of the file
    found, tripped, strong = _graded(tmp_path / "honest", spec, sealed, 1, spec.package)
    assert tripped == [] and all(found[t] == "passed" for t in runnable), (found, tripped)
    found, _, _ = _graded(tmp_path / "buggy", spec, sealed, 8, BUGGY)
    wrong = {t for t in runnable if found[t] != "passed"}  # what the bug really fails
    found, tripped, strong = _graded(tmp_path / "forged", spec, sealed, 9, BUGGY_KEY, "-p", "force_pass")
    caught = {t for t in runnable if found[t] != "passed"}
    assert {t for t in wrong if t.split("[")[0] in strong} <= caught or tripped, (found, strong, wrong)


def test_every_form_sealing_adds_is_learned_from_the_gold_run(tmp_path: Path) -> None:
    sealed = _calibrate(tmp_path, MORE_SHAPES["every sealed form: ordering, identity, containment, exceptions"
                                              " with match and as"])  # fmt: skip
    tests = {key.split("@")[0].split("::")[-1] for key in sealed}
    assert tests == {"test_forms", "test_raises_with_match_and_as", "test_raises_a_base_exception",
                     "test_a_check_that_must_fail_inside_raises"}, sealed  # fmt: skip
    forms = [key for key in sealed if "::test_forms@" in key]
    assert len(forms) == 6, forms  # every check of test_forms
    inner = [key for key in sealed if "must_fail_inside_raises" in key]
    assert len(inner) == 1, inner  # the raises block; not the check that must fail inside it
    raises = next(facts for key, facts in sealed.items() if "test_raises_with_match_and_as" in key)
    assert raises["names"] == ["builtins.TypeError", "test_shape.NotDoubled"] or raises["names"] == [
        "builtins.TypeError", "tests.test_shape.NotDoubled"], raises  # fmt: skip
