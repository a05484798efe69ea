"""Calls in tags: Hermes ``<tool_call>`` JSON (Hermes, Qwen2.5, Qwen3) and the Qwen3-Coder XML
``<function=NAME><parameter=KEY>value</parameter></function>``, with or without the ``<tool_call>`` wrapper.

Both families share the wrapper, so one block reader serves both: a ``<tool_call>`` block holds JSON or a
``<function=...>`` element. The Llama 3.1 custom-tool form ``<function=NAME>{json}</function>`` is read here
too (its calls are tagged ``llama3_json``), since only what follows the tag tells it apart.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from typing import Any

from gym_swe.tools.parsing.bare_json import LLAMA3_JSON
from gym_swe.tools.parsing.json_calls import (
    _FENCE_CLOSE,
    _FENCE_OPEN,
    _calls_from_value,
    _decode_args_text,
    _raw_json,
)
from gym_swe.tools.parsing.scanning import (
    _MAX_NAME,
    _SEP,
    _WS,
    Format,
    _blocks,
    _error,
    _Extracted,
    _Finder,
    _Found,
    _ok,
    _skip,
    _Spans,
    _valid_name,
)

_P_OPEN, _P_CLOSE, _FN_OPEN, _FN_CLOSE = "<parameter=", "</parameter>", "<function=", "</function>"
_TC_CLOSE = re.compile(r"\s*(?:```)?\s*</tool_call>")


def _extract_tagged(
    work: str, open_tok: str, end_tok: str, parse: Callable[[str, int], tuple[list[_Found], int]]
) -> _Extracted:
    """Blocks that start at ``open_tok`` and run to the next one; ``parse(block, pos)`` reads a block.

    A block that fails is retried up to the next ``open_tok`` after the next ``end_tok``: the call may
    quote the tag itself (an agent editing code about tool calls). Few retries per message keep it linear."""
    found: list[_Found] = []
    spans: _Spans = []
    retries, resume, closes = 8, 0, _Finder(work, end_tok)
    for start, _, block_end, _, _ in _blocks(work, open_tok, None):
        if start < resume:
            continue  # swallowed by a retried block
        items, used = parse(work[start:block_end], start)
        if retries and any(item.error for item in items) and (close := closes(block_end)) >= 0:
            retries -= 1
            longer = work.find(open_tok, close)
            retried, retried_used = parse(work[start : longer if longer >= 0 else len(work)], start)
            if not any(item.error for item in retried):
                items, used = retried, retried_used
        found.extend(items)
        spans.append((start, start + used))
        resume = start + used
    return found, spans


def _parse_tool_call_block(block: str, pos: int) -> tuple[list[_Found], int]:
    lead = _skip(_WS, block, len("<tool_call>"))
    if block.startswith(_FN_OPEN, lead):
        item, used = _parse_xml_function(block[lead:], pos + lead)
        close = _TC_CLOSE.match(block, lead + used)
        return [item], close.end() if close else lead + used
    items, used = _hermes_json(block[len("<tool_call>") :], pos + len("<tool_call>"))
    return items, len("<tool_call>") + used


def _hermes_json(region: str, base: int) -> tuple[list[_Found], int]:
    """JSON call objects after ``<tool_call>``; ``region`` runs to the next ``<tool_call>`` or the end."""
    closed = "</tool_call>" in region

    def block_end(pos: int) -> int:
        close = region.find("</tool_call>", pos)
        return close + len("</tool_call>") if close >= 0 else len(region)

    def calls(values: list[tuple[Any, int, int]]) -> list[_Found]:
        where = "The JSON inside <tool_call>...</tool_call>"
        return [f for v, s, e in values for f in _calls_from_value(v, base + s, HERMES, where, region[s:e])]

    pos = _skip(_FENCE_OPEN, region)
    if pos >= len(region) or region.startswith("</tool_call>", pos):
        empty = "The <tool_call> block " + ("is empty." if closed else "was cut off before any call.")
        return [_error(base, HERMES.example, empty, "<tool_call>" + region[:100])], block_end(0)
    values: list[tuple[Any, int, int]] = []  # (value, start, end), kept only if the block ends cleanly
    while True:
        value, end, problem = _raw_json(region, pos)
        if problem is not None:
            if closed:
                problem = f"Could not parse the JSON inside <tool_call>...</tool_call>: {problem}."
            else:
                cut = "The <tool_call> block is not closed with </tool_call> and its JSON is incomplete"
                problem = f"{cut}: {problem}."
            used = block_end(pos)
            return [*calls(values), _error(base + pos, HERMES.example, problem, region[pos:used])], used
        values.append((value, pos, end))
        if close := _TC_CLOSE.match(region, end):
            return calls(values), close.end()
        after = _skip(_SEP, region, _skip(_FENCE_CLOSE, region, end))
        if region.startswith(("{", "["), after):
            pos = after  # a second call object in the same block
        elif after >= len(region) or not closed:
            return calls(values), end  # cut off after a complete call: what follows is plain text
        else:
            used = block_end(end)
            stray = region[end : min(end + 40, used - len("</tool_call>"))].strip()
            problem = (
                f"Unexpected text {stray!r} after the JSON object inside <tool_call>...</tool_call>; "
                "put exactly one JSON call object in each block."
            )
            return [*calls(values[:-1]), _error(base + pos, HERMES.example, problem, region[pos:used])], used


# A parameter ends at the </parameter> followed by the next parameter or the end of the call, so a value
# may itself contain "</parameter>" (code that writes such XML).
_XML_BOUNDARY = re.compile(r"\s*(?:<parameter=|</function>|</tool_call>|\Z)")


def _parse_xml_function(region: str, base: int) -> tuple[_Found, int]:
    """The ``<function=NAME>...</function>`` at the start of ``region``, and the characters it used."""

    def fail(problem: str) -> tuple[_Found, int]:
        close = region.find(_FN_CLOSE)
        used = close + len(_FN_CLOSE) if close >= 0 else len(region)
        return _error(base, QWEN3_CODER.example, problem, region[:used]), used

    gt = region.find(">", len(_FN_OPEN), len(_FN_OPEN) + _MAX_NAME)
    name = region[len(_FN_OPEN) : gt].strip() if gt >= 0 else ""
    if not _valid_name(name):
        return fail("The <function=...> tag must hold the tool name and end with '>', as in <function=bash>.")
    pos = _skip(_WS, region, gt + 1)
    if region.startswith(("{", "["), pos):  # Llama 3.1 custom tools: <function=name>{json}</function>
        close = region.find(_FN_CLOSE, pos)
        decoded, problem, used = _decode_args_text(region[pos : close if close >= 0 else None], close < 0)
        used = close + len(_FN_CLOSE) if close >= 0 else pos + used
        if decoded is None:
            problem = f"Could not parse the JSON arguments of <function={name}>: {problem}."
            return _error(base, LLAMA3_JSON.example, problem, region[:used]), used
        return _ok(base, name, decoded, None, LLAMA3_JSON.name, region[:used]), used
    closes = [m.start() for m in re.finditer(re.escape(_P_CLOSE), region)]
    good = [c for c in closes if _XML_BOUNDARY.match(region, c + len(_P_CLOSE))]
    arguments: dict[str, Any] = {}
    while True:
        pos = _skip(_WS, region, pos)
        if region.startswith(_P_OPEN, pos):
            gt = region.find(">", pos + len(_P_OPEN), pos + len(_P_OPEN) + _MAX_NAME)
            key = region[pos + len(_P_OPEN) : gt].strip() if gt >= 0 else ""
            if not _valid_name(key):
                return fail(f"In <function={name}>, write each parameter tag as <parameter=NAME>.")
            # Prefer the </parameter> that is followed by the next tag; else take the first one.
            ends = [c[k] for c in (good, closes) if (k := bisect.bisect_left(c, gt + 1)) < len(c)]
            if not ends:
                value_of = f"The value of parameter '{key}' in <function={name}>"
                problem = f"{value_of} is not closed with </parameter> (the call looks cut off)."
                return _error(base, QWEN3_CODER.example, problem, region), len(region)
            value = region[gt + 1 : ends[0]]
            value = value[1:] if value.startswith("\n") else value
            arguments[key] = value[:-1] if value.endswith("\n") else value
            pos = ends[0] + len(_P_CLOSE)
        elif region.startswith(_FN_CLOSE, pos):
            pos += len(_FN_CLOSE)
            break
        elif pos >= len(region) or region.startswith("</tool_call>", pos):
            break  # every parameter is closed; only </function> is missing (generation stopped there)
        else:
            stray = region[pos : pos + 40]
            return fail(
                f"Unexpected text {stray!r} inside <function={name}>: write every argument as "
                "<parameter=NAME>, the value, then </parameter>."
            )
    return _ok(base, name, arguments, None, QWEN3_CODER.name, region[:pos]), pos


def _parse_bare_function(block: str, pos: int) -> tuple[list[_Found], int]:
    item, used = _parse_xml_function(block, pos)
    close = _TC_CLOSE.match(block, used)  # a wrapper whose <tool_call> went missing
    return [item], close.end() if close else used


def _extract_hermes(work: str) -> _Extracted:
    return _extract_tagged(work, "<tool_call>", "</tool_call>", _parse_tool_call_block)


def _extract_bare_xml(work: str) -> _Extracted:
    return _extract_tagged(work, _FN_OPEN, _FN_CLOSE, _parse_bare_function)


HERMES = Format(
    name="hermes",
    markers=("<tool_call>",),
    example='<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>',
    extract=_extract_hermes,
)
QWEN3_CODER = Format(
    name="qwen3_coder",
    markers=(_FN_OPEN,),
    example="<tool_call>\n<function=bash>\n<parameter=command>\nls\n</parameter>\n</function>\n</tool_call>",
    extract=_extract_bare_xml,
)
