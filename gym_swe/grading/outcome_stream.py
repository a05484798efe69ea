"""The test run's outcomes as they were streamed out of it, test by test, while it ran.

The code under test runs in pytest's own process, so it can rewrite any file that process writes (the JUnit
report, a file of records) when it exits, after every test has run. So the grader does not read outcomes from
a file: `pytest_driver` writes one JSON line per test as the test ends, one per record of a sealed check, and
an end line when the session finishes, to a pipe (file descriptor 3 of the run, ``exec(records=...)``) that
the grading sandbox's executor reads as the run goes, out of the run's reach. What went down the pipe cannot
be taken back; `read_stream` reads what the executor kept, and anything that could only come from code
writing into the pipe beside the driver is refused (`StreamError`, a rejection of the submission):

- a line that is not one of the driver's (not JSON, an unknown kind, a field missing or of the wrong type),
  or a stream that does not end with a whole line;
- a ``seq`` that does not grow (the driver numbers its lines 0, 1, 2, ...; a write that failed is a gap,
  never a step back);
- a line after the end line, or a second end line;
- a second ``test`` line for the same node id;
- more ``test`` lines than the end line says the driver wrote;
- a stream cut past its bound (`MAX_STREAM_BYTES`).

A stream without an end line is a run that did not finish (`Streamed.finished`). The JUnit report is still
read, as a cross-check (`cross_check`): its tests (the set, each outcome, their order) must be the ones the
stream showed, keyed the way `junit_outcomes` keys them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gym_swe.errors import GradingError
from gym_swe.grading import seals
from gym_swe.grading.test_ids import junit_node_id

RECORDS_FD = 3
"""The descriptor the run writes its stream to (the executor's ``RECORDS_FD``)."""
RECORDS_FD_VARIABLE = "GYM_SWE_RECORDS_FD"
"""The environment variable that names it to `pytest_driver` (the driver's ``RECORDS_FD``)."""
MAX_STREAM_BYTES = 64 * 1024 * 1024
"""The most of a stream the executor keeps (and the host reads); past it the stream is broken."""
OUTCOMES = ("passed", "failed", "skipped", "error")


class StreamError(GradingError, ValueError):
    """A stream that the driver alone did not write: the submission is rejected with this reason."""


@dataclass
class Streamed:
    """What a run streamed: each test's outcome keyed as the JUnit report keys it (its node id rebuilt from
    the names the report gives it; the worst outcome where two tests share a key, as there), in the order
    the tests ended; the sealed checks' records; whether the session reached its end."""

    outcomes: dict[str, str] = field(default_factory=dict)
    records: list[seals.Record] = field(default_factory=list)
    finished: bool = False
    tests: int = 0
    """How many test lines came (one per node id)."""
    written: int | None = None
    """How many test lines the driver says it wrote (the end line's count; None without one)."""


_SEVERITY = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}


def read_stream(data: bytes, cut: int = 0) -> Streamed:
    """Read a run's stream (``cut``: bytes the executor dropped past the bound). Raises `StreamError` for a
    stream the driver alone could not have written (see the module's docstring)."""
    if cut:
        raise StreamError(
            f"the test run wrote more than {len(data)} bytes to its record stream ({cut} more were cut)"
        )
    if data and not data.endswith(b"\n"):
        raise StreamError("the record stream ends inside a line")
    streamed = Streamed()
    seen: set[str] = set()
    last_seq = -1
    for number, line in enumerate(data.split(b"\n")[:-1] if data else [], start=1):
        entry = _entry(line, number)
        if streamed.finished:
            raise StreamError(f"line {number} of the record stream comes after its end line")
        if entry["seq"] <= last_seq:
            raise StreamError(f"line {number} of the record stream has seq {entry['seq']} after {last_seq}")
        last_seq = entry["seq"]
        kind = entry["kind"]
        if kind == "test":
            nodeid = entry["nodeid"]
            if nodeid in seen:
                raise StreamError(f"the record stream holds a second record for {nodeid!r} (line {number})")
            seen.add(nodeid)
            key = junit_node_id(entry["name"], entry["classname"], entry["file"]) or nodeid
            outcome = entry["outcome"]
            if key in streamed.outcomes and _SEVERITY[streamed.outcomes[key]] > _SEVERITY[outcome]:
                outcome = streamed.outcomes[key]
            streamed.outcomes[key] = outcome
            streamed.tests += 1
        elif kind == "seal":
            record = seals.record_of(entry)
            if record is None:
                raise StreamError(f"line {number} of the record stream is a seal record that does not read")
            streamed.records.append(record)
        else:  # end
            streamed.finished, streamed.written = True, entry["tests"]
            if streamed.tests > entry["tests"]:
                raise StreamError(
                    f"the record stream holds {streamed.tests} test records where the runner wrote "
                    f"{entry['tests']}"
                )
    return streamed


def _entry(line: bytes, number: int) -> dict[str, Any]:
    """One line as the driver writes it, or a `StreamError` that says what is wrong with it."""
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):
        raise StreamError(f"line {number} of the record stream is not JSON") from None
    if not isinstance(entry, dict):
        raise StreamError(f"line {number} of the record stream is not a JSON object")
    seq, kind = entry.get("seq"), entry.get("kind")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        raise StreamError(f"line {number} of the record stream has no valid seq")
    if kind == "test":
        texts = ("nodeid", "classname", "name")
        if not all(isinstance(entry.get(name), str) for name in texts) or not entry["nodeid"]:
            raise StreamError(f"line {number} of the record stream is a test record without its names")
        if not (entry.get("file") is None or isinstance(entry["file"], str)):
            raise StreamError(f"line {number} of the record stream is a test record with a bad file")
        if entry.get("outcome") not in OUTCOMES:
            raise StreamError(f"line {number} of the record stream has an outcome that is none of {OUTCOMES}")
    elif kind == "end":
        tests = entry.get("tests")
        if not isinstance(tests, int) or isinstance(tests, bool) or tests < 0:
            raise StreamError(f"line {number} of the record stream is an end line without a count")
    elif kind != "seal":
        raise StreamError(f"line {number} of the record stream is of no known kind ({str(kind)[:40]!r})")
    return entry


def cross_check(streamed: Streamed, reported: Mapping[str, str]) -> str | None:
    """Why the JUnit report's outcomes (`junit_outcomes`, in the report's order) are not the ones streamed
    as the tests ended, or None when they are: the same tests, each with the same outcome, in the same
    order."""
    ours, theirs = set(streamed.outcomes), set(reported)
    if ours != theirs:
        extra, gone = sorted(theirs - ours), sorted(ours - theirs)
        parts = [f"{len(extra)} test(s) the stream never showed (e.g. {extra[0]!r})"] if extra else []
        parts += [f"{len(gone)} streamed test(s) missing (e.g. {gone[0]!r})"] if gone else []
        return "its report names " + " and ".join(parts)
    changed = [key for key in streamed.outcomes if streamed.outcomes[key] != reported[key]]
    if changed:
        key = changed[0]
        return (
            f"its report gives {len(changed)} test(s) another outcome than the one streamed as they ended "
            f"(e.g. {key!r}: reported {reported[key]!r}, streamed {streamed.outcomes[key]!r})"
        )
    if list(streamed.outcomes) != list(reported):
        return "its report lists the tests in another order than the one they ended in"
    return None
