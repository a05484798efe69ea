"""Calls in Python call syntax: Gemma's ``<tool_code>bash(command="ls")</tool_code>`` (or a fenced
```` ```tool_code ```` block) and Llama 3.1's built-in style ``<|python_tag|>bash.call(command="ls")``.

Keyword arguments whose values are literals, read with ``ast.literal_eval``: nothing the model writes is
ever evaluated. JSON calls after ``<|python_tag|>`` (Llama 3.x) are read here too, tagged ``llama3_json``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from gym_swe.tools.parsing.bare_json import LLAMA3_JSON
from gym_swe.tools.parsing.json_calls import _calls_from_value, _raw_json
from gym_swe.tools.parsing.scanning import (
    _SEP,
    _WS,
    Format,
    _blocks,
    _error,
    _Extracted,
    _Found,
    _ok,
    _skip,
    _Spans,
)

_IDENT = re.compile(r"[A-Za-z_]\w*(?:[ \t]*\.[ \t]*[A-Za-z_]\w*)*[ \t]*", re.ASCII)
_PY_SPECIAL = re.compile(r"[()\[\]{}#\"']")
_PY_STRINGS = {
    '"""': re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*"""', re.S),
    "'''": re.compile(r"'''(?:[^'\\]|\\.|'(?!''))*'''", re.S),
    '"': re.compile(r'"(?:[^"\\\n]|\\.)*"', re.S),
    "'": re.compile(r"'(?:[^'\\\n]|\\.)*'", re.S),
}


def _call_end(src: str, pos: int) -> int:
    """Index just past the bracket closing ``src[pos]``, skipping strings and comments; -1 if never closed."""
    depth = 0
    while m := _PY_SPECIAL.search(src, pos):
        ch, pos = m.group(), m.start() + 1
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth <= 0:
                return pos
        elif ch == "#":
            if (pos := src.find("\n", pos)) < 0:
                return -1
        else:
            quote = ch * 3 if src.startswith(ch * 3, pos - 1) else ch
            if not (s := _PY_STRINGS[quote].match(src, pos - 1)):
                return -1
            pos = s.end()
    return -1


def _jsonable(value: Any) -> Any:
    """Tuples become lists; bytes, sets and the like have no JSON form, so no tool could receive them."""
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise ValueError(f"{type(value).__name__} values are not supported")


def _python_call(src: str) -> tuple[str, dict[str, Any]] | str:
    """``name(key=literal, ...)`` as ``(name, arguments)``, or what is wrong with it."""
    try:
        node = ast.parse(src, mode="eval").body
    except SyntaxError as exc:
        return f"{src.strip()[:80]!r} is not valid Python call syntax ({exc.msg})"
    except (RecursionError, MemoryError, ValueError, OverflowError):
        return "the call is nested too deeply or is not valid Python"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
        node = node.args[0] if len(node.args) == 1 and isinstance(node.args[0], ast.Call) else node  # Gemma
    if not isinstance(node, ast.Call):
        return "expected a single function call"
    parts, func = [], node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return "call the tool by its name, as in bash(...)"
    parts = [func.id, *reversed(parts)]
    name = parts[-2] if len(parts) > 1 and parts[-1] == "call" else parts[-1]  # bash.call, default_api.bash
    if node.args:
        return f'{name}() got a positional argument; pass keyword arguments, as in {name}(command="ls")'
    arguments: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            return f"{name}() cannot take **kwargs; write each argument as name=value"
        try:
            arguments[kw.arg] = _jsonable(ast.literal_eval(kw.value))
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError, OverflowError):
            return (
                f"the value of argument '{kw.arg}' in the call to {name}() is not a literal; use only "
                "strings, numbers, lists, dicts, True, False and None (no variables, expressions, f-strings)"
            )
    return name, arguments


def _python_calls(region: str, pos: int, base: int, fmt: Format, where: str) -> tuple[list[_Found], int]:
    """Calls one after another (newline or ``;`` separated), and the characters they used."""
    found: list[_Found] = []
    while (pos := _skip(_SEP, region, pos)) < len(region):
        ident = _IDENT.match(region, pos)
        if ident is None or not region.startswith("(", ident.end()):
            stray = region[pos : pos + 60]
            problem = f"Expected a function call {where}, found {stray!r}."
            return [*found, _error(base + pos, fmt.example, problem, stray)], len(region)
        end = _call_end(region, ident.end())
        if end < 0:
            problem = f"The call to {ident.group().strip()}(...) {where} is never closed with ')'"
            problem += " (or a string in it is not terminated)."
            return [*found, _error(base + pos, fmt.example, problem, region[pos:])], len(region)
        parsed = _python_call(region[pos:end])
        if isinstance(parsed, str):
            problem = f"Could not use the call {where}: {parsed}."
            found.append(_error(base + pos, fmt.example, problem, region[pos:end]))
        else:
            found.append(_ok(base + pos, *parsed, None, fmt.name, region[pos:end]))
        pos = end
    return found, pos


def _tool_code_extractor(open_tok: str, close_tok: str) -> Callable[[str], _Extracted]:
    """Both tool_code spellings: calls between ``open_tok`` and ``close_tok``."""

    def extract(work: str) -> _Extracted:
        found: list[_Found] = []
        spans: _Spans = []
        for start, body_start, body_end, end, _ in _blocks(work, open_tok, close_tok):
            where = f"inside {open_tok}"
            found += _python_calls(work[body_start:body_end], 0, body_start, TOOL_CODE, where)[0]
            spans.append((start, end))
        return found, spans

    return extract


def _extract_python_tag(work: str) -> _Extracted:
    found: list[_Found] = []
    spans: _Spans = []
    for start, body_start, body_end, _, _ in _blocks(work, "<|python_tag|>", None):
        region = work[body_start:body_end]
        pos, where = _skip(_WS, region), "after <|python_tag|>"
        if not region.startswith(("{", "["), pos):
            items, pos = _python_calls(region, pos, body_start, PYTHON_TAG, where)
            found += items
        while region.startswith(("{", "["), pos):  # Llama 3.x JSON calls
            value, end, problem = _raw_json(region, pos)
            if problem is not None:
                problem = f"Could not parse the JSON tool call {where}: {problem}."
                found.append(_error(body_start + pos, LLAMA3_JSON.example, problem, region[pos:]))
                pos = len(region)
                break
            where_json = f"The JSON {where}"
            found += _calls_from_value(value, body_start + pos, LLAMA3_JSON, where_json, region[pos:end])
            pos = _skip(_SEP, region, end)
        spans.append((start, body_start + pos))
    return found, spans


TOOL_CODE = Format(
    name="tool_code",
    markers=("<tool_code>",),
    example='<tool_code>bash(command="ls")</tool_code>',
    extract=_tool_code_extractor("<tool_code>", "</tool_code>"),
)
TOOL_CODE_FENCED = Format(
    name="tool_code",
    markers=("```tool_code",),
    example=TOOL_CODE.example,
    extract=_tool_code_extractor("```tool_code", "```"),
)
PYTHON_TAG = Format(
    name="python_tag",
    markers=("<|python_tag|>",),
    example='<|python_tag|>bash.call(command="ls")',
    extract=_extract_python_tag,
)
