"""Reading a run's records back and holding them outside the run: which sealed checks held (`judge`,
`broken`), and, from the gold patch's calibrating run, which checks can be sealed with what the grader must
know of them (`calibrated`).

Records are the run's to write: code under test can write any record for any token the test file shows. So
a record counts only where a check of the task's own test case made it, every record of a check must hold,
and what holds is decided here from plain data against an expectation the run never had:

- ``==``, ``approx``, ``!=``, ``<`` ..., ``in`` and ``not in`` hold as Python says for the recorded data;
- ``is`` and ``is not`` hold by which singleton (None, True, False) the value was, recorded in the run, so
  that a project's object is ``not None`` as it is in Python;
- ``raises`` holds when what the block raised is, by its recorded class's ancestry (module and qualified
  name of each class, read through ``type``'s own descriptors), one of the expected exceptions; when each
  builtin exception among its ancestors is one the gold patch's exception or the expected exceptions have
  (so that a class made to derive from every likely builtin exception is not an answer, while the project's
  own subclass of the right kind is); and, with a pattern, when its message (or, as pytest 8 reads it, its
  message with its notes) matches it.

A value made to meet any expectation (a message holding every likely phrase for an ``in`` check) meets an
``in`` check: such checks are sealed (the run's outcome for them is decided here) but not `strong`, so their
tests keep decoys.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

from gym_swe.grading.decoy_report import member_cases
from gym_swe.grading.seals.forms import RAISES, literal_value

if TYPE_CHECKING:
    from gym_swe.grading.seals.writing import Seal

OPAQUE = object()
"""A recorded value that is not plain data (a project's object, or one too large or deep)."""
Facts = Mapping[str, Any]
"""What calibration learned of a sealed check (JSON data): for ``raises``, the ``names`` of the expected
exceptions and the builtin exceptions ``allowed`` among the ancestors of what is raised (the gold patch's and
the expected ones'); for every check, whether its expectation is ``public`` (written where the agent can read
it: the issue, the hints, the repository) and whether the unfixed code fails it (``bug_fails``), which decide
whether it is `protective`."""
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
    singleton: str = ""
    """``"None"``, ``"True"`` or ``"False"`` when the value was that object, else ``""``."""


def read_records(data: bytes) -> list[Record]:
    """The records of a run (one JSON object a line); lines that are not records are skipped."""
    records = []
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            raw = json.loads(line)
        except (ValueError, RecursionError):
            continue  # the run writes these lines too: a line that is not a record counts for nothing
        record = record_of(raw)
        if record is not None:
            records.append(record)
    return records


def record_of(raw: Any) -> Record | None:
    """One record as the driver wrote it (a JSON object), or None for anything that is not one."""
    try:
        token, case = str(raw["token"]), str(raw["case"])
        value = decode(raw.get("value")) if raw.get("plain") else OPAQUE
        expected = raw.get("expected") if isinstance(raw.get("expected"), dict) else None
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError, RecursionError):
        return None
    held = raw.get("held") if isinstance(raw.get("held"), bool) else None
    singleton = raw.get("singleton") if raw.get("singleton") in ("None", "True", "False") else ""
    return Record(token, case.rsplit(" (", 1)[0], value, held, expected, singleton)


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


MAX_MESSAGE_CHARS = 1024 * 1024
"""An exception message longer than this is not matched against a pattern (the pattern runs on the host)."""


def holds(op: str, expected: Any, value: Any, facts: Facts | None = None, singleton: str = "") -> bool:
    """Whether a recorded ``value`` meets the check ``op`` against ``expected`` (a literal; for ``raises``,
    the pattern or None), as Python says for data; ``facts``: what calibration learned (`Facts`);
    ``singleton``: which of None, True and False the value was (identity checks)."""
    if op in ("is", "is not"):
        return (repr(expected) == singleton) is (op == "is")
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
        if op in ("in", "not in"):
            if not isinstance(value, (str, bytes, list, tuple, set, frozenset, dict)):
                return False
            return (expected in value) is (op == "in")
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
    ancestry, message, notes = value.get("mro"), value.get("message"), value.get("notes") or []
    if not isinstance(ancestry, list) or not ancestry or not all(isinstance(n, str) for n in ancestry):
        return False
    names, allowed = facts.get("names") or [], set(facts.get("allowed") or [])
    builtins = {name for name in ancestry if name.startswith("builtins.")}
    if not any(name in ancestry for name in names) or not builtins <= allowed:
        return False
    if pattern is None:
        return True
    if not isinstance(message, str) or not _names(notes or ["-"]):
        return False
    texts = [message] + (["\n".join([message, *notes])] if notes else [])
    return any(len(text) <= MAX_MESSAGE_CHARS and re.search(pattern, text) is not None for text in texts)


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
        return literal_value(check.match) if check.match else None
    return literal_value(check.expected)


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
        for suffix, outcome in member_cases(outcomes, check.node).items():
            if outcome != "passed" or (check.case and suffix != check.case):
                continue  # a table's row is its own case's check
            case = check.node + suffix
            values = made.get(suffix, [])
            if not values:
                failed[case] = f"its sealed check at line {check.line} recorded nothing"
            elif not all(holds(check.op, expected, r.value, known, r.singleton) for r in values):
                failed[case] = f"its sealed check at line {check.line} did not hold"
    return failed


def holding(seals: Sequence[Seal], records: Sequence[Record], facts: Mapping[str, Facts]) -> set[str]:
    """The keys of the sealed checks that recorded something, all of which held (whatever the outcomes)."""
    found = set()
    for sealed in seals:
        check = sealed.check
        made = [record for suffix, mine in _by_case(records, sealed).items() for record in mine
                if not check.case or suffix == check.case]  # fmt: skip
        expected, known = expectation(sealed), facts.get(check.key)
        if made and all(holds(check.op, expected, r.value, known, r.singleton) for r in made):
            found.add(check.key)
    return found


def public_forms(literal: str) -> list[list[str]]:
    """How a check's literal (its source) would be written where the agent reads: for each of its parts, the
    spellings any one of which gives that part away. Every part given away makes the literal public: an agent
    can put it together in a forged record. The parts: a string's lines (each as written, stripped), a
    number (an integral float also as an int); a container of one item, that item's; a container of more,
    the container whole (as Python or JSON spells it, or its items joined by commas, spaces or lines): its
    items may all be in sight (the inputs of a sort, of a split) while which of them, in which order, is what
    the code must compute."""
    try:
        value = literal_value(literal)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return [[literal]]
    return _parts(value)


def _parts(item: Any) -> list[list[str]]:
    if isinstance(item, bytes):
        item = item.decode("latin-1")
    if isinstance(item, str):
        return [[line.strip()] for line in item.splitlines() if line.strip()]
    if isinstance(item, bool) or item is None:
        return [[repr(item)]]
    if isinstance(item, int):
        return [[str(item)]]
    if isinstance(item, float):
        return [[repr(item), *([str(int(item))] if item.is_integer() else [])]]
    if isinstance(item, (list, tuple, set, frozenset, dict)):
        items = list(item.items()) if isinstance(item, dict) else list(item)
        if len(items) == 1 and isinstance(item, dict):
            return _parts(items[0][0]) + _parts(items[0][1])
        if len(items) == 1:
            return _parts(items[0])
        if not items:
            return [[repr(item)]]
        spellings = [repr(item)]
        try:
            spellings.append(json.dumps(item if not isinstance(item, (set, frozenset)) else sorted(item)))
        except (TypeError, ValueError):
            pass
        texts = [str(one) for one in items]
        spellings += [", ".join(texts), ",".join(texts), " ".join(texts), "\n".join(texts)]
        return [list(dict.fromkeys(spellings))]
    return [[repr(item)]]


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
        cases = member_cases(outcomes, check.node)
        if not cases or any(o != "passed" or check.node + s not in task_cases for s, o in cases.items()):
            continue  # not run, not passed, or a case that is not the task's (the bug may get it right)
        made = _by_case(records, sealed)
        if not all(made.get(suffix) for suffix in cases):
            continue
        mine = [record for suffix in cases for record in made[suffix]]
        facts = _facts(sealed, mine)
        if facts is not None:
            facts["expected"] = check.expected
        expected = expectation(sealed)
        if facts is not None and all(
            record.held is True and holds(check.op, expected, record.value, facts, record.singleton)
            for record in mine
        ):
            found[check.key] = facts
    for (node, _), table in rows.items():  # a table is sealed whole: every row passed, as recorded
        cases = member_cases(outcomes, node)
        if set(cases) != {sealed.check.case for sealed in table}:
            continue  # more cases than rows (a parametrised class or fixture), or a row not run
        if all(cases[sealed.check.case] == "passed" and _row_held(sealed, records) for sealed in table):
            found.update((sealed.check.key, {"expected": sealed.check.expected}) for sealed in table)
    return found


def _facts(sealed: Seal, records: Sequence[Record]) -> dict[str, Any] | None:
    """What the gold patch's records say the grader must know of the check (None: it cannot be sealed)."""
    op = sealed.check.op
    if op != RAISES:
        return {}
    names: set[str] = set()
    allowed: set[str] = set()
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
        allowed.update(ancestry)
        for inherited in ancestries:
            allowed.update(inherited)
    builtins = sorted(name for name in allowed if name.startswith("builtins."))
    return {"names": sorted(names), "allowed": builtins}


def _names(value: Any) -> TypeGuard[list[str]]:
    return isinstance(value, list) and bool(value) and all(isinstance(name, str) for name in value)


def _row_held(sealed: Seal, records: Sequence[Record]) -> bool:
    made = _by_case(records, sealed).get(sealed.check.case, [])
    expected = expectation(sealed)
    return bool(made) and all(
        record.held is True and holds(sealed.check.op, expected, record.value) for record in made
    )
