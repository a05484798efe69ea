"""Writing sealed checks into the test files: each check becomes a call of the driver's recorder with a
fresh token, and its expectation leaves the file.

    assert ACTUAL == EXPECTED                ->  _gym_seal("TOKEN", (ACTUAL))
    with pytest.raises(E, match="x") as i:   ->  with _gym_raises("TOKEN", pytest.raises(BaseException)) as i:

A sealed exception block catches whatever its block raises (``BaseException``, through the test's own
``raises``/``assertRaises``, so that ``info``/``context`` are what the test expects them to be) and records
what that was. Calibrating (the gold patch's run), the expectation goes along as well, so that the check also
holds in the process as written, with Python's and pytest's own semantics.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from gym_swe.grading import test_source
from gym_swe.grading.seals import tables
from gym_swe.grading.seals.forms import RAISES, Check, Form, expression, form_of
from gym_swe.grading.seals.judging import Record

FUNCTION = tables.FUNCTION
RAISES_FUNCTION = "_gym_raises"
"""The name the driver gives its recording context manager in ``builtins``."""


@dataclass(frozen=True)
class Seal:
    token: str
    check: Check


@dataclass
class Sealing:
    sources: dict[str, str] = field(default_factory=dict)
    """The new text of every test file with a sealed check."""
    seals: list[Seal] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    """The cases of sealed tables as the run names them (by the ids the grader gave them) -> as pytest would
    have named them, the task's own names."""

    def named(self, outcomes: Mapping[str, str]) -> dict[str, str]:
        """A report's outcomes under the task's names of the cases of sealed tables."""
        return {self.names.get(case, case): outcome for case, outcome in outcomes.items()}

    def named_records(self, records: Sequence[Record]) -> list[Record]:
        return [replace(record, case=self.names.get(record.case, record.case)) for record in records]


def seal(
    sources: Mapping[str, str], checks: Collection[Check], rng: random.Random, calibrating: bool = False
) -> Sealing:
    """Write each of ``checks`` as a call of the recorder with a fresh token (a table's rows: the column
    as a token per row, the cases with ids of their own). ``calibrating``: the expectation goes along, so
    that the check also holds in the process as written (the gold patch's run, which learns what can be
    sealed)."""
    sealing = Sealing()
    by_file: dict[str, list[Check]] = {}
    for check in checks:
        if check.file in sources:
            by_file.setdefault(check.file, []).append(check)
    for file, file_checks in sorted(by_file.items()):
        try:
            tree = ast.parse(sources[file])
        except (SyntaxError, ValueError):
            continue
        lines = test_source.split_lines(sources[file])
        statements = {
            (node.lineno, node.col_offset): node
            for node in ast.walk(tree)
            if isinstance(node, (ast.Assert, ast.Expr, ast.With))
        }
        edits: list[tables.Edit] = []
        made: list[Seal] = []
        names: dict[str, str] = {}
        rows: dict[tuple[str, int], list[Check]] = {}
        for check in file_checks:
            if check.case:
                rows.setdefault((check.node, check.line), []).append(check)
                continue
            statement = statements.get((check.line, check.column_offset))
            form = form_of(statement) if isinstance(statement, ast.stmt) else None
            if statement is None or form is None or form.op != check.op:
                continue
            token = tables.token(rng)
            edits.append(_edit(lines, statement, form, token, calibrating))
            made.append(Seal(token, check))
        for (node, line), table_checks in sorted(rows.items()):
            sealed_table = tables.seal_table(tree, lines, node, line, table_checks, rng, calibrating)
            if sealed_table is not None:
                edits += sealed_table[0]
                made += [Seal(token, check) for token, check in sealed_table[1]]
                names.update(sealed_table[2])
        for edited, replacement in sorted(edits, key=_position, reverse=True):
            lines = test_source.replaced(lines, edited, replacement)
        text = "".join(lines)
        try:
            ast.parse(text)
        except (SyntaxError, ValueError):  # never write what would break the file's collection
            continue
        sealing.sources[file] = text
        sealing.seals += made
        sealing.names.update(names)
    return sealing


def _position(edit: tables.Edit) -> tuple[int, int]:
    node = edit[0]
    return node.lineno, node.col_offset  # type: ignore[attr-defined]


def _edit(lines: list[str], statement: ast.stmt, form: Form, token: str, calibrating: bool) -> tables.Edit:
    expected = expression(lines, form.expected)
    if form.op == RAISES:
        call = form.site
        assert isinstance(call, ast.Call)
        catch_all = f"{_catching_function(lines, call)}(BaseException)"
        text = f'{RAISES_FUNCTION}("{token}", {catch_all}'
        if calibrating:
            pattern = test_source.source_of(lines, form.match) if form.match is not None else "None"
            text += f", ({expected}), {pattern}"
        return call, text + ")"
    assert form.actual is not None
    text = f'{FUNCTION}("{token}", ({test_source.source_of(lines, form.actual)})'
    if calibrating:
        text += f", ({expected}), {form.op!r}"
    return statement, text + ")"


def _catching_function(lines: list[str], call: ast.Call) -> str:
    """The test's own ``raises``/``assertRaises``, to be called with ``BaseException``."""
    func = call.func
    if test_source.callee(call).startswith("assertRaisesRegex") and isinstance(func, ast.Attribute):
        return f"{test_source.source_of(lines, func.value)}.assertRaises"
    return test_source.source_of(lines, func)
