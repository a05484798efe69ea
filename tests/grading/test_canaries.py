"""Canaries: planted among a task's own tests, they must run under real pytest exactly as planted, and look
like the tests beside them (file, position, name, body) with a fresh draw every grade."""

from __future__ import annotations

import ast
import random
import subprocess
import sys
import textwrap
from pathlib import Path

from gym_swe.grading.canaries import plant
from gym_swe.grading.test_ids import junit_outcomes, match_outcomes, parse_test_id

PACKAGE = "def add(a, b):\n    return a + b\n\n\nclass Box:\n    pass\n"
TESTS = textwrap.dedent(
    """
    import unittest

    import pytest

    from shop.core import Box, add


    def test_add_small_numbers():
        assert add(1, 2) == 3


    @pytest.mark.parametrize("a,b", [(1, 2), (3, 4)])
    def test_add_is_commutative(a, b):
        assert add(a, b) == add(b, a)


    class TestBoxes:
        def test_box_is_created(self):
            assert Box() is not None

        def test_box_types_differ(self):
            assert type(Box()) is Box


    class TestAddCase(unittest.TestCase):
        def test_add_zero_keeps_value(self):
            self.assertEqual(add(5, 0), 5)

        def test_add_negative_values(self):
            self.assertEqual(add(-1, -1), -2)


    if __name__ == "__main__":
        unittest.main()
    """
)
TARGETS = [
    "tests/test_shop.py::test_add_small_numbers",
    "tests/test_shop.py::TestBoxes::test_box_is_created",
    "tests/test_shop.py::TestAddCase::test_add_zero_keeps_value",
]


def planted(seed: int):  # type: ignore[no-untyped-def]
    return plant(
        {"tests/test_shop.py": TESTS},
        [parse_test_id(t) for t in TARGETS],
        random.Random(seed),
        installed={"pytest", "unittest"},
    )


def test_canaries_come_out_as_planted_under_real_pytest(tmp_path: Path) -> None:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "core.py").write_text(PACKAGE)
    (tmp_path / "tests").mkdir()
    for seed in range(6):
        planting = planted(seed)
        (tmp_path / "tests" / "test_shop.py").write_text(planting.sources["tests/test_shop.py"])
        report = tmp_path / f"report{seed}.xml"
        subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1",
             f"--junitxml={report}", "tests/test_shop.py"],
            cwd=tmp_path, capture_output=True, text=True,
        )  # fmt: skip
        outcomes = junit_outcomes(report.read_text())
        expected = {canary.node_id: canary.expected for canary in planting.canaries}
        assert match_outcomes(list(expected), outcomes) == expected
        real = {key: value for key, value in outcomes.items() if key not in expected}
        assert set(real.values()) == {"passed"} and len(real) == 7  # the file's own tests are untouched
        assert sorted(expected.values()).count("failed") == len(expected) // 2


def test_canaries_sit_among_the_tests_and_are_named_like_them() -> None:
    planting = planted(1)
    tree = ast.parse(planting.sources["tests/test_shop.py"])
    by_id = {canary.node_id: canary for canary in planting.canaries}
    assert {node_id.count("::") for node_id in by_id} == {1, 2}  # module level and inside classes
    classes = {node_id.split("::")[1] for node_id in by_id if node_id.count("::") == 2}
    assert classes == {"TestBoxes", "TestAddCase"}
    names = [node_id.rsplit("::", 1)[1] for node_id in by_id]
    assert all(name.startswith("test_") and name not in TESTS for name in names)
    words = {w for name in ("add_small_numbers", "add_is_commutative", "box_is_created", "box_types_differ",
                            "add_zero_keeps_value", "add_negative_values") for w in name.split("_")}  # fmt: skip
    assert all(set(name[len("test_") :].split("_")) <= words for name in names)
    # the closing main guard stays last
    assert isinstance(tree.body[-1], ast.If)
    # bodies use the project's names, and unittest classes assert the unittest way
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and f"::{node.name}" in "".join(by_id):
            source = ast.unparse(node)
            assert "Box" in source or "add" in source
    case = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "TestAddCase")
    planted_methods = [m for m in case.body if isinstance(m, ast.FunctionDef) and m.name not in TESTS]
    assert planted_methods and all("self.assert" in ast.unparse(m) for m in planted_methods)


def test_every_grade_draws_new_canaries() -> None:
    draws = [frozenset(canary.node_id for canary in planted(seed).canaries) for seed in range(5)]
    assert len(set(draws)) == 5
    texts = {planted(seed).sources["tests/test_shop.py"] for seed in range(5)}
    assert len(texts) == 5


def test_a_file_python_cannot_parse_gets_canaries_at_the_end() -> None:
    broken = "def test_ok():\n    assert True\n\nprint 'python 2'\n"
    planting = plant({"t/test_x.py": broken}, [parse_test_id("t/test_x.py::test_ok")], random.Random(0))
    assert len(planting.canaries) == 2
    assert planting.sources["t/test_x.py"].startswith(broken)
