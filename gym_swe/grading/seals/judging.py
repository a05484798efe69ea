"""Reading a run's records back and holding them outside the run: which sealed checks held (`judge`,
`broken`), and, from the gold patch's calibrating run, which checks can be sealed with what the grader must
know of them (`calibrated`).

Records are the run's to write: code under test can write any record for any token the test file shows. So
a record counts only where a check of the task's own test case made it, every record of a check must hold,
and what holds is decided here from plain data against an expectation the run never had:

- ``==``, ``approx``, ``!=``, ``<`` ... and ``is`` hold as Python says for the recorded data;
- ``in`` holds when the literal is in the recorded value *and* that value is no larger than twice the gold
  patch's, plus a margin (`size_bound`): a value made to contain every likely literal is not an answer;
- ``not in`` holds when the literal is not in it (a value that is a string, bytes or a container);
- ``raises`` holds when what the block raised is, by its recorded class's ancestry (module and qualified
  name of each class, read through ``type``'s own descriptors), one of the expected exceptions; when every
  ancestor but its own class is one the gold patch's exception or the expected exceptions have (so that a
  class made to derive from every likely exception is not an answer, while a new class of the right kind
  is); and, with a pattern, when its message, within `size_bound` of the gold's, matches it.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

from gym_swe.grading.seals.forms import RAISES

if TYPE_CHECKING:
    from gym_swe.grading.seals.writing import Seal

OPAQUE = object()
"""A recorded value that is not plain data (a project's object, or one too large or deep)."""
Facts = Mapping[str, Any]
"""What calibration learned of a sealed check from the gold patch (JSON data): ``size`` of its value (an
``in`` check) or message (``raises``); for ``raises``: ``names`` of the expected exceptions, ``allowed``
ancestors."""
_ORDER = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b
}  # fmt: skip


@dataclass(frozen=True)
class Record:
    token: str
    case: str
    """The test case that recorded it (from ``PYTEST_CURRENT_TEST``): ``file::Class::name[params]``."""
    value: Any
    held: bool | None = None
    """Calibration: whether the check held in the process, with Python's own semantics."""
    expected: Any = None
    """Calibration of a ``raises`` block: the expected exceptions, ``{"names": [...], "ancestry": [...]}``."""


def read_records(data: bytes) -> list[Record]:
    """The records of a run (one JSON object a line); lines that are not records are skipped."""
    records = []
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            raw = json.loads(line)
            token, case = str(raw["token"]), str(raw["case"])
            value = decode(raw.get("value")) if raw.get("plain") else OPAQUE
            expected = raw.get("expected") if isinstance(raw.get("expected"), dict) else None
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError, RecursionError):
            continue  # the run writes this file too: a line that is not a record counts for nothing
        held = raw.get("held") if isinstance(raw.get("held"), bool) else None
        records.append(Record(token, case.rsplit(" (", 1)[0], value, held, expected))
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


def size_bound(gold_size: int, value: Any) -> int:
    """How large a recorded value may be against the gold patch's: twice it, plus 64 characters (a string
    or bytes) or 8 items (a container). A correct fix may word a message differently, or at more length; a
    value stuffed with every likely expectation is larger still (see `holds`)."""
    return 2 * gold_size + (64 if isinstance(value, (str, bytes)) else 8)


def holds(op: str, expected: Any, value: Any, facts: Facts | None = None) -> bool:
    """Whether a recorded ``value`` meets the check ``op`` against ``expected`` (a literal; for ``raises``,
    the pattern or None), as Python says for data; ``facts``: what calibration learned (`Facts`)."""
    if value is OPAQUE:
        return False
    facts = facts or {}
    try:
        if op == "==":
            return bool(value == expected)
        if op == "approx":
            return _approx(value, expected)
        if op == "!=":
            return bool(value != expected)
        if op in _ORDER:
            return _plain_order(value, expected) and bool(_ORDER[op](value, expected))
        if op == "is":
            return value is expected
        if op == "is not":
            return value is not expected
        if op in ("in", "not in"):
            if not isinstance(value, (str, bytes, list, tuple, set, frozenset, dict)):
                return False
            if op == "not in":
                return expected not in value
            gold = facts.get("size")
            return isinstance(gold, int) and len(value) <= size_bound(gold, value) and expected in value
        if op == RAISES:
            return _raised(value, expected, facts)
    except Exception:  # a value the run wrote, compared: whatever goes wrong, it did not hold
        return False
    return False


def _plain_order(value: Any, expected: Any) -> bool:
    """Ordering is held between numbers, or between strings (or bytes), only."""
    number = (int, float)
    if isinstance(expected, number) and not isinstance(expected, bool):
        return isinstance(value, number) and not isinstance(value, bool)
    return type(value) is type(expected) and isinstance(value, (str, bytes))


def _raised(value: Any, pattern: str | None, facts: Facts) -> bool:
    if not isinstance(value, dict):
        return False  # nothing was raised in the block
    ancestry, message = value.get("mro"), value.get("message")
    if not isinstance(ancestry, list) or not ancestry or not all(isinstance(n, str) for n in ancestry):
        return False
    names, allowed = facts.get("names") or [], set(facts.get("allowed") or [])
    if not any(name in ancestry for name in names) or not set(ancestry[1:]) <= allowed:
        return False
    if pattern is None:
        return True
    gold = facts.get("size")
    return (
        isinstance(message, str)
        and isinstance(gold, int)
        and len(message) <= size_bound(gold, message)
        and re.search(pattern, message) is not None
    )


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


def expectation(seal: Seal) -> Any:
    """What a sealed check's records are held against: its literal (for ``raises``, its pattern or None)."""
    check = seal.check
    if check.op == RAISES:
        return ast.literal_eval(check.match) if check.match else None
    return ast.literal_eval(check.expected)


# -- judging a grade -----------------------------------------------------------------------------------------


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
    facts: Mapping[str, Facts],
) -> dict[str, str]:
    """The task's ids (keys of ``matched``, each with the report ids its outcome was taken from) that must
    fail although the report passed them: an id of a test with sealed checks passes only if each report
    entry it was matched to is that test's own, exactly as pytest names it, and its sealed checks held.
    ``facts``: what calibration learned of each sealed check, by its key."""
    from gym_swe.grading.test_ids import parse_test_id

    bad = broken(seals, records, outcomes, facts)
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


def broken(
    seals: Sequence[Seal],
    records: Sequence[Record],
    outcomes: Mapping[str, str],
    facts: Mapping[str, Facts] | None = None,
) -> dict[str, str]:
    """The report's test cases that passed there but whose sealed checks did not hold (no record, a value
    that is not plain data, a value that does not meet the check), each with why."""
    failed: dict[str, str] = {}
    for sealed in seals:
        check = sealed.check
        made = _by_case(records, sealed)
        expected = expectation(sealed)
        known = (facts or {}).get(check.key)
        for suffix, outcome in _cases(outcomes, check.node).items():
            if outcome != "passed" or (check.case and suffix != check.case):
                continue  # a table's row is its own case's check
            case = check.node + suffix
            values = made.get(suffix, [])
            if not values:
                failed[case] = f"its sealed check at line {check.line} recorded nothing"
            elif not all(holds(check.op, expected, record.value, known) for record in values):
                failed[case] = f"its sealed check at line {check.line} did not hold"
    return failed


# -- calibrating: what can be sealed, and what the grader must know of it ------------------------------------


def calibrated(
    seals: Sequence[Seal],
    records: Sequence[Record],
    outcomes: Mapping[str, str],
    task_cases: Collection[str],
) -> dict[str, dict[str, Any]]:
    """The checks that can be sealed, each with its `Facts`, from the gold patch's calibrating run: every
    case of the test passed, each is one of the task's FAIL_TO_PASS cases (``task_cases``: report ids; so
    that no case the bug gets right shows the literal), and each recorded plain data that holds outside as
    the check held inside."""
    found: dict[str, dict[str, Any]] = {}
    rows: dict[tuple[str, int], list[Seal]] = {}
    for sealed in seals:
        check = sealed.check
        if check.case:
            rows.setdefault((check.node, check.line), []).append(sealed)
            continue
        cases = _cases(outcomes, check.node)
        if not cases or any(o != "passed" or check.node + s not in task_cases for s, o in cases.items()):
            continue  # not run, not passed, or a case that is not the task's (the bug may get it right)
        made = _by_case(records, sealed)
        if not all(made.get(suffix) for suffix in cases):
            continue
        mine = [record for suffix in cases for record in made[suffix]]
        facts = _facts(sealed, mine)
        expected = expectation(sealed)
        if facts is not None and all(
            record.held is True and holds(check.op, expected, record.value, facts) for record in mine
        ):
            found[check.key] = facts
    for (node, _), table in rows.items():  # a table is sealed whole: every row passed, as recorded
        cases = _cases(outcomes, node)
        if set(cases) != {sealed.check.case for sealed in table}:
            continue  # more cases than rows (a parametrised class or fixture), or a row not run
        if all(cases[sealed.check.case] == "passed" and _row_held(sealed, records) for sealed in table):
            found.update((sealed.check.key, {}) for sealed in table)
    return found


def _facts(sealed: Seal, records: Sequence[Record]) -> dict[str, Any] | None:
    """What the gold patch's records say the grader must know of the check (None: it cannot be sealed)."""
    op = sealed.check.op
    if op == "in":
        sized = (str, bytes, list, tuple, set, frozenset, dict)
        sizes = [len(record.value) for record in records if isinstance(record.value, sized)]
        return {"size": max(sizes)} if len(sizes) == len(records) else None
    if op != RAISES:
        return {}
    names: set[str] = set()
    allowed: set[str] = set()
    sizes = []
    for record in records:
        expected, value = record.expected, record.value
        if not isinstance(expected, dict) or not isinstance(value, dict):
            return None
        expected_names, ancestries = expected.get("names"), expected.get("ancestry")
        ancestry, message = value.get("mro"), value.get("message")
        if not (_names(expected_names) and isinstance(ancestries, list) and all(map(_names, ancestries))):
            return None
        if not (_names(ancestry) and isinstance(message, str)):
            return None
        names.update(expected_names)
        allowed.update(ancestry[1:])
        for inherited in ancestries:
            allowed.update(inherited)
        sizes.append(len(message))
    return {"names": sorted(names), "allowed": sorted(allowed), "size": max(sizes)}


def _names(value: Any) -> TypeGuard[list[str]]:
    return isinstance(value, list) and bool(value) and all(isinstance(name, str) for name in value)


def _row_held(sealed: Seal, records: Sequence[Record]) -> bool:
    made = _by_case(records, sealed).get(sealed.check.case, [])
    expected = expectation(sealed)
    return bool(made) and all(
        record.held is True and holds(sealed.check.op, expected, record.value) for record in made
    )
