"""Sealed checks: expectations of the task's tests that the test run never holds.

Repository tests run in the process of the code under test, so whatever that process reports can be forged:
code that has read gym_swe can rewrite pytest's report at exit, and where it can tell the task's tests from
the decoys beside them (the buggy outputs it sees, which values look right) decoys do not stop it. A sealed
check takes the expectation out of the process instead. A check of a FAIL_TO_PASS test that compares with a
literal for equality,

    assert ACTUAL == EXPECTED   assert ACTUAL == pytest.approx(EXPECTED)   self.assertEqual(ACTUAL, EXPECTED)

is written ``_gym_seal("TOKEN", ACTUAL)``: the run records ACTUAL as plain data (the driver's ``_gym_seal``
writes it out as JSON, reading ``str``, ``int``, lists and dicts through their base types, and numbers of
other types, ``Fraction``, ``Decimal``, numpy's, as the int or float they equal exactly), and the grader,
outside the process, holds it against EXPECTED. The task's test passes only if pytest says so and its sealed
checks held, judged on the task's side (`judge`): every report entry the task's id was matched to must be the
test's own, exactly as pytest names it, with its records holding, so an entry the run reworded to pass for
the test counts for nothing. The literal is nowhere the run can read from the grader (the test patch is
removed before the run, the file holds the token), so no report or record the run writes makes a sealed check
hold without ACTUAL being right: the code has to compute it, or find the literal in what the run can read (a
value also written in a test that is not sealed, or elsewhere in the repository, is no secret).

Only equality is sealed: records are the run's to write, and ``EXPECTED in ACTUAL`` or ``not in`` hold for
values made without knowing EXPECTED. A literal in a check of a test with several cases (parameters,
parametrised fixtures) is not sealed: a literal the same in every case would be learned from a case the bug
gets right.

A parameter table is sealed row by row instead. A test parametrised by one table of literals, whose check
compares with one of the table's columns (``assert to_duration(text) == pytest.approx(seconds)``, the column
used nowhere else), has that column written as a token per row and the check as ``_gym_seal(seconds,
ACTUAL)``. Each row's expectation is then out of the run like a sealed literal, which matters because a
table is readable by the code under test (on disk, or as the test function's marks) and is an answer key
to every other check of the same values. pytest would name the cases by their values (``[250ms-0.25]``),
so the sealed rows get ids of their own (``ids=``) and the grader names their outcomes and records back:
a table is sealed only when every row's name, worked out as pytest names cases, is one of the task's own
test ids, so that nothing is renamed wrongly.

Which checks can be sealed is learned once per task from the gold patch (`calibrating`): the checks are
sealed with EXPECTED given, so the run also holds them in the process with Python's own semantics, and a
check qualifies only where, with the fix, its one case recorded plain data that holds outside as it did
inside. A check whose value is a project object (``Version("1.2") == "1.2"``, compared by the object's own
``__eq__``) cannot be sealed, and keeps its decoys. Only the calibration of a gold patch that resolved the
task is kept.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import os
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gym_swe.grading import test_source
from gym_swe.grading.test_ids import TestId, parse_test_id

SEAL_CHECKS = True
"""Whether the grader seals the checks it can (tests turn it off to show what decoys alone do)."""
RECORDS_VARIABLE = "GYM_SWE_SEALS"
"""The environment variable that tells the driver where to write the records (the driver's SEAL_RECORDS)."""
FUNCTION = "_gym_seal"
"""The name the driver gives its recorder in ``builtins``."""
MAX_RECORD_CHARS = 8 * 1024 * 1024
"""A value recorded larger than this is not plain data to the grader (the case fails)."""
_EQUAL_CALLS = frozenset({"assertEqual", "assertEquals"})


@dataclass(frozen=True)
class Check:
    """A check of a FAIL_TO_PASS test that could be sealed."""

    node: str
    """The test: ``file::Class::name``."""
    line: int
    """Its statement's first line in the file as the test patch leaves it."""
    op: str
    """``==``, ``in``, ``not in`` or ``approx``."""
    expected: str
    """The literal, as written (a table's: this row's value)."""
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
        return f"{self.node}@{self.line}{self.case}"


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
        return [
            Record(record.token, self.names.get(record.case, record.case), record.value, record.held)
            for record in records
        ]


# -- finding and sealing checks ------------------------------------------------------------------------------


def candidates(
    sources: Mapping[str, str], targets: Sequence[TestId], known: Collection[str] = ()
) -> list[Check]:
    """The checks of the ``targets``' test functions that could be sealed: in the tail of the test's body
    (only checks come after them, so nothing of the test's own work is skipped when they fail outside).
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
        table = _table(function)
        names = _case_names(node, table, known) if table is not None else None
        for statement in test_source.tail(function):
            form = _form(statement)
            if form is not None:
                op, _, expected = form
                found.append(Check(node, statement.lineno, op, test_source.source_of(lines, expected)))
                continue
            column = _column_form(statement, function, table) if table is not None and names else None
            if column is not None and table is not None and names is not None:
                op, _, parameter = column
                index = table.parameters.index(parameter)
                for row, (values, case) in enumerate(zip(table.rows, names)):
                    value = test_source.source_of(lines, values[index])
                    found.append(Check(node, statement.lineno, op, value, case, parameter, row))
    return found


@dataclass(frozen=True)
class _Table:
    """A test's one ``@pytest.mark.parametrize(names, [rows of literals])``, with nothing else to it."""

    decorator: ast.Call
    parameters: list[str]
    rows: list[list[ast.expr]]


def _table(function: ast.FunctionDef | ast.AsyncFunctionDef) -> _Table | None:
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
    return _Table(call, parameters, rows) if len(parameters) > 1 and rows else None


def _case_id(table: _Table, index: int) -> str | None:
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


def _case_names(node: str, table: _Table, known: Collection[str]) -> list[str] | None:
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


def _column_form(
    statement: ast.stmt, function: ast.FunctionDef | ast.AsyncFunctionDef, table: _Table
) -> tuple[str, ast.expr, str] | None:
    """(op, ACTUAL, parameter) of a check that compares with a column of the test's table, a parameter its
    body uses nowhere else; None otherwise."""
    pairs: list[tuple[str, ast.expr, ast.expr]] = []
    if isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Compare):
        compare = statement.test
        if len(compare.ops) == 1 and isinstance(compare.ops[0], ast.Eq):
            left, right = compare.left, compare.comparators[0]
            for actual, expected in ((left, right), (right, left)):
                inner = _approx_of(expected)
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


def _form(statement: ast.stmt) -> tuple[str, ast.expr, ast.expr] | None:
    """(op, ACTUAL, EXPECTED) of a check that compares with a literal; None for any other statement."""
    if isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Compare):
        compare = statement.test
        if len(compare.ops) != 1:
            return None
        left, right, op = compare.left, compare.comparators[0], compare.ops[0]
        if isinstance(op, ast.Eq):
            for actual, expected in ((left, right), (right, left)):
                inner = _approx_of(expected)
                if inner is not None and _literal(inner) and not _literal(actual):
                    return "approx", actual, inner
                if _literal(expected) and not _literal(actual):
                    return "==", actual, expected
        return None
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call, name = statement.value, test_source.callee(statement.value)
        if len(call.args) != 2 or call.keywords:
            return None
        first, second = call.args
        if name in _EQUAL_CALLS:
            if _literal(second) and not _literal(first):
                return "==", first, second
            if _literal(first) and not _literal(second):
                return "==", second, first
    return None


def _approx_of(node: ast.expr) -> ast.expr | None:
    if isinstance(node, ast.Call) and test_source.callee(node) == "approx" and len(node.args) == 1:
        return None if node.keywords else node.args[0]
    return None


def _literal(node: ast.expr) -> bool:
    return test_source.is_literal(node) and not (isinstance(node, ast.Constant) and node.value is None)


def seal(
    sources: Mapping[str, str], checks: Collection[Check], rng: random.Random, calibrating: bool = False
) -> Sealing:
    """Write each of ``checks`` as a call of the recorder with a fresh token (a table's rows: the column
    as a token per row, the cases with ids of their own). ``calibrating``: the literal and the operator go
    along, so that the check also holds in the process as written (the gold patch's run, which learns what
    can be sealed)."""
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
            (node.lineno, type(node).__name__): node
            for node in ast.walk(tree)
            if isinstance(node, (ast.Assert, ast.Expr))
        }
        edits: list[tuple[ast.stmt | ast.expr, str]] = []
        made: list[Seal] = []
        names: dict[str, str] = {}
        rows: dict[tuple[str, int], list[Check]] = {}
        for check in file_checks:
            if check.case:
                rows.setdefault((check.node, check.line), []).append(check)
                continue
            statement = statements.get((check.line, "Assert")) or statements.get((check.line, "Expr"))
            form = _form(statement) if statement is not None else None
            if statement is None or form is None or form[0] != check.op:
                continue
            token = _token(rng)
            actual = test_source.source_of(lines, form[1])
            call = f'{FUNCTION}("{token}", ({actual})'
            if calibrating:
                call += f", ({test_source.source_of(lines, form[2])}), {check.op!r}"
            edits.append((statement, call + ")"))
            made.append(Seal(token, check))
        for (node, line), table_checks in sorted(rows.items()):
            sealed_table = _seal_table(tree, lines, node, line, table_checks, rng, calibrating)
            if sealed_table is not None:
                edits += sealed_table[0]
                made += sealed_table[1]
                names.update(sealed_table[2])
        for edited, replacement in sorted(edits, key=lambda edit: edit[0].lineno, reverse=True):
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


def _token(rng: random.Random) -> str:
    return f"{rng.getrandbits(64):016x}"


def _seal_table(
    tree: ast.Module,
    lines: list[str],
    node: str,
    line: int,
    checks: list[Check],
    rng: random.Random,
    calibrating: bool,
) -> tuple[list[tuple[ast.stmt | ast.expr, str]], list[Seal], dict[str, str]] | None:
    """The edits that seal a table's column (all its rows, or none), its seals, and its cases' names."""
    definition = test_source.find_test(tree, node.split("::")[1:])
    table = _table(definition[0]) if definition is not None else None
    statement = next(
        (s for s in test_source.tail(definition[0]) if s.lineno == line), None
    ) if definition is not None else None  # fmt: skip
    form = _column_form(statement, definition[0], table) if statement and definition and table else None
    by_row = {check.row: check for check in checks}
    if table is None or statement is None or form is None or sorted(by_row) != list(range(len(table.rows))):
        return None
    op, actual, parameter = form
    if any(check.op != op or check.column != parameter for check in checks):
        return None
    column = table.parameters.index(parameter)
    tokens = [_token(rng) for _ in table.rows]
    ids = [_token(rng) for _ in table.rows]
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
    edits: list[tuple[ast.stmt | ast.expr, str]] = [(mark, rewritten), (statement, call + ")")]
    made = [Seal(tokens[row], by_row[row]) for row in by_row]
    names = {f"{node}[{ids[row]}]": node + by_row[row].case for row in by_row}
    return edits, made, names


# -- reading the run back ------------------------------------------------------------------------------------

OPAQUE = object()
"""A recorded value that is not plain data (a project's object, or one too large or deep)."""


@dataclass(frozen=True)
class Record:
    token: str
    case: str
    """The test case that recorded it (from ``PYTEST_CURRENT_TEST``): ``file::Class::name[params]``."""
    value: Any
    held: bool | None = None
    """Calibration: whether the check held in the process, with Python's own semantics."""


def read_records(data: bytes) -> list[Record]:
    """The records of a run (one JSON object a line); lines that are not records are skipped."""
    records = []
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            raw = json.loads(line)
            token, case = str(raw["token"]), str(raw["case"])
            value = decode(raw.get("value")) if raw.get("plain") else OPAQUE
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError, RecursionError):
            continue  # the run writes this file too: a line that is not a record counts for nothing
        held = raw.get("held") if isinstance(raw.get("held"), bool) else None
        records.append(Record(token, case.rsplit(" (", 1)[0], value, held))
    return records


def decode(data: Any) -> Any:
    """A recorded value (the driver's tagged JSON) as Python data."""
    if not isinstance(data, dict):
        return data
    kind = data.get("$")
    value: Any = data.get("v")  # JSON the run wrote
    if kind == "float":
        return float(value)
    if kind == "bytes":
        return bytes(value)
    if kind == "list":
        return [decode(item) for item in value]
    if kind == "tuple":
        return tuple(decode(item) for item in value)
    if kind == "set":
        return {decode(item) for item in value}
    if kind == "frozenset":
        return frozenset(decode(item) for item in value)
    if kind == "dict":
        return {decode(key): decode(item) for key, item in value}
    return OPAQUE


def holds(op: str, expected: Any, value: Any) -> bool:
    """Whether a recorded ``value`` meets the check ``op`` against ``expected``, as Python says for data."""
    if value is OPAQUE or op not in ("==", "approx"):
        return False
    try:
        if op == "==":
            return bool(value == expected)
        return _approx(value, expected)
    except Exception:  # a value the run wrote, compared: whatever goes wrong, it did not hold
        return False
    return False


def _approx(value: Any, expected: Any) -> bool:
    """pytest.approx's default tolerance (relative 1e-6, absolute 1e-12), on numbers and on sequences and
    mappings of them."""
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(expected)
            and all(_approx(item, want) for item, want in zip(value, expected))
        )
    if isinstance(expected, dict):
        return (
            isinstance(value, dict)
            and value.keys() == expected.keys()
            and all(_approx(value[key], expected[key]) for key in expected)
        )
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return False
        if math.isinf(expected) or math.isnan(expected):
            return value == expected
        return abs(value - expected) <= max(1e-6 * abs(expected), 1e-12)
    return bool(value == expected)


def _by_case(records: Sequence[Record], seal: Seal) -> dict[str, list[Record]]:
    """A seal's records by the parameter suffix of the case that made them (``""`` unparametrised)."""
    name = "::" + seal.check.node.split("::", 1)[1]
    found: dict[str, list[Record]] = {}
    for record in records:
        if record.token != seal.token:
            continue
        index = record.case.find(name)
        if index < 0:
            continue
        suffix = record.case[index + len(name) :]
        if suffix == "" or suffix.startswith("["):
            found.setdefault(suffix, []).append(record)
    return found


def _cases(outcomes: Mapping[str, str], node: str) -> dict[str, str]:
    """The report's outcomes of a test's cases, by parameter suffix."""
    found = {}
    for report_id, outcome in outcomes.items():
        if report_id == node:
            found[""] = outcome
        elif report_id.startswith(node + "["):
            found[report_id[len(node) :]] = outcome
    return found


def judge(
    seals: Sequence[Seal],
    records: Sequence[Record],
    outcomes: Mapping[str, str],
    matched: Mapping[str, Sequence[str]],
) -> dict[str, str]:
    """The task's ids (keys of ``matched``, each with the report ids its outcome was taken from) that must
    fail although the report passed them: an id of a test with sealed checks passes only if each report
    entry it was matched to is that test's own, exactly as pytest names it, and its sealed checks held."""
    bad = broken(seals, records, outcomes)
    nodes = {sealed.check.node for sealed in seals}
    failed: dict[str, str] = {}
    for raw, report_ids in matched.items():
        node = parse_test_id(raw).node
        if node not in nodes:
            continue
        for report_id in report_ids:
            if report_id != node and not report_id.startswith(node + "["):
                failed[raw] = f"the report entry {report_id!r} is not the sealed test as pytest names it"
            elif report_id in bad:
                failed[raw] = bad[report_id]
    return failed


def broken(seals: Sequence[Seal], records: Sequence[Record], outcomes: Mapping[str, str]) -> dict[str, str]:
    """The report's test cases that passed there but whose sealed checks did not hold (no record, a value
    that is not plain data, a value that does not meet the check), each with why."""
    failed: dict[str, str] = {}
    for sealed in seals:
        check = sealed.check
        made = _by_case(records, sealed)
        expected = ast.literal_eval(check.expected)
        for suffix, outcome in _cases(outcomes, check.node).items():
            if outcome != "passed" or (check.case and suffix != check.case):
                continue  # a table's row is its own case's check
            case = check.node + suffix
            values = made.get(suffix, [])
            if not values:
                failed[case] = f"its sealed check at line {check.line} recorded nothing"
            elif not all(holds(check.op, expected, record.value) for record in values):
                failed[case] = f"its sealed check at line {check.line} did not hold"
    return failed


def _all_records(made: Mapping[str, list[Record]]) -> list[Record]:
    return [record for records in made.values() for record in records]


def calibrated(seals: Sequence[Seal], records: Sequence[Record], outcomes: Mapping[str, str]) -> set[str]:
    """The checks that can be sealed, from the gold patch's calibrating run: every case of the test passed,
    and recorded plain data that holds outside as the check held inside."""
    found = set()
    rows: dict[tuple[str, int], list[Seal]] = {}
    for sealed in seals:
        check = sealed.check
        if check.case:
            rows.setdefault((check.node, check.line), []).append(sealed)
            continue
        cases = _cases(outcomes, check.node)
        if list(cases) != [""] or cases[""] != "passed":
            continue  # not run, not passed, or several cases (one the bug gets right would give the value)
        made = _by_case(records, sealed)
        expected = ast.literal_eval(check.expected)

        sound = [
            record.held is True and holds(check.op, expected, record.value) for record in _all_records(made)
        ]
        if all(made.get(suffix) for suffix in cases) and all(sound):
            found.add(check.key)
    for (node, _), table in rows.items():  # a table is sealed whole: every row passed, as recorded
        cases = _cases(outcomes, node)
        if set(cases) != {sealed.check.case for sealed in table}:
            continue  # more cases than rows (a parametrised class or fixture), or a row not run
        if all(cases[sealed.check.case] == "passed" and _row_held(sealed, records) for sealed in table):
            found.update(sealed.check.key for sealed in table)
    return found


def _row_held(sealed: Seal, records: Sequence[Record]) -> bool:
    made = _by_case(records, sealed).get(sealed.check.case, [])
    expected = ast.literal_eval(sealed.check.expected)
    return bool(made) and all(
        record.held is True and holds(sealed.check.op, expected, record.value) for record in made
    )


# -- what calibration learned, kept on disk ---------------------------------------------------------------

VERSION = 3
"""Bumped when what makes a check sealable changes: calibrations of an older version are taken again."""


def _stored_path(task: Any, key: Sequence[str]) -> Path:
    from gym_swe.tasks.repos import cache_root

    recipe = json.dumps([VERSION, list(key), task.test_patch, task.patch], sort_keys=True)
    digest = hashlib.sha256(recipe.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return cache_root() / "seals" / f"{task.instance_id.replace('/', '_')}-{digest}.json"


def stored(task: Any, key: Sequence[str]) -> frozenset[str] | None:
    """The checks an earlier calibration of ``task`` in the environment ``key`` found sealable, if any."""
    try:
        data = json.loads(_stored_path(task, key).read_text())
    except (OSError, ValueError):
        return None
    checks = data.get("sealable") if isinstance(data, dict) else None
    if not isinstance(checks, list) or not all(isinstance(check, str) for check in checks):
        return None
    return frozenset(checks)


def store(task: Any, key: Sequence[str], sealable: Collection[str]) -> None:
    path = _stored_path(task, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_suffix(f".{os.getpid()}.tmp")
    scratch.write_text(json.dumps({"task": task.instance_id, "sealable": sorted(sealable)}))
    os.replace(scratch, path)
