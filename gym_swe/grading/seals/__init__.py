"""Sealed checks: expectations of the task's tests that the test run never holds.

Repository tests run in the process of the code under test, so whatever that process reports can be forged:
code that has read gym_swe can rewrite pytest's report at exit, and where it can tell the task's tests from
the decoys beside them (the buggy outputs it sees, which values look right) decoys do not stop it. A sealed
check takes the expectation out of the process instead. A check of a FAIL_TO_PASS test whose expectation is
a literal (`forms`: ``==``, ``approx``, ``!=``, ordering, ``is None``/``True``/``False``, ``LITERAL in``,
``not in``, their unittest spellings) or an exception block (``pytest.raises``, ``assertRaises``,
``assertRaisesRegex``) is written as a call of the recorder (`writing`):

    assert ACTUAL == EXPECTED                    ->  _gym_seal("TOKEN", (ACTUAL))
    with pytest.raises(ValueError, match="x"):   ->  with _gym_raises("TOKEN", pytest.raises(BaseException)):

The run records ACTUAL as plain data (the driver writes it out as JSON, reading ``str``, ``int``, lists and
dicts through their base types, and numbers of other types, ``Fraction``, ``Decimal``, numpy's, as the int
or float they equal exactly), or what the block raised (its class's ancestry by module and qualified name,
and its message), and the grader, outside the process, holds it against the expectation (`judging`). The
task's test passes only if pytest says so and its sealed checks held, judged on the task's side: every report
entry the task's id was matched to must be the test's own, exactly as pytest names it, with its records
holding, so an entry the run reworded to pass for the test counts for nothing. The expectation is nowhere the
run can read from the grader (the test patch is removed before the run, the file holds the token; not even
which kind of check a token seals is in it), so no report or record the run writes makes a sealed check hold
without ACTUAL being right: the code has to compute it, or find the literal in what the run can read (a value
also written in a test that is not sealed, or elsewhere in the repository, is no secret).

Checks whose expectation is computed in the run (``assert f(x) == g(y)``, ``assert_identical(a, b)``, a
project object's ``__eq__``) cannot be sealed: whatever the test computes, the code under test can compute
too. Their tests keep decoys (`gym_swe.grading.decoys`). Nor does a literal the agent can read (in the
issue, the hints, the repository) protect anything: code that forges the report can write it into the
records. `protective` says which sealed checks stand between a forged report and the reward (`strong`: one
value only meets it; not public; failed by the unfixed code): a test with one gets no decoys, and a grade
with one is ``integrity="sealed"``.

A parameter table is sealed row by row (`tables`). A literal in a test with several cases is sealed only when
every case is one of the task's FAIL_TO_PASS cases, so that no case the bug gets right shows it.

Which checks can be sealed is learned once per task from the gold patch (`calibrating`): the checks are
sealed with the expectation given, so the run also holds them in the process with Python's and pytest's own
semantics, and a check qualifies only where, with the fix, each case recorded plain data that holds outside
as it did inside; what the grader must know of it besides (the size of an ``in`` check's value, the names of
the expected exceptions) is learned there too (`judging.calibrated`) and kept (`store`). A check whose value
is a project object (``Version("1.2") == "1.2"``) cannot be sealed. Only the calibration of a gold patch that
resolved the task is kept.
"""

from __future__ import annotations

from gym_swe.grading.seals.forms import OPS, RAISES, Check, candidates, form_of, literal_value
from gym_swe.grading.seals.judging import (
    OPAQUE,
    Facts,
    Record,
    broken,
    calibrated,
    decode,
    holding,
    holds,
    judge,
    public_forms,
    read_records,
    record_of,
)
from gym_swe.grading.seals.store import VERSION, store, stored, stored_inputs
from gym_swe.grading.seals.writing import FUNCTION, RAISES_FUNCTION, Seal, Sealing, seal

SEAL_CHECKS = True
"""Whether the grader seals the checks it can (tests turn it off to show what decoys alone do)."""
MAX_RECORD_CHARS = 8 * 1024 * 1024
"""A value recorded larger than this is not plain data to the grader (the case fails)."""


def strong(check: Check) -> bool:
    """Whether a sealed check holds for one value only, which a guess from the buggy one does not find:
    equality (``==``, ``approx``) with a literal that is not a boolean, None, empty, one character or a small
    integer. Not: ``!=``, ``not in``, ordering and ``is`` (most values meet them), ``in`` (a value stuffed
    with every likely phrase meets it), an exception block (the likely exceptions are few, and name
    themselves)."""
    if check.op not in ("==", "approx"):
        return False
    try:
        value = literal_value(check.expected)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    if value is None or isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) > 10
    if isinstance(value, float):
        return not value.is_integer() or abs(value) > 10
    if isinstance(value, (str, bytes)):
        return len(value.strip()) >= 2
    if isinstance(value, (tuple, list, dict, set, frozenset)):
        return len(value) >= 1
    return True


def protective(check: Check, facts: Facts | None) -> bool:
    """Whether a sealed check stands between a forged test report and the reward: `strong`, its expectation
    written nowhere the agent can read (not ``public``: the issue, the hints, the repository at its base
    commit), and failed by the unfixed code (``bug_fails``; else the buggy value itself meets it). Learned at
    calibration; unknown means no."""
    known = facts or {}
    return strong(check) and known.get("public") is False and known.get("bug_fails") is True


__all__ = [
    "FUNCTION", "MAX_RECORD_CHARS", "OPAQUE", "OPS", "RAISES", "RAISES_FUNCTION",
    "SEAL_CHECKS", "VERSION", "Check", "Facts", "Record", "Seal", "Sealing", "broken", "calibrated",
    "candidates", "decode", "form_of", "holding", "holds", "judge", "protective", "public_forms",
    "read_records", "record_of", "seal", "store", "stored", "stored_inputs", "strong",
]  # fmt: skip
