"""Parameter tables, found and sealed row by row.

A test parametrised by one table of literals, whose check compares with one of the table's columns
(``assert to_duration(text) == pytest.approx(seconds)``, the column used nowhere else), has that column
written as a token per row and the check as ``_gym_seal(seconds, ACTUAL)``. Each row's expectation is then
out of the run like a sealed literal, which matters because a table is readable by the code under test (on
disk, or as the test function's marks) and is an answer key to every other check of the same values.
pytest would name the cases by their values (``[250ms-0.25]``), so the sealed rows get ids of their own
(``ids=``) and the grader names their outcomes and records back: a table is sealed only when every row's
name, worked out as pytest names cases, is one of the task's own test ids, so that nothing is renamed
wrongly.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gym_swe.grading import test_source

if TYPE_CHECKING:
    from gym_swe.grading.seals.forms import Check

FUNCTION = "_gym_seal"
"""The name the driver gives its recorder in ``builtins``."""
_EQUAL_CALLS = frozenset({"assertEqual", "assertEquals"})
Edit = tuple[ast.AST, str]
"""A node of the file and the text that takes its place."""


@dataclass(frozen=True)
class Table:
    """A test's one ``@pytest.mark.parametrize(names, [rows of literals])``, with nothing else to it."""

    decorator: ast.Call
    parameters: list[str]
    rows: list[list[ast.expr]]


def table_of(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Table | None:
    marks = [node for node in function.decorator_list if test_source.callee(node) == "parametrize"]
    if len(marks) != 1 or not isinstance(marks[0], ast.Call):
        return None
    call = marks[0]
    if call.keywords or len(call.args) != 2:
        return None
    names, table = call.args
    if not isinstance(table, (ast.List, ast.Tuple)):
        return None
    if isinstance(names, ast.Constant) and isinstance(names.value, str):
        parameters = [name.strip() for name in names.value.split(",")]
    elif isinstance(names, (ast.List, ast.Tuple)) and all(
        isinstance(name, ast.Constant) and isinstance(name.value, str) for name in names.elts
    ):
        parameters = [name.value.strip() for name in names.elts]  # type: ignore[attr-defined]
    else:
        return None
    rows: list[list[ast.expr]] = []
    for row in table.elts:
        if not isinstance(row, (ast.List, ast.Tuple)) or len(row.elts) != len(parameters):
            return None
        if not all(test_source.is_literal(value) for value in row.elts):
            return None
        rows.append(list(row.elts))
    return Table(call, parameters, rows) if len(parameters) > 1 and rows else None


def _case_id(table: Table, index: int) -> str | None:
    """Row ``index``'s id as pytest makes it from literal values, or None where that is not certain."""
    parts = []
    for parameter, node in zip(table.parameters, table.rows[index]):
        value = ast.literal_eval(node)
        if isinstance(value, str):  # pytest escapes what is not printable ASCII, and backslashes
            if not value or not value.isascii() or not value.isprintable() or "\\" in value:
                return None
            parts.append(value)
        elif value is None or isinstance(value, (bool, int, float, complex)):
            parts.append(str(value))
        elif isinstance(value, bytes):
            return None
        else:  # a container: pytest names it by its parameter and the row
            parts.append(f"{parameter}{index}")
    return "-".join(parts)


def case_names(node: str, table: Table, known: Collection[str]) -> list[str] | None:
    """Each row's case (``[id]``) where every row's is one of the task's ids of ``node`` (whole, or cut at
    whitespace as SWE-bench's log parsing cuts them) and no two rows share one; None otherwise."""
    ids = [_case_id(table, index) for index in range(len(table.rows))]
    if any(case_id is None for case_id in ids) or len(set(ids)) != len(ids):
        return None
    mine = [raw for raw in known if raw.startswith(node + "[")]
    names = []
    for case_id in ids:
        full = f"{node}[{case_id}]"
        named = [raw for raw in mine if raw == full or (full.startswith(raw) and full[len(raw)].isspace())]
        if len(named) != 1:
            return None
        names.append(f"[{case_id}]")
    return names


def approx_of(node: ast.expr) -> ast.expr | None:
    """X of ``pytest.approx(X)`` (no keywords), else None."""
    if isinstance(node, ast.Call) and test_source.callee(node) == "approx" and len(node.args) == 1:
        return None if node.keywords else node.args[0]
    return None


def column_form(
    statement: ast.stmt, function: ast.FunctionDef | ast.AsyncFunctionDef, table: Table
) -> tuple[str, ast.expr, str] | None:
    """(op, ACTUAL, parameter) of a check that compares with a column of the test's table, a parameter its
    body uses nowhere else; None otherwise."""
    pairs: list[tuple[str, ast.expr, ast.expr]] = []
    if isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Compare):
        compare = statement.test
        if len(compare.ops) == 1 and isinstance(compare.ops[0], ast.Eq):
            left, right = compare.left, compare.comparators[0]
            for actual, expected in ((left, right), (right, left)):
                inner = approx_of(expected)
                pairs += [("approx", actual, inner)] if inner is not None else [("==", actual, expected)]
    elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        if test_source.callee(call) in _EQUAL_CALLS and len(call.args) == 2 and not call.keywords:
            first, second = call.args
            pairs += [("==", first, second), ("==", second, first)]
    for op, actual, expected in pairs:
        if not (isinstance(expected, ast.Name) and expected.id in table.parameters):
            continue
        uses = [
            node
            for statement_ in function.body
            for node in ast.walk(statement_)
            if isinstance(node, ast.Name) and node.id == expected.id
        ]
        if len(uses) == 1 and not test_source.is_literal(actual):
            return op, actual, expected.id
    return None


def token(rng: random.Random) -> str:
    return f"{rng.getrandbits(64):016x}"


def seal_table(
    tree: ast.Module,
    lines: list[str],
    node: str,
    line: int,
    checks: list[Check],
    rng: random.Random,
    calibrating: bool,
) -> tuple[list[Edit], list[tuple[str, Check]], dict[str, str]] | None:
    """The edits that seal a table's column (all its rows, or none), each row's token with its check, and
    the cases' names (as the run names them -> as the task does)."""
    definition = test_source.find_test(tree, node.split("::")[1:])
    table = table_of(definition[0]) if definition is not None else None
    statement = next(
        (s for s in test_source.checked_statements(definition[0]) if s.lineno == line), None
    ) if definition is not None else None  # fmt: skip
    form = column_form(statement, definition[0], table) if statement and definition and table else None
    by_row = {check.row: check for check in checks}
    if table is None or statement is None or form is None or sorted(by_row) != list(range(len(table.rows))):
        return None
    op, actual, parameter = form
    if any(check.op != op or check.column != parameter for check in checks):
        return None
    column = table.parameters.index(parameter)
    tokens = [token(rng) for _ in table.rows]
    ids = [token(rng) for _ in table.rows]
    rows = []
    for row, values in enumerate(table.rows):
        cells = [f'"{tokens[row]}"' if index == column else test_source.source_of(lines, value)
                 for index, value in enumerate(values)]  # fmt: skip
        rows.append(f"({', '.join(cells)})")
    mark = table.decorator
    rewritten = (
        f"{test_source.source_of(lines, mark.func)}({test_source.source_of(lines, mark.args[0])}, "
        f"[{', '.join(rows)}], ids=[{', '.join(repr(case_id) for case_id in ids)}])"
    )
    call = f"{FUNCTION}({parameter}, ({test_source.source_of(lines, actual)})"
    if calibrating:
        expected = ", ".join(f'"{tokens[row]}": ({by_row[row].expected})' for row in by_row)
        call += f", {{{expected}}}[{parameter}], {op!r}"
    edits: list[Edit] = [(mark, rewritten), (statement, call + ")")]
    made = [(tokens[row], by_row[row]) for row in by_row]
    names = {f"{node}[{ids[row]}]": node + by_row[row].case for row in by_row}
    return edits, made, names
