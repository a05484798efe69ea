"""Which checks of a FAIL_TO_PASS test can be sealed: the forms, where in the test they may stand, and the
candidates of a task (`candidates`).

A check can be sealed when its expectation is a literal the run can do without (the literal goes; ACTUAL is
recorded and held against it outside), or an exception block whose expected exception the grader can name
(the exception goes; what was raised is recorded):

    assert ACTUAL == LITERAL / != / < <= > >= / == pytest.approx(LITERAL)
    assert ACTUAL is None / is not None / is True / is False
    assert LITERAL in ACTUAL / not in
    self.assertEqual(ACTUAL, LITERAL) / assertNotEqual / assertIn(LITERAL, ACTUAL) / assertNotIn /
        assertIsNone(ACTUAL) / assertIsNotNone / assertGreater(ACTUAL, LITERAL) ... (and the literal first)
    with pytest.raises(EXCEPTION[, match=LITERAL]) [as info]: ...
    with self.assertRaises(EXCEPTION) [as context]: ... / assertRaisesRegex(EXCEPTION, LITERAL)

The check stands anywhere in the test's own body outside loops, branches and ``try`` (at the top, or in
``with`` blocks), in a test that cannot return before its checks: run once per case, always, whenever the
test passes. (A sealed check does not stop the test when it fails; the test goes on, and fails outside.)

A parameter table's column is a form too (`tables`): ``assert f(text) == expected`` where ``expected`` is a
column of the test's one table of literals, sealed row by row.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gym_swe.grading import test_source
from gym_swe.grading.seals import tables
from gym_swe.grading.test_ids import TestId

COMPARISONS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_MIRRORED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
"""An operator with its operands swapped (``3 < x`` is ``x > 3``)."""
_IDENTITY = {ast.Is: "is", ast.IsNot: "is not"}
_CONTAINMENT = {ast.In: "in", ast.NotIn: "not in"}
_UNITTEST_BINARY = {
    **dict.fromkeys(("assertEqual", "assertEquals", "assertListEqual", "assertDictEqual", "assertTupleEqual",
                     "assertSetEqual", "assertSequenceEqual", "assertMultiLineEqual"), "=="),
    **dict.fromkeys(("assertNotEqual", "assertNotEquals"), "!="),
    "assertGreater": ">", "assertGreaterEqual": ">=", "assertLess": "<", "assertLessEqual": "<=",
}  # fmt: skip
_UNITTEST_CONTAINMENT = {"assertIn": "in", "assertNotIn": "not in"}
_UNITTEST_NONE = {"assertIsNone": "is", "assertIsNotNone": "is not"}
RAISES = "raises"
"""The op of a sealed exception block."""
OPS = ("==", "approx", "!=", "<", "<=", ">", ">=", "in", "not in", "is", "is not", RAISES)


@dataclass(frozen=True)
class Check:
    """A check of a FAIL_TO_PASS test that could be sealed."""

    node: str
    """The test: ``file::Class::name``."""
    line: int
    """Its statement's first line in the file as the test patch leaves it."""
    op: str
    """One of `OPS`."""
    expected: str
    """The literal as written (a table's: this row's value); for ``raises``, the exception's expression."""
    column_offset: int = 0
    """Where its statement starts on ``line`` (two checks may share a line)."""
    match: str = ""
    """``raises``: the literal pattern its message must match, or ``""``."""
    case: str = ""
    """A row of a parameter table: its case as pytest names it, ``[250ms-0.25]``; ``""`` for a literal."""
    column: str = ""
    """A row of a parameter table: the parameter that holds its expectation."""
    row: int = -1
    """A row of a parameter table: its index in the table."""

    @property
    def file(self) -> str:
        return self.node.split("::", 1)[0]

    @property
    def key(self) -> str:
        """Names the check across grades of the task (the file it is in does not change)."""
        return f"{self.node}@{self.line}:{self.column_offset}{self.case}"


@dataclass(frozen=True)
class Form:
    """A statement read as a check: ``op``, the ACTUAL expression, and the expectation."""

    op: str
    actual: ast.expr | None
    """None for ``raises`` (what is raised in its block is recorded)."""
    expected: ast.expr
    """The literal; for ``raises``, the exception's expression."""
    match: ast.expr | None = None
    """``raises``: the literal pattern, if any."""
    site: ast.AST | None = None
    """What the sealed text replaces: the statement (None), or a raises block's context expression."""


def form_of(statement: ast.stmt) -> Form | None:
    """The statement as a check that could be sealed, or None."""
    if isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Compare):
        return _compare_form(statement.test)
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        return _unittest_form(statement.value)
    if isinstance(statement, ast.With):
        return _raises_form(statement)
    return None


def _compare_form(compare: ast.Compare) -> Form | None:
    if len(compare.ops) != 1:
        return None
    left, right, op = compare.left, compare.comparators[0], type(compare.ops[0])
    if op in COMPARISONS:
        name = COMPARISONS[op]
        if name == "==":
            for actual, expected in ((left, right), (right, left)):
                inner = tables.approx_of(expected)
                if inner is not None and _literal(inner) and not _literal(actual):
                    return Form("approx", actual, inner)
        if _literal(right) and not _literal(left):
            return Form(name, left, right)
        if _literal(left) and not _literal(right):
            return Form(_MIRRORED[name], right, left)
        return None
    if op in _IDENTITY and _singleton(right) and not _literal(left):
        return Form(_IDENTITY[op], left, right)
    if op in _CONTAINMENT and _needle(left) and not _literal(right):
        return Form(_CONTAINMENT[op], right, left)
    return None


def _unittest_form(call: ast.Call) -> Form | None:
    name = test_source.callee(call)
    if any(keyword.arg != "msg" for keyword in call.keywords) or not isinstance(call.func, ast.Attribute):
        return None
    args = call.args
    if name in _UNITTEST_NONE and len(args) in (1, 2):
        return None if _literal(args[0]) else Form(_UNITTEST_NONE[name], args[0], ast.Constant(value=None))
    if len(args) not in (2, 3):
        return None
    first, second = args[0], args[1]
    if name in _UNITTEST_BINARY:
        op = _UNITTEST_BINARY[name]
        if _literal(second) and not _literal(first):
            return Form(op, first, second)
        if _literal(first) and not _literal(second):
            return Form(_MIRRORED[op], second, first)
    if name in _UNITTEST_CONTAINMENT and _needle(first) and not _literal(second):
        return Form(_UNITTEST_CONTAINMENT[name], second, first)
    return None


def _raises_form(statement: ast.With) -> Form | None:
    if len(statement.items) != 1:
        return None
    call = statement.items[0].context_expr
    name = test_source.callee(call)
    if not isinstance(call, ast.Call) or name not in test_source.RAISES_CALLS or not call.args:
        return None
    if any(isinstance(arg, ast.Starred) for arg in call.args):
        return None
    pattern: ast.expr | None = None
    if name == "raises":  # pytest.raises(E, match=...)
        if len(call.args) != 1 or any(keyword.arg != "match" for keyword in call.keywords):
            return None
        pattern = next((keyword.value for keyword in call.keywords), None)
    elif name == "assertRaises":
        if len(call.args) != 1 or call.keywords or not isinstance(call.func, ast.Attribute):
            return None
    else:  # assertRaisesRegex(E, pattern)
        if len(call.args) != 2 or call.keywords or not isinstance(call.func, ast.Attribute):
            return None
        pattern = call.args[1]
    if pattern is not None and not (isinstance(pattern, ast.Constant) and isinstance(pattern.value, str)):
        return None  # a pattern the grader cannot hold outside without running the test's code
    return Form(RAISES, None, call.args[0], pattern, site=call)


def expression(lines: list[str], node: ast.expr) -> str:
    """An expectation's source as written (one the form supplies, ``assertIsNone``'s None, as Python's)."""
    return test_source.source_of(lines, node) if hasattr(node, "lineno") else ast.unparse(node)


def _literal(node: ast.expr) -> bool:
    return test_source.is_literal(node)


def _singleton(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, bool))


def _needle(node: ast.expr) -> bool:
    """A literal looked for in a value: a string, bytes or a number (not a container of them)."""
    return isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes, int, float))


# -- the candidates of a task ------------------------------------------------------------------------------


def candidates(
    sources: Mapping[str, str], targets: Sequence[TestId], known: Collection[str] = ()
) -> list[Check]:
    """The checks of the ``targets``' test functions that could be sealed (see the module docstring).
    ``known``: all the task's test ids; a parameter table is sealed only when they name each of its rows."""
    found: list[Check] = []
    nodes = {target.node for target in targets if target.node and target.file in sources}
    trees: dict[str, ast.Module | None] = {}
    for node in sorted(nodes):
        file = node.split("::", 1)[0]
        if file not in trees:
            try:
                trees[file] = ast.parse(sources[file])
            except (SyntaxError, ValueError):
                trees[file] = None
        tree = trees[file]
        definition = test_source.find_test(tree, node.split("::")[1:]) if tree is not None else None
        if definition is None:
            continue
        function = definition[0]
        lines = test_source.split_lines(sources[file])
        table = tables.table_of(function)
        names = tables.case_names(node, table, known) if table is not None else None
        for statement in test_source.checked_statements(function):
            form = form_of(statement)
            if form is not None:
                match = test_source.source_of(lines, form.match) if form.match is not None else ""
                expected = expression(lines, form.expected)
                found.append(
                    Check(node, statement.lineno, form.op, expected, statement.col_offset, match=match)
                )
                continue
            if table is None or names is None:
                continue
            column = tables.column_form(statement, function, table)
            if column is not None:
                op, _, parameter = column
                index = table.parameters.index(parameter)
                for row, (values, case) in enumerate(zip(table.rows, names)):
                    value = test_source.source_of(lines, values[index])
                    offset = statement.col_offset
                    found.append(Check(node, statement.lineno, op, value, offset, "", case, parameter, row))
    return found


def literal_value(text: str) -> Any:
    """The value of a check's literal, as its source segment spells it. A segment that spans lines without
    brackets of its own (strings joined across lines inside the test's parentheses) is read as the expression
    it is there, in parentheses; ``ast.literal_eval`` alone takes its second line for an indent."""
    try:
        return ast.literal_eval(text)
    except SyntaxError:
        if "\n" not in text:
            raise
        return ast.literal_eval(f"(\n{text}\n)")
