"""JSON as models write it: decoding that says how to fix what is wrong, and decoded values made into calls.

Most formats carry their arguments, or whole call objects, as JSON; they all read it here, so that every
format reports a broken call in the same words (line and column, and the likely fix: single quotes, a
trailing comma, Python's True/False/None, a raw line break, a JSON cut short).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from gym_swe.tools.parsing.scanning import _WS, Format, _error, _Found, _ok, _skip

_FENCE_OPEN = re.compile(r"\s*(?:```[\w-]*[ \t]*\n)?\s*")
_FENCE_CLOSE = re.compile(r"\s*(?:```)?\s*")
_DECODER = json.JSONDecoder()
_CALL_KEYS = frozenset({"name", "arguments", "parameters", "type", "id"})


def _json_problem(doc: str, exc: Exception, origin: int = 0) -> str:
    """Say where a JSON error is (relative to ``origin``) and, when the cause is clear, how to fix it."""
    if not isinstance(exc, json.JSONDecodeError):
        return "the JSON is nested too deeply" if isinstance(exc, (RecursionError, MemoryError)) else str(exc)
    pos = exc.pos
    line = doc.count("\n", origin, pos) + 1
    column = pos - (doc.rfind("\n", origin, pos) + 1 if line > 1 else origin) + 1
    where = f"{exc.msg} (line {line}, column {column})"
    ahead, behind = doc[pos : pos + 8], doc[max(origin, pos - 64) : pos].rstrip()
    if ahead.startswith("'"):
        return where + " - JSON needs double quotes around keys and strings, not single quotes"
    if ahead[:1] in ("}", "]") and behind.endswith(","):
        return where + " - remove the trailing comma before the closing bracket"
    if re.match(r"(?:True|False|None)\b", ahead):
        return where + " - JSON spells these true, false and null"
    if exc.msg.startswith("Invalid control character"):
        return where + " - inside a JSON string write a line break as \\n and a tab as \\t"
    if exc.msg.startswith("Invalid \\escape"):
        return where + " - a backslash inside a JSON string must be doubled (\\\\)"
    rest = doc[pos : pos + 64].lstrip()
    if exc.msg.startswith("Unterminated string") or not rest or rest.startswith(("</", "<|", "<｜", "[TOOL")):
        return where + " - the JSON stops before it is complete; close every string, { and ["
    return where


def _raw_json(doc: str, idx: int) -> tuple[Any, int, str | None]:
    """One JSON value at ``doc[idx]``: ``(value, end, None)``, or ``(None, error_pos, problem)`` where
    ``error_pos`` is -1 when unknown (nesting too deep)."""
    try:
        value, end = _DECODER.raw_decode(doc, idx)
        return value, end, None
    except json.JSONDecodeError as exc:
        return None, exc.pos, _json_problem(doc, exc, idx)
    except (RecursionError, MemoryError, ValueError, TypeError) as exc:  # ValueError: a 5000-digit number
        return None, -1, _json_problem(doc, exc)


def _raw_json_far(doc: str, start: int, window: int = 1 << 16) -> tuple[Any, int, str | None]:
    """``_raw_json`` deep inside a long text.

    JSONDecodeError counts lines from offset 0 of the document, so failing at many offsets of one long
    string is quadratic: decode a window first, and the whole rest only when the window was too short."""
    value, end, problem = _raw_json(doc[start : start + window], 0)
    cut_short = end < 0 or end >= window - 64 or (problem or "").startswith("Unterminated")
    if problem is not None and start + window < len(doc) and cut_short:
        value, end, problem = _raw_json(doc[start:], 0)
    return value, (start + end if end >= 0 else -1), problem


def _load_json(doc: str) -> tuple[Any, str | None]:
    value, end, problem = _raw_json(doc, _skip(_WS, doc))
    if problem is None and _skip(_WS, doc, end) < len(doc):
        return None, f"Extra data after the JSON value (column {end + 1})"
    return value, problem


def _json_type(value: Any) -> str:
    kinds = {str: "a string", list: "a list", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


def _as_arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Arguments end up a dict; a JSON-encoded string is decoded (some templates double-encode)."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if isinstance(raw, str):
        raw, problem = _load_json(raw)
        if problem is not None:
            return None, f"the arguments are a string that is not valid JSON ({problem})"
    if isinstance(raw, Mapping):
        return dict(raw), None
    kind = _json_type(raw)
    return None, f"the arguments must be a JSON object mapping parameter names to values, not {kind}"


def _looks_like_call(obj: Any) -> bool:
    """Is this bare JSON meant as a tool call, rather than some data the model printed?"""
    if not isinstance(obj, dict):
        return False
    if isinstance(obj.get("function"), dict):
        return "name" in obj["function"]
    if "name" not in obj or not set(obj) <= _CALL_KEYS:
        return False
    return "arguments" in obj or "parameters" in obj or isinstance(obj["name"], str)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _calls_from_value(value: Any, pos: int, fmt: Format, where: str, snippet: str) -> list[_Found]:
    """A decoded JSON value that must be a call object (or OpenAI's nested form) or a list of them."""
    items = _as_list(value)
    if not items:
        return [_error(pos, fmt.example, f"{where} holds an empty list; put a call object in it.", snippet)]
    found = []
    for obj in items:
        problem: str | None = f'expected a JSON object with "name" and "arguments", got {_json_type(obj)}'
        if isinstance(obj, dict):
            inner = obj["function"] if isinstance(obj.get("function"), dict) else obj
            name, raw = inner.get("name"), inner.get("arguments", inner.get("parameters"))
            arguments, problem = _as_arguments(raw)
            if name is None:
                problem = 'the call object has no "name" key'
            elif not isinstance(name, str) or not name.strip():
                problem = '"name" must be a non-empty string naming the tool'
            elif arguments is not None:
                call_id = obj.get("id") if isinstance(obj.get("id"), str) else None
                found.append(_ok(pos, name.strip(), arguments, call_id, fmt.name, snippet))
                continue
            else:
                problem = f"in the call to '{name.strip()}', {problem}"
        found.append(_error(pos, fmt.example, f"{where} is not a valid call: {problem}.", snippet))
    return found


def _decode_args_text(text: str, trailing_ok: bool) -> tuple[dict[str, Any] | None, str | None, int]:
    """JSON arguments written after a tool name (harmony, DeepSeek, Kimi, Devstral), maybe fenced.

    Returns ``(arguments, problem, used)``. With ``trailing_ok``, text after the JSON is left for the
    transcript instead of being an error."""
    lead = _skip(_FENCE_OPEN, text)
    if lead >= len(text):
        return {}, None, len(text)
    value, end, problem = _raw_json(text, lead)
    if problem is not None:
        return None, problem, len(text)
    tail = _skip(_FENCE_CLOSE, text, end)
    if tail < len(text) and not trailing_ok:
        return None, f"unexpected text after the JSON arguments: {text[tail : tail + 40]!r}", len(text)
    arguments, problem = _as_arguments(value)
    return arguments, problem, tail
