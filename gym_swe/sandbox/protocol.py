"""The host's reading of the executor's frames: every reply checked against its schema before it is used.

The executor is trusted, but the host does not take that on faith: a reply that is not exactly what the
request asked for (an unknown field, a field of the wrong type, a size over the request's cap, sizes that do
not add up, a reply to another request, bytes nobody asked for) is a `ProtocolViolation`, and the sandbox
is then treated as crashed. Caps are what keep host memory bounded whatever a sandbox sends.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

MAX_HEADER_BYTES = 64 * 1024
"""Longest header line the host reads; a reply's bulk travels in its payload."""
MAX_ERROR_CHARS = 4096


class ProtocolViolation(Exception):
    """A frame from the executor that breaks the protocol."""


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _signed_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


def _bool(value: Any) -> bool:
    return isinstance(value, bool)


def _text(value: Any) -> bool:
    return isinstance(value, str) and len(value) <= MAX_ERROR_CHARS


# op -> {field: check}; ``ok``, ``id`` and ``size`` are checked for every reply.
REPLY_FIELDS: dict[str, dict[str, Callable[[Any], bool]]] = {
    "hello": {"op": lambda v: v == "hello", "pid": _int, "python": _text, "protected": _bool},
    "exec": {
        "exit_code": _signed_int,
        "timed_out": _bool,
        "interrupted": _bool,
        "duration": _number,
        "stdout_size": _int,
        "stdout_head": _int,
        "stdout_cut": _int,
        "stderr_size": _int,
        "stderr_head": _int,
        "stderr_cut": _int,
    },
    "read": {},
    "write": {},
    "put_tar": {},
    "get_tar": {},
    "manifest": {},
    "get_files": {},
    "kill_all": {"killed": _int, "left": _int},
    "ping": {},
}
ERROR_FIELDS: dict[str, Callable[[Any], bool]] = {"kind": _text, "error": _text}
RECORDS_FIELDS: dict[str, Callable[[Any], bool]] = {"records_size": _int, "records_cut": _int}
"""What an ``exec`` reply adds when its request asked for a records pipe (and only then)."""


def parse_header(line: bytes) -> dict[str, Any]:
    """One header line as a JSON object, or a violation."""
    try:
        header = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ProtocolViolation(f"a header that is not JSON: {error}") from None
    if not isinstance(header, dict):
        raise ProtocolViolation(f"a header that is not an object: {type(header).__name__}")
    size = header.get("size")
    if not _int(size):
        raise ProtocolViolation(f"a header without a valid size: {size!r}")
    return header


def check_reply(
    op: str,
    request_id: int | None,
    header: Mapping[str, Any],
    max_payload: int,
    max_records: int | None = None,
) -> None:
    """Raise `ProtocolViolation` unless ``header`` is a well-formed reply to request ``request_id``;
    ``max_records``: the records bound an ``exec`` request asked for (None: it asked for no records)."""
    size = header["size"]
    if size > max_payload:
        raise ProtocolViolation(f"a {op!r} reply of {size} bytes, over the {max_payload} asked for")
    if header.get("ok") is True:
        fields = REPLY_FIELDS[op]
        if op == "exec" and max_records is not None:
            fields = {**fields, **RECORDS_FIELDS}
    elif header.get("ok") is False:
        fields = ERROR_FIELDS
        if size:
            raise ProtocolViolation(f"an error reply to {op!r} with a payload of {size} bytes")
    else:
        raise ProtocolViolation(f"a reply to {op!r} without a boolean 'ok'")
    expected_keys = {"ok", "size", *fields} | ({"id"} if op != "hello" else set())
    extra = set(header) - expected_keys
    missing = expected_keys - set(header)
    if extra or missing:
        raise ProtocolViolation(
            f"a reply to {op!r} with unexpected fields {sorted(extra)} / missing {sorted(missing)}"
        )
    if op != "hello" and header["id"] != request_id:
        raise ProtocolViolation(f"a reply to request {header['id']!r} where {request_id} was asked")
    for name, check in fields.items():
        if not check(header[name]):
            raise ProtocolViolation(f"a reply to {op!r} with a bad {name!r}: {header[name]!r}"[:300])
    if op == "exec" and header["ok"]:
        _check_exec_sizes(header, max_records)


def _check_exec_sizes(header: Mapping[str, Any], max_records: int | None) -> None:
    for stream in ("stdout", "stderr"):
        if header[f"{stream}_head"] > header[f"{stream}_size"]:
            raise ProtocolViolation(f"an exec reply whose {stream} head is longer than its {stream}")
    records = 0
    if max_records is not None:
        records = header["records_size"]
        if records > max_records:
            raise ProtocolViolation(
                f"an exec reply with {records} bytes of records, over the {max_records} asked for"
            )
    if header["stdout_size"] + header["stderr_size"] + records != header["size"]:
        raise ProtocolViolation("an exec reply whose stream sizes do not add up to its payload")
