"""Calls written as plain JSON, without any marker: a fenced ```` ```json ```` block holding a call object
or a list of them (``fenced_json``), and Llama 3.x call objects, one per line or ``;``-separated
(``llama3_json``).

These are the fallbacks: JSON is also ordinary output (a config the agent prints), so they are read only
when no format's marker appears, and only JSON shaped like a call counts as one.
"""

from __future__ import annotations

import re

from gym_swe.tools.parsing.json_calls import (
    _as_list,
    _calls_from_value,
    _load_json,
    _looks_like_call,
    _raw_json_far,
)
from gym_swe.tools.parsing.scanning import _SNIPPET_CHARS, Format, _error, _Extracted, _Found, _Spans

_FENCE_LINE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+\-]*)[ \t]*$", re.M)
_CALL_ATTEMPT = re.compile(r"""\s*\[?\s*\{\s*["']?(?:name|function)["']?\s*:""")
_LLAMA_START = re.compile(r"""^[ \t]*(\{)\s*["'](?:name|type|function|parameters|arguments)["']\s*:""", re.M)
_SEMICOLON = re.compile(r"[ \t]*;\s*")


def _extract_fenced_json(work: str) -> _Extracted:
    found: list[_Found] = []
    spans: _Spans = []
    fences = list(_FENCE_LINE.finditer(work)) if "```" in work else []
    for opening, closing in zip(fences[::2], [*fences[1::2], None]):
        inner = work[opening.end() : closing.start() if closing else len(work)]
        if opening.group(1).lower() not in ("", "json", "jsonc", "json5") or not inner.strip():
            continue
        value, problem = _load_json(inner)
        span = (opening.start(), closing.end() if closing else len(work))
        if problem is not None and _CALL_ATTEMPT.match(inner):
            problem = f"Could not parse the JSON tool call in the ``` block: {problem}."
            found.append(_error(opening.start(), FENCED_JSON.example, problem, inner))
            spans.append(span)
        elif problem is None and value != [] and all(map(_looks_like_call, _as_list(value))):
            where = "The JSON in the ``` block"
            found += _calls_from_value(value, opening.start(), FENCED_JSON, where, inner)
            spans.append(span)
    return found, spans


def _extract_llama_json(work: str) -> _Extracted:
    found: list[_Found] = []
    spans: _Spans = []
    floor = 0
    for match in _LLAMA_START.finditer(work):
        start = match.start(1)
        while start >= floor:
            value, end, problem = _raw_json_far(work, start)
            if problem is not None:
                problem = f"Could not parse the JSON tool call: {problem}."
                found.append(
                    _error(start, LLAMA3_JSON.example, problem, work[start : start + _SNIPPET_CHARS])
                )
                if end < 0:  # nested too deeply: every later attempt would fail the same way
                    return found, spans
                floor = end + 1  # JSON is context-free: objects that start inside this broken one fail too
                break
            floor = end
            if not _looks_like_call(value):
                break  # ordinary JSON the model printed
            found += _calls_from_value(value, start, LLAMA3_JSON, "The JSON object", work[start:end])
            sep = _SEMICOLON.match(work, end)
            spans.append((start, sep.end() if sep else end))
            start = sep.end() if sep and work.startswith("{", sep.end()) else -1
    return found, spans


FENCED_JSON = Format(
    name="fenced_json",
    markers=(),
    example='```json\n{"name": "bash", "arguments": {"command": "ls"}}\n```',
    extract=_extract_fenced_json,
)
LLAMA3_JSON = Format(
    name="llama3_json",
    markers=(),
    # "parameters" is Llama's own key and is read too; the hint teaches what the system prompt teaches.
    example='{"name": "bash", "arguments": {"command": "ls"}}',
    extract=_extract_llama_json,
)
