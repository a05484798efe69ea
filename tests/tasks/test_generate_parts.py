"""The parts of `gym-swe tasks generate` that need no sandbox: mutation operators (each edit is one place and
compiles), the environment inferred from packaging files, and the rules statements are held to."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from gym_swe.generate.mutate import is_library_file, is_test_file, mutations
from gym_swe.generate.repository import (
    pyproject_requirements,
    requirement_lines,
    setup_cfg_requirements,
)
from gym_swe.generate.rewrite import Rejected, Target, rewritten
from gym_swe.generate.statements import scrub, templated, what_failed, written_by_model
from gym_swe.rollout.generators.base import Sample

SOURCE = """\
def clamp(value, low, high):
    if value < low:
        return low
    if value > high:
        return high
    return value + 0


def both(a, b):
    return a and b


def pad(text, width):
    return text.rjust(width, " ")


def untested(x):
    return x < 1
"""


def by_operator(found):  # type: ignore[no-untyped-def]
    table: dict[str, list[tuple[str, str]]] = {}
    for mutation in found:
        table.setdefault(mutation.operator, []).append((mutation.original, mutation.replacement))
    return table


def test_each_operator_edits_one_place_and_the_result_compiles() -> None:
    found = list(mutations("pkg/mod.py", SOURCE, {"clamp", "both", "pad"}))
    table = by_operator(found)
    assert ("<", "<=") in table["compare"] and (">", ">=") in table["compare"]
    assert ("+", "-") in table["arithmetic"]
    assert ("and", "or") in table["boolean"]
    assert ("0", "1") in table["off_by_one"]
    assert ("value < low", "not (value < low)") in table["negate_condition"]
    assert any(original.strip().startswith("if value < low:") for original, _ in table["remove_guard"])
    assert ('width, " "', '" ", width') in table["swap_arguments"]
    for mutation in found:
        changed = mutation.apply(SOURCE)
        ast.parse(changed)
        assert changed != SOURCE
        # one place: the texts around the edit are the original's
        assert changed[: mutation.start] == SOURCE[: mutation.start]
        assert changed.endswith(SOURCE[mutation.end :])
    assert {mutation.function for mutation in found} == {"clamp", "both", "pad"}  # not `untested`
    assert len({mutation.key for mutation in found}) == len(found)


def test_string_building_is_not_an_arithmetic_mutation() -> None:
    source = 'def greet(name):\n    return "hi " + name\n'
    assert "arithmetic" not in by_operator(mutations("m.py", source, {"greet"}))


def test_test_files_are_never_mutated() -> None:
    assert is_test_file("tests/test_a.py") and is_test_file("pkg/tests/helpers.py")
    assert is_test_file("conftest.py") and is_test_file("a_test.py")
    assert is_library_file("src/pkg/core.py") and not is_library_file("tests/test_a.py")
    assert not is_library_file("setup.py") and not is_library_file("docs/conf.py")


def test_environment_from_packaging_files() -> None:
    pyproject = """
[project]
name = "demo"
dependencies = ["attrs>=22"]
[project.optional-dependencies]
tests = ["pytest>=7", "hypothesis"]
docs = ["sphinx"]
"""
    assert pyproject_requirements(pyproject) == ["attrs>=22", "pytest>=7", "hypothesis"]
    setup_cfg = "[options]\ninstall_requires =\n    six\n[options.extras_require]\ndev =\n    pytest\n"
    assert setup_cfg_requirements(setup_cfg) == ["six", "pytest"]
    assert requirement_lines("-r base.txt\n# c\npytest==8.0  # pinned\n-e .\nmock\n") == [
        "pytest==8.0",
        "mock",
    ]


OUTPUT = """\
___________________________ TestRange.test_union[a] ___________________________
tests/test_range.py:40: in test_union
    assert Range("^1 || ^3").satisfies("3.1.0")
semverkit/range.py:120: in satisfies
    return any(matches(s) for s in self.sets)
E   AssertionError: assert False
E    +  where False = test_union_helper()
___________________________ test_other ___________________________
E   ValueError: bad
=========================== short test summary info ============================
FAILED tests/test_range.py::TestRange::test_union[a] - AssertionError
"""


def test_statements_say_what_failed_and_never_name_the_tests_or_hold_the_fix() -> None:
    failing = ["tests/test_range.py::TestRange::test_union[a]"]
    lines = what_failed(OUTPUT, failing, ["tests/test_range.py"])
    assert "in satisfies (semverkit/range.py)" in lines and "AssertionError: assert False" in lines
    assert not any("test_range.py" in line for line in lines)
    fix = "+++ b/semverkit/range.py\n+        return any(matches(s) for s in self.sets)\n"
    text = templated("Unions", OUTPUT, failing, ["tests/test_range.py"], fix)
    assert "test_union" not in text and "TestRange" not in text and "test_range.py" not in text
    assert "matches(s)" not in text
    assert "AssertionError: assert False" in text
    # a line holding the fix is dropped whole, whoever wrote it (a model's statement too)
    assert (
        scrub("Try `return any(matches(s) for s in self.sets)` there.\nOther.", [], fix).strip() == "Other."
    )


@pytest.mark.parametrize(
    "answer, error",
    [
        ("```python\ndef other(x):\n    return x\n```", "not one function named clamp"),
        ("```python\ndef clamp(x:\n```", "not Python"),
    ],
)
def test_a_rewrite_must_be_the_function(answer: str, error: str) -> None:
    target = Target("pkg/mod.py", "clamp", 0, 10, "")
    with pytest.raises(Rejected, match=error):
        rewritten(answer, target)


def test_a_rewrite_is_indented_as_the_original() -> None:
    target = Target("pkg/mod.py", "Box.size", 0, 10, "    ")
    text = rewritten("Here:\n```python\ndef size(self):\n    return 2\n```\n", target)
    assert text == "    def size(self):\n        return 2\n"


class Echo:
    """A scripted policy behind a real tokenizer: answers every prompt with ``answer``."""

    name = "echo"

    def __init__(self, tokenizer: Any, answer: str) -> None:
        self.tokenizer, self.answer, self.prompts = tokenizer, answer, []  # type: ignore[var-annotated]

    def generate(self, prompts: Any, params: Any, seeds: Any = None) -> list[Sample]:
        self.prompts += [self.tokenizer.decode(list(prompt)) for prompt in prompts]
        return [Sample(token_ids=[1], logprobs=None, text=self.answer, finish_reason="stop") for _ in prompts]


def test_a_model_written_statement_is_held_to_the_same_rules() -> None:
    """A model that names the hidden test and quotes the fix: both are taken out of what it wrote."""
    from tests.rollout.test_trajectories import load

    failing = ["tests/test_range.py::TestRange::test_union[a]"]
    fix = "+++ b/semverkit/range.py\n+        return any(matches(s) for s in self.sets)\n"
    answer = (
        "Range unions never match\n\nRange('^1 || ^3').satisfies('3.1.0') is False, see test_union.\n"
        "Use `return any(matches(s) for s in self.sets)` to fix it."
    )
    model = Echo(load("qwen2.5-instruct"), answer)
    text = written_by_model(model, OUTPUT, failing, ["tests/test_range.py"], fix)
    assert "<|im_start|>user" in model.prompts[0] and "AssertionError: assert False" in model.prompts[0]
    assert "test_union" not in model.prompts[0]  # the model is not shown the hidden test's name either
    assert text.startswith("Range unions never match") and "satisfies('3.1.0') is False" in text
    assert "test_union" not in text and "matches(s)" not in text
