"""Function-level bug-fixing tasks (HumanEvalFix style), in the HumanEvalPack schema.

Sources: ``"bundled"`` (48 original tasks shipped with gym_swe, 8 of each HumanEvalFix bug type),
``"humanevalpack"`` (``bigcode/humanevalpack``, config python, split test, through ``datasets``), or a path
to a .jsonl/.parquet file of rows in that schema (with or without its ``import`` and ``test_setup`` fields).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from gym_swe.errors import TaskError
from gym_swe.tasks.base import TaskSet, load_source, read_hub_rows, read_rows, require_fields

BUG_TYPES = (
    "missing logic",
    "excess logic",
    "value misuse",
    "operator misuse",
    "variable misuse",
    "function misuse",
)
HUMANEVALPACK = ("bigcode/humanevalpack", "python", "test")
REQUIRED = ("task_id", "prompt", "declaration", "canonical_solution", "buggy_solution", "test", "entry_point")
OPTIONAL = (
    "example_test",
    "bug_type",
    "failure_symptoms",
    "instruction",
    "docstring",
    "import",
    "test_setup",
)


@dataclass(frozen=True)
class FunctionTask:
    """A buggy function, its fix, and its tests."""

    task_id: str
    entry_point: str
    prompt: str
    """Imports, the signature and the docstring (HumanEvalPack's ``prompt``)."""
    declaration: str
    """Imports and the signature, without the docstring."""
    canonical_solution: str
    """The correct function body."""
    buggy_solution: str
    """The body with the bug."""
    test: str
    """The hidden tests: ``def check(<entry_point>): assert ...`` and a ``check(<entry_point>)`` call."""
    example_test: str = ""
    """The examples of the docstring as tests, in the same shape; may be shown to the agent."""
    bug_type: str = ""
    failure_symptoms: str = ""
    instruction: str = ""
    imports: str = ""
    test_setup: str = ""

    @property
    def buggy_code(self) -> str:
        """The file the agent starts from: the prompt (docstring included) and the buggy body."""
        return _join(self.imports, self.prompt + self.buggy_solution).lstrip("\n")

    @property
    def fixed_code(self) -> str:
        return _join(self.imports, self.prompt + self.canonical_solution).lstrip("\n")

    @property
    def reference(self) -> str:
        """The trusted reference module the grader evaluates tests against (helpers such as ``poly``)."""
        return _join(self.imports, self.test_setup, self.declaration + self.canonical_solution)


def _join(*parts: str) -> str:
    return "\n".join(part.rstrip("\n") for part in parts if part.strip()) + "\n"


def task_from_row(row: Mapping[str, Any], number: int, source: str) -> FunctionTask:
    require_fields(row, number, source, dict.fromkeys(REQUIRED, str))
    optional = {name: row.get(name) or "" for name in OPTIONAL}
    for name, value in optional.items():
        if not isinstance(value, str):
            require_fields(row, number, source, {name: str})
    return FunctionTask(
        task_id=row["task_id"],
        entry_point=row["entry_point"],
        prompt=row["prompt"],
        declaration=row["declaration"],
        canonical_solution=row["canonical_solution"],
        buggy_solution=row["buggy_solution"],
        test=row["test"],
        example_test=optional["example_test"],
        bug_type=optional["bug_type"],
        failure_symptoms=optional["failure_symptoms"],
        instruction=optional["instruction"],
        imports=optional["import"],
        test_setup=optional["test_setup"],
    )


def _bundled_rows() -> list[dict[str, Any]]:
    path = resources.files("gym_swe.tasks") / "data" / "codedebug_bundled.jsonl"
    with resources.as_file(path) as file:
        return read_rows(file)


def _humanevalpack_rows() -> list[dict[str, Any]]:
    try:
        return read_hub_rows(*HUMANEVALPACK)
    except TaskError as error:
        raise TaskError(
            f"{error} -- Without the Hub, use a local copy of it: where the Hub is reachable, run "
            "`python -c \"import datasets; datasets.load_dataset('bigcode/humanevalpack', 'python', "
            "split='test').to_json('humanevalpack.jsonl')\"` (or .to_parquet('humanevalpack.parquet')), "
            "then pass tasks='humanevalpack.jsonl' (gym-swe: --tasks humanevalpack.jsonl)."
        ) from error


NAMED_SOURCES = {
    "bundled": _bundled_rows,
    "humanevalpack": _humanevalpack_rows,
}


@functools.lru_cache(maxsize=16)
def load_function_tasks(source: str = "bundled") -> TaskSet[FunctionTask]:
    """The tasks of ``source`` (cached per source): "bundled", "humanevalpack", or a .jsonl/.parquet path."""
    rows, name = load_source(source, NAMED_SOURCES)
    return TaskSet([task_from_row(row, number, name) for number, row in enumerate(rows, start=1)], name)
