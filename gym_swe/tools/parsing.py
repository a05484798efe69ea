"""The tool-call grammar: turn a model's raw output into tool calls.

Accepted formats, by the ``format`` tag each call carries. A message may hold several calls; they come
back in the order they appear.

- ``hermes`` (Hermes, Qwen2.5, Qwen3):
  ``<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>``.
  ``"parameters"`` works as a synonym of ``"arguments"``, and arguments may be a JSON-encoded string.
  A last ``<tool_call>`` that was cut off before ``</tool_call>`` still counts when its JSON is complete.
- ``qwen3_coder``: ``<tool_call><function=bash><parameter=command>ls</parameter></function></tool_call>``,
  with or without the ``<tool_call>`` wrapper. Values are raw text, kept verbatim as strings except for
  one leading and one trailing newline.
- ``llama3_json`` (Llama 3.x): a message of ``{"name": "bash", "parameters": {...}}`` objects, one per
  line or ``;``-separated, optionally after ``<|python_tag|>``. The tag also covers the Llama 3.1
  custom-tool form ``<function=bash>{"command": "ls"}</function>``.
- ``python_tag`` (Llama 3.1 built-in style): ``<|python_tag|>bash.call(command="ls")``.
- ``mistral``: ``[TOOL_CALLS] [{"name": "bash", "arguments": {...}, "id": "..."}]`` (v0.3, Nemo) and
  ``[TOOL_CALLS]bash[CALL_ID]a1b2c3d4e[ARGS]{"command": "ls"}`` (Devstral, Mistral Small 3.x).
- ``tool_code`` (Gemma): ``<tool_code>bash(command="ls")</tool_code>`` or a fenced ```` ```tool_code ````
  block. Python call syntax with keyword arguments whose values are literals, read with
  ``ast.literal_eval`` and never evaluated.
- ``harmony`` (gpt-oss):
  ``<|channel|>commentary to=functions.bash <|constrain|>json<|message|>{"command": "ls"}<|call|>``.
- ``deepseek``: V3.1 ``<｜tool▁call▁begin｜>bash<｜tool▁sep｜>{"command": "ls"}<｜tool▁call▁end｜>``, and V3
  ``<｜tool▁call▁begin｜>function<｜tool▁sep｜>bash`` followed by a fenced json block.
- ``kimi`` (Kimi K2):
  ``<|tool_call_begin|>functions.bash:0<|tool_call_argument_begin|>{"command": "ls"}<|tool_call_end|>``.
  This gives the name ``bash`` and the id ``functions.bash:0``.
- ``fenced_json``, the last resort when none of the markers above appear: a ```` ```json ```` (or plain
  ```` ``` ````) block holding a call object or a list of them.
- ``openai``: the structured ``tool_calls`` of an OpenAI-format assistant message
  (:func:`calls_from_message`).

Reasoning is never searched for calls. That covers ``<think>...</think>``, the text before a lone
``</think>`` (its ``<think>`` was in the prompt), everything after a ``<think>`` that is never closed,
and gpt-oss ``analysis`` messages.

Neither entry point raises, whatever the input. A malformed call becomes a :class:`ParseError` whose
message names the format the model tried, says what was wrong, and shows a correct call in that format.
What comes back is bounded whatever the input: at most ``MAX_ERRORS`` errors (the last one says how many more
there were) of at most ``MAX_ERROR_CHARS`` characters each, in valid Unicode.
"""  # noqa: RUF002 (the DeepSeek tokens really are written with full-width bars)

from __future__ import annotations

import ast
import bisect
import difflib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ParseError", "ParsedCalls", "ToolCall", "calls_from_message", "parse_tool_calls"]


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for."""

    name: str
    arguments: dict[str, Any]
    id: str | None = None
    format: str = ""


@dataclass(frozen=True)
class ParseError:
    """A call the model tried to write but got wrong; ``message`` is written to be shown to the model."""

    message: str
    snippet: str


@dataclass(frozen=True)
class ParsedCalls:
    """Everything found in one message. ``content`` is its text without reasoning or call markup."""

    calls: tuple[ToolCall, ...]
    errors: tuple[ParseError, ...]
    content: str = ""


# Past this many characters the rest of a message is not searched: a real turn is far smaller, and the
# cap bounds what garbage input can cost.
_MAX_CHARS = 1_000_000
_SNIPPET_CHARS = 200
_MAX_NAME = 256
MAX_ERRORS = 20
"""Most errors reported for one message: past that, one more says how many were left out (a megabyte of
broken calls would otherwise be tens of thousands of messages, each several times longer than its call)."""
MAX_ERROR_CHARS = 1_000
"""Longest error message: a message may quote what the model wrote (a tool name, say)."""

_EXAMPLES = {
    "hermes": '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>',
    "qwen3_coder": "<tool_call>\n<function=bash>\n<parameter=command>\nls\n</parameter>\n</function>\n"
    "</tool_call>",
    # "parameters" is Llama's own key and is read too; the hint teaches what the system prompt teaches.
    "llama3_json": '{"name": "bash", "arguments": {"command": "ls"}}',
    "python_tag": '<|python_tag|>bash.call(command="ls")',
    "mistral": '[TOOL_CALLS][{"name": "bash", "arguments": {"command": "ls"}}]',
    "mistral_args": '[TOOL_CALLS]bash[ARGS]{"command": "ls"}',
    "tool_code": '<tool_code>bash(command="ls")</tool_code>',
    "harmony": "<|channel|>commentary to=functions.bash <|constrain|>json<|message|>"
    '{"command": "ls"}<|call|>',
    "deepseek": '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>bash<｜tool▁sep｜>{"command": "ls"}'
    "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    "kimi": "<|tool_calls_section_begin|><|tool_call_begin|>functions.bash:0<|tool_call_argument_begin|>"
    '{"command": "ls"}<|tool_call_end|><|tool_calls_section_end|>',
    "fenced_json": '```json\n{"name": "bash", "arguments": {"command": "ls"}}\n```',
    "openai": '{"id": "call_1", "type": "function", "function": {"name": "bash", '
    '"arguments": "{\\"command\\": \\"ls\\"}"}}',
}

_DS_CALLS = ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>")
_DS_CALL_BEGIN, _DS_CALL_END, _DS_SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
_KIMI_SECTION = ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>")
_KIMI_BEGIN, _KIMI_END, _KIMI_ARGS = (
    "<|tool_call_begin|>",
    "<|tool_call_end|>",
    "<|tool_call_argument_begin|>",
)
_P_OPEN, _P_CLOSE, _FN_OPEN, _FN_CLOSE = "<parameter=", "</parameter>", "<function=", "</function>"

# Any of these means the model used a known call syntax: the fenced and bare JSON fallbacks stay off. They
# are also looked for in the reasoning, to tell the model that a call written there was ignored.
_MARKERS = (
    "<tool_call>", "<function=", "<|python_tag|>", "[TOOL_CALLS]", "<tool_code>", "```tool_code",
    "<|channel|>", "<|message|>", _DS_CALL_BEGIN, _DS_CALLS[0], _KIMI_BEGIN, _KIMI_SECTION[0],
)  # fmt: skip
# End-of-turn tokens that servers leave at the end of the text when they keep special tokens.
_STOP_TOKENS = (
    "<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "</s>", "<end_of_turn>",
    "<|end|>", "<|return|>", "<|call|>", "<｜end▁of▁sentence｜>",
)  # fmt: skip

_WS = re.compile(r"\s*")
_SEP = re.compile(r"[\s;,]*")
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:\-]*")
_FENCE_OPEN = re.compile(r"\s*(?:```[\w-]*[ \t]*\n)?\s*")
_FENCE_CLOSE = re.compile(r"\s*(?:```)?\s*")
_TC_CLOSE = re.compile(r"\s*(?:```)?\s*</tool_call>")
_DECODER = json.JSONDecoder()
_CALL_KEYS = frozenset({"name", "arguments", "parameters", "type", "id"})


@dataclass
class _Found:
    """A call or an error, with its position so that calls written in different syntaxes keep their order."""

    pos: int
    snippet: str
    call: ToolCall | None = None
    error: ParseError | None = None


_Spans = list[tuple[int, int]]
_Extracted = tuple[list[_Found], _Spans]  # what each format's extractor returns: items, spans to blank out


# ---------------------------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------------------------


def _snippet(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _SNIPPET_CHARS else text[: _SNIPPET_CHARS - 3] + "..."


def _error(pos: int, fmt: str, problem: str, snippet: str) -> _Found:
    problem = problem.strip()
    if not problem.endswith((".", "?", "!")):
        problem += "."
    example = _EXAMPLES[fmt]
    message = f"{problem} Write each call as {example}{'' if example.endswith('`') else '.'}"
    return _Found(pos, snippet, error=ParseError(message, _snippet(snippet)))


def _ok(
    pos: int, name: str, arguments: dict[str, Any], call_id: str | None, fmt: str, snippet: str
) -> _Found:
    return _Found(pos, snippet, call=ToolCall(name, arguments, call_id, fmt))


def _valid_name(name: str) -> bool:
    return len(name) <= _MAX_NAME and _NAME.fullmatch(name) is not None


class _Finder:
    """``str.find`` that remembers its last answer.

    The scanners ask for the next occurrence of a token from ever larger positions. Searching afresh each
    time is quadratic when the token is missing (think 10,000 unclosed tags), so a hit still ahead of the
    query is reused."""

    def __init__(self, text: str, token: str) -> None:
        self.text, self.token, self._asked, self._hit = text, token, -1, -1

    def __call__(self, pos: int) -> int:
        if not (0 <= self._asked <= pos and (self._hit == -1 or self._hit >= pos)):
            self._asked, self._hit = pos, self.text.find(self.token, pos)
        return self._hit


def _blocks(
    text: str, open_tok: str, close_tok: str | None, stops: tuple[str, ...] = ()
) -> Iterator[tuple[int, int, int, int, bool]]:
    """Yield ``(start, body_start, body_end, end, closed)`` for each ``open_tok ... close_tok`` block.

    A block without its closing token runs to the next ``open_tok`` or stop token, or to the end."""
    opens, limits = _Finder(text, open_tok), [_Finder(text, tok) for tok in (open_tok, *stops)]
    closes = _Finder(text, close_tok) if close_tok else None
    pos = 0
    while (start := opens(pos)) >= 0:
        body = start + len(open_tok)
        limit = min((x for find in limits if (x := find(body)) >= 0), default=len(text))
        close = closes(body) if closes else -1
        if 0 <= close < limit:
            yield start, body, close, close + len(close_tok or ""), True
            pos = close + len(close_tok or "")
        else:
            yield start, body, limit, limit, False
            pos = max(limit, body)


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
    value, end, problem = _raw_json(doc, _WS.match(doc).end())
    if problem is None and _WS.match(doc, end).end() < len(doc):
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


def _calls_from_value(value: Any, pos: int, fmt: str, where: str, snippet: str) -> list[_Found]:
    """A decoded JSON value that must be a call object (or OpenAI's nested form) or a list of them."""
    items = _as_list(value)
    if not items:
        return [_error(pos, fmt, f"{where} holds an empty list; put a call object in it.", snippet)]
    found = []
    for obj in items:
        problem = f'expected a JSON object with "name" and "arguments", got {_json_type(obj)}'
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
                found.append(_ok(pos, name.strip(), arguments, call_id, fmt, snippet))
                continue
            else:
                problem = f"in the call to '{name.strip()}', {problem}"
        found.append(_error(pos, fmt, f"{where} is not a valid call: {problem}.", snippet))
    return found


def _decode_args_text(text: str, trailing_ok: bool) -> tuple[dict[str, Any] | None, str | None, int]:
    """JSON arguments written after a tool name (harmony, DeepSeek, Kimi, Devstral), maybe fenced.

    Returns ``(arguments, problem, used)``. With ``trailing_ok``, text after the JSON is left for the
    transcript instead of being an error."""
    lead = _FENCE_OPEN.match(text).end()
    if lead >= len(text):
        return {}, None, len(text)
    value, end, problem = _raw_json(text, lead)
    if problem is not None:
        return None, problem, len(text)
    tail = _FENCE_CLOSE.match(text, end).end()
    if tail < len(text) and not trailing_ok:
        return None, f"unexpected text after the JSON arguments: {text[tail : tail + 40]!r}", len(text)
    arguments, problem = _as_arguments(value)
    return arguments, problem, tail


# ---------------------------------------------------------------------------------------------------------
# Hermes / Qwen <tool_call> and Qwen3-Coder XML
# ---------------------------------------------------------------------------------------------------------


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
    lead = _WS.match(block, len("<tool_call>")).end()
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
        return [f for v, s, e in values for f in _calls_from_value(v, base + s, "hermes", where, region[s:e])]

    pos = _FENCE_OPEN.match(region).end()
    if pos >= len(region) or region.startswith("</tool_call>", pos):
        problem = "The <tool_call> block " + ("is empty." if closed else "was cut off before any call.")
        return [_error(base, "hermes", problem, "<tool_call>" + region[:100])], block_end(0)
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
            return [*calls(values), _error(base + pos, "hermes", problem, region[pos:used])], used
        values.append((value, pos, end))
        if close := _TC_CLOSE.match(region, end):
            return calls(values), close.end()
        after = _SEP.match(region, _FENCE_CLOSE.match(region, end).end()).end()
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
            return [*calls(values[:-1]), _error(base + pos, "hermes", problem, region[pos:used])], used


# A parameter ends at the </parameter> followed by the next parameter or the end of the call, so a value
# may itself contain "</parameter>" (code that writes such XML).
_XML_BOUNDARY = re.compile(r"\s*(?:<parameter=|</function>|</tool_call>|\Z)")


def _parse_xml_function(region: str, base: int) -> tuple[_Found, int]:
    """The ``<function=NAME>...</function>`` at the start of ``region``, and the characters it used."""

    def fail(problem: str) -> tuple[_Found, int]:
        close = region.find(_FN_CLOSE)
        used = close + len(_FN_CLOSE) if close >= 0 else len(region)
        return _error(base, "qwen3_coder", problem, region[:used]), used

    gt = region.find(">", len(_FN_OPEN), len(_FN_OPEN) + _MAX_NAME)
    name = region[len(_FN_OPEN) : gt].strip() if gt >= 0 else ""
    if not _valid_name(name):
        return fail("The <function=...> tag must hold the tool name and end with '>', as in <function=bash>.")
    pos = _WS.match(region, gt + 1).end()
    if region.startswith(("{", "["), pos):  # Llama 3.1 custom tools: <function=name>{json}</function>
        close = region.find(_FN_CLOSE, pos)
        arguments, problem, used = _decode_args_text(region[pos : close if close >= 0 else None], close < 0)
        used = close + len(_FN_CLOSE) if close >= 0 else pos + used
        if arguments is None:
            problem = f"Could not parse the JSON arguments of <function={name}>: {problem}."
            return _error(base, "llama3_json", problem, region[:used]), used
        return _ok(base, name, arguments, None, "llama3_json", region[:used]), used
    closes = [m.start() for m in re.finditer(re.escape(_P_CLOSE), region)]
    good = [c for c in closes if _XML_BOUNDARY.match(region, c + len(_P_CLOSE))]
    arguments: dict[str, Any] = {}
    while True:
        pos = _WS.match(region, pos).end()
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
                return _error(base, "qwen3_coder", problem, region), len(region)
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
    return _ok(base, name, arguments, None, "qwen3_coder", region[:pos]), pos


def _parse_bare_function(block: str, pos: int) -> tuple[list[_Found], int]:
    item, used = _parse_xml_function(block, pos)
    close = _TC_CLOSE.match(block, used)  # a wrapper whose <tool_call> went missing
    return [item], close.end() if close else used


def _extract_hermes(work: str) -> _Extracted:
    return _extract_tagged(work, "<tool_call>", "</tool_call>", _parse_tool_call_block)


def _extract_bare_xml(work: str) -> _Extracted:
    return _extract_tagged(work, _FN_OPEN, _FN_CLOSE, _parse_bare_function)


# ---------------------------------------------------------------------------------------------------------
# Python call syntax: <tool_code>, ```tool_code, <|python_tag|>name.call(...)
# ---------------------------------------------------------------------------------------------------------

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


def _python_calls(region: str, pos: int, base: int, fmt: str, where: str) -> tuple[list[_Found], int]:
    """Calls one after another (newline or ``;`` separated), and the characters they used."""
    found: list[_Found] = []
    while (pos := _SEP.match(region, pos).end()) < len(region):
        ident = _IDENT.match(region, pos)
        if ident is None or not region.startswith("(", ident.end()):
            stray = region[pos : pos + 60]
            problem = f"Expected a function call {where}, found {stray!r}."
            return [*found, _error(base + pos, fmt, problem, stray)], len(region)
        end = _call_end(region, ident.end())
        if end < 0:
            problem = f"The call to {ident.group().strip()}(...) {where} is never closed with ')'"
            problem += " (or a string in it is not terminated)."
            return [*found, _error(base + pos, fmt, problem, region[pos:])], len(region)
        parsed = _python_call(region[pos:end])
        if isinstance(parsed, str):
            problem = f"Could not use the call {where}: {parsed}."
            found.append(_error(base + pos, fmt, problem, region[pos:end]))
        else:
            found.append(_ok(base + pos, *parsed, None, fmt, region[pos:end]))
        pos = end
    return found, pos


def _tool_code_extractor(open_tok: str, close_tok: str) -> Callable[[str], _Extracted]:
    def extract(work: str) -> _Extracted:
        found: list[_Found] = []
        spans: _Spans = []
        for start, body_start, body_end, end, _ in _blocks(work, open_tok, close_tok):
            where = f"inside {open_tok}"
            found += _python_calls(work[body_start:body_end], 0, body_start, "tool_code", where)[0]
            spans.append((start, end))
        return found, spans

    return extract


def _extract_python_tag(work: str) -> _Extracted:
    found: list[_Found] = []
    spans: _Spans = []
    for start, body_start, body_end, _, _ in _blocks(work, "<|python_tag|>", None):
        region = work[body_start:body_end]
        pos, where = _WS.match(region).end(), "after <|python_tag|>"
        if not region.startswith(("{", "["), pos):
            items, pos = _python_calls(region, pos, body_start, "python_tag", where)
            found += items
        while region.startswith(("{", "["), pos):  # Llama 3.x JSON calls
            value, end, problem = _raw_json(region, pos)
            if problem is not None:
                problem = f"Could not parse the JSON tool call {where}: {problem}."
                found.append(_error(body_start + pos, "llama3_json", problem, region[pos:]))
                pos = len(region)
                break
            where_json = f"The JSON {where}"
            found += _calls_from_value(value, body_start + pos, "llama3_json", where_json, region[pos:end])
            pos = _SEP.match(region, end).end()
        spans.append((start, body_start + pos))
    return found, spans


# ---------------------------------------------------------------------------------------------------------
# Mistral [TOOL_CALLS], DeepSeek and Kimi special tokens
# ---------------------------------------------------------------------------------------------------------

_MISTRAL_HEAD = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.\-]*)\s*(?:\[CALL_ID\]\s*([^\s\[]*)\s*)?\[ARGS\]")


def _extract_mistral(work: str) -> _Extracted:
    found: list[_Found] = []
    spans: _Spans = []
    for start, body_start, body_end, _, _ in _blocks(work, "[TOOL_CALLS]", None):
        region = work[body_start:body_end]
        lead, used = _WS.match(region).end(), len(region)
        if region.startswith(("[", "{"), lead):  # v0.3 / Nemo: a JSON list of call objects
            value, end, problem = _raw_json(region, lead)
            if problem is None:
                where = "The JSON after [TOOL_CALLS]"
                found += _calls_from_value(value, start, "mistral", where, region[:end])
                used = end
            else:
                problem = f"Could not parse the JSON list after [TOOL_CALLS]: {problem}."
                found.append(_error(start, "mistral", problem, region))
        elif head := _MISTRAL_HEAD.match(region, lead):  # Devstral / Small 3.x: name[CALL_ID]id[ARGS]{...}
            name, call_id = head.group(1), head.group(2) or None
            arguments, problem, used = _decode_args_text(region[head.end() :], trailing_ok=True)
            used += head.end()
            snippet = "[TOOL_CALLS]" + region[:used]
            if arguments is None:
                problem = f"Could not parse the [ARGS] of the call to '{name}': {problem}."
                found.append(_error(start, "mistral_args", problem, snippet))
            else:
                found.append(_ok(start, name, arguments, call_id, "mistral", snippet))
        else:
            problem = "After [TOOL_CALLS] write the tool name, then [ARGS] and the JSON arguments."
            found.append(_error(start, "mistral_args", problem, "[TOOL_CALLS]" + region))
        spans.append((start, body_start + used))
    return found, spans


def _split_deepseek(body: str) -> tuple[str, str | None, str] | str:
    name, sep, args_text = body.partition(_DS_SEP)
    if not sep:
        return "The call has no <｜tool▁sep｜> between the tool name and its JSON arguments."
    if name.strip() == "function":  # DeepSeek V3: function<｜tool▁sep｜>NAME\n```json\n{...}\n```
        name, _, args_text = args_text.partition("\n")
    if not _valid_name(name := name.strip()):
        return "Write the tool name right after <｜tool▁call▁begin｜>, then <｜tool▁sep｜> and the JSON."
    return name, None, args_text


def _split_kimi(body: str) -> tuple[str, str | None, str] | str:
    call_id, sep, args_text = body.partition(_KIMI_ARGS)
    call_id = call_id.strip()
    name = call_id.removeprefix("functions.")
    head, _, index = name.rpartition(":")
    name = head if head and index.isdigit() else name
    if not sep or not _valid_name(name):
        return (
            "Write the call id (functions.NAME:INDEX) right after <|tool_call_begin|>, then "
            "<|tool_call_argument_begin|> and the JSON arguments."
        )
    return name, call_id, args_text


def _special_token_extractor(
    fmt: str,
    begin: str,
    end: str,
    section: tuple[str, str],
    split: Callable[[str], tuple[str, str | None, str] | str],
) -> Callable[[str], _Extracted]:
    """DeepSeek and Kimi: each call between two special tokens, all of them inside a section. ``split``
    reads a call's name, id and JSON arguments, or says what is wrong."""

    def extract(work: str) -> _Extracted:
        found: list[_Found] = []
        spans = [(m.start(), m.end()) for tok in section for m in re.finditer(re.escape(tok), work)]
        for start, body_start, body_end, stop, closed in _blocks(work, begin, end, (section[1],)):
            parts = split(work[body_start:body_end])
            if isinstance(parts, str):
                found.append(_error(start, fmt, parts, work[start:stop]))
            else:
                name, call_id, args_text = parts
                arguments, problem, used = _decode_args_text(args_text, trailing_ok=not closed)
                stop = stop if closed else body_end - len(args_text) + used  # cut off at a stop token
                if arguments is None:
                    problem = f"Could not parse the JSON arguments of the call to '{name}': {problem}."
                    found.append(_error(start, fmt, problem, work[start:stop]))
                else:
                    found.append(_ok(start, name, arguments, call_id, fmt, work[start:stop]))
            spans.append((start, stop))
        if not found and (at := work.find(section[0])) >= 0:
            found.append(_error(at, fmt, f"{section[0]} is not followed by any {begin}.", work[at:]))
        return found, spans

    return extract


_extract_kimi = _special_token_extractor("kimi", _KIMI_BEGIN, _KIMI_END, _KIMI_SECTION, _split_kimi)
_extract_deepseek = _special_token_extractor(
    "deepseek", _DS_CALL_BEGIN, _DS_CALL_END, _DS_CALLS, _split_deepseek
)


# ---------------------------------------------------------------------------------------------------------
# gpt-oss harmony
# ---------------------------------------------------------------------------------------------------------

_H_START, _H_MESSAGE, _H_CHANNEL = "<|start|>", "<|message|>", "<|channel|>"
_H_RECIPIENT = re.compile(r"to=([^\s<]+)")
_H_CHANNEL_NAME = re.compile(r"<\|channel\|>\s*([A-Za-z_]+)")


def _extract_harmony(work: str) -> _Extracted:
    found: list[_Found] = []
    spans: _Spans = []
    messages = _Finder(work, _H_MESSAGE)
    # A body ends at its terminator, or where the next header begins when the terminator went missing.
    ends = [(_Finder(work, tok), len(tok)) for tok in ("<|end|>", "<|call|>", "<|return|>")]
    ends += [(_Finder(work, tok), 0) for tok in (_H_START, _H_CHANNEL)]
    pos = 0
    while (msg := messages(pos)) >= 0:
        header = work[pos:msg]
        recipients = list(_H_RECIPIENT.finditer(header))
        recipient = recipients[-1] if recipients else None  # the one nearest <|message|>, not prose
        head = header.rfind(_H_START)
        if head < 0:  # text that starts after the prompt's "<|start|>assistant": keep any prose before it
            head = min(
                (x for x in (header.find(_H_CHANNEL), recipient.start() if recipient else -1) if x >= 0),
                default=0,
            )
        to = recipient.group(1) if recipient and recipient.start() >= head else ""
        channel = _H_CHANNEL_NAME.search(header, head)
        head += pos
        body = msg + len(_H_MESSAGE)
        body_end, size = min(
            ((find(body), size) for find, size in ends if find(body) >= 0), default=(len(work), 0)
        )
        after = body_end + size
        spans.append((head, body))
        if to and to != "assistant":  # to=assistant is a tool's output addressed back to the model
            name = to.removeprefix("functions.")
            arguments, problem, _ = _decode_args_text(work[body:body_end], trailing_ok=False)
            if not _valid_name(name):
                problem = f"The recipient {to!r} is not a tool name; address a call as to=functions.NAME."
                found.append(_error(head, "harmony", problem, work[head:after]))
            elif arguments is None:
                problem = (
                    f"Could not parse the JSON arguments (after <|message|>) of functions.{name}: {problem}."
                )
                found.append(_error(head, "harmony", problem, work[head:after]))
            else:
                found.append(_ok(head, name, arguments, None, "harmony", work[head:after]))
        # Calls, tool outputs and analysis (reasoning) leave the transcript; final/commentary text stays.
        spans.append((body if to or (channel and channel.group(1) == "analysis") else body_end, after))
        pos = max(after, body)
    tail = min((x for x in (work.find(_H_START, pos), work.find(_H_CHANNEL, pos)) if x >= 0), default=-1)
    if tail >= 0:
        spans.append((tail, len(work)))
        if "to=" in work[tail:]:
            problem = "The call was cut off before <|message|> and its JSON arguments."
            found.append(_error(tail, "harmony", problem, work[tail:]))
    return found, spans


# ---------------------------------------------------------------------------------------------------------
# Fallbacks without markers: fenced JSON blocks and bare Llama-style JSON lines
# ---------------------------------------------------------------------------------------------------------

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
            found.append(_error(opening.start(), "fenced_json", problem, inner))
            spans.append(span)
        elif problem is None and value != [] and all(map(_looks_like_call, _as_list(value))):
            where = "The JSON in the ``` block"
            found += _calls_from_value(value, opening.start(), "fenced_json", where, inner)
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
                found.append(_error(start, "llama3_json", problem, work[start : start + _SNIPPET_CHARS]))
                if end < 0:  # nested too deeply: every later attempt would fail the same way
                    return found, spans
                floor = end + 1  # JSON is context-free: objects that start inside this broken one fail too
                break
            floor = end
            if not _looks_like_call(value):
                break  # ordinary JSON the model printed
            found += _calls_from_value(value, start, "llama3_json", "The JSON object", work[start:end])
            sep = _SEMICOLON.match(work, end)
            spans.append((start, sep.end() if sep else end))
            start = sep.end() if sep and work.startswith("{", sep.end()) else -1
    return found, spans


# ---------------------------------------------------------------------------------------------------------
# Reasoning, masking and the entry points
# ---------------------------------------------------------------------------------------------------------


def _split_reasoning(text: str) -> tuple[str, str, bool]:
    """``(visible, reasoning, unclosed)``. A ``</think>`` before any ``<think>`` closes reasoning whose
    opening tag was in the prompt (Qwen3, DeepSeek)."""
    visible: list[str] = []
    reasoning: list[str] = []
    pos, first_open, first_close = 0, text.find("<think>"), text.find("</think>")
    if first_close >= 0 and (first_open < 0 or first_close < first_open):
        reasoning.append(text[:first_close])
        pos = first_close + len("</think>")
    while (start := text.find("<think>", pos)) >= 0:
        visible.append(text[pos:start])
        close = text.find("</think>", start)
        reasoning.append(text[start + len("<think>") : close if close >= 0 else len(text)])
        if close < 0:
            return "".join(visible), "".join(reasoning), True
        pos = close + len("</think>")
    visible.append(text[pos:])
    return "".join(visible).replace("</think>", ""), "".join(reasoning), False


def _strip_stop_tokens(text: str) -> str:
    end = len(text)
    while True:
        while end and text[end - 1].isspace():
            end -= 1
        token = next((tok for tok in _STOP_TOKENS if text.endswith(tok, 0, end)), None)
        if token is None:
            return text[:end]
        end -= len(token)


def _cut(text: str, spans: _Spans, blank: bool) -> str:
    """Remove the spans, or blank them out with spaces so that every position stays put."""
    pieces, pos = [], 0
    for start, end in sorted(spans):
        start = max(start, pos)
        if end > start:
            pieces += [text[pos:start], " " * (end - start) if blank else ""]
            pos = end
    return "".join([*pieces, text[pos:]])


# Each extractor sees the text with earlier matches blanked out, so a call is read once, by the syntax
# that encloses it: harmony bodies and special-token calls first, then tags, then bare tags.
_EXTRACTORS: tuple[tuple[tuple[str, ...], Callable[[str], _Extracted]], ...] = (
    (("<|message|>", "<|channel|>"), _extract_harmony),
    ((_KIMI_BEGIN, _KIMI_SECTION[0]), _extract_kimi),
    ((_DS_CALL_BEGIN, _DS_CALLS[0]), _extract_deepseek),
    (("[TOOL_CALLS]",), _extract_mistral),
    (("<tool_call>",), _extract_hermes),
    ((_FN_OPEN,), _extract_bare_xml),
    (("<tool_code>",), _tool_code_extractor("<tool_code>", "</tool_code>")),
    (("```tool_code",), _tool_code_extractor("```tool_code", "```")),
    (("<|python_tag|>",), _extract_python_tag),
)


def _known_names(known_tools: Iterable[str] | None) -> list[str] | None:
    if known_tools is None:
        return None
    if isinstance(known_tools, str):
        return [known_tools]
    try:
        return list(dict.fromkeys(str(name) for name in known_tools))
    except Exception:  # a broken iterable must not break parsing: accept any name instead
        return None


def _unknown_tool(name: str, known: list[str]) -> str:
    shown = name if len(name) <= 80 else name[:77] + "..."
    # A name can hold a lone surrogate (JSON "\\udd4a"): shown escaped, so the observation stays valid text
    shown = shown.encode("utf-8", "backslashreplace").decode("utf-8")
    message = f"Unknown tool '{shown}'. Available tools: {', '.join(known) or 'none'}."
    if len(name) <= 100:  # difflib is quadratic in the length of the name
        close = difflib.get_close_matches(name, known, n=1)
        close = close or [k for k in known if k == name.rsplit(".", 1)[-1] or k.lower() == name.lower()][:1]
        message += f" Did you mean '{close[0]}'?" if close else ""
    return message


def _bounded_text(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters of valid Unicode (a lone surrogate written as its escape):
    its head and tail, which say what was wrong and how to write the call, around a note of what was cut."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if len(text) <= limit:
        return text
    half = (limit - 40) // 2
    return f"{text[:half]} [... {len(text) - 2 * half} characters cut ...] {text[-half:]}"


def _bounded_errors(errors: list[ParseError]) -> tuple[ParseError, ...]:
    kept = [
        ParseError(
            _bounded_text(error.message, MAX_ERROR_CHARS), _bounded_text(error.snippet, 2 * _SNIPPET_CHARS)
        )
        for error in errors[:MAX_ERRORS]
    ]
    if len(errors) > MAX_ERRORS:
        left_out = len(errors) - MAX_ERRORS
        message = (
            f"{left_out} more tool call(s) in this message could not be read either; they are not listed. "
            "Fix the calls above, and write fewer calls per message."
        )
        kept.append(ParseError(message, ""))
    return tuple(kept)


def _finish(
    found: list[_Found], known: list[str] | None, content: str, extra: list[ParseError]
) -> ParsedCalls:
    calls: list[ToolCall] = []
    errors: list[ParseError] = []
    for item in sorted(found, key=lambda f: f.pos):
        if item.call is not None and known is not None and item.call.name not in known:
            if len(errors) <= MAX_ERRORS:  # past that only the count is reported: spare difflib the work
                errors.append(ParseError(_unknown_tool(item.call.name, known), _snippet(item.snippet)))
            else:
                errors.append(ParseError("", ""))
        elif item.call is not None:
            calls.append(item.call)
        elif item.error is not None:
            errors.append(item.error)
    return ParsedCalls(tuple(calls), _bounded_errors(errors + extra), content)


def _parse_text(text: str, known: list[str] | None) -> ParsedCalls:
    extra: list[ParseError] = []
    if len(text) > _MAX_CHARS:
        # Cutting it would report a call cut in two as "not closed": say what is wrong instead.
        message = (
            f"The message has {len(text)} characters, more than the {_MAX_CHARS} a turn may have, so none of "
            "its tool calls were run. Keep each message shorter: write a large file in several calls."
        )
        return ParsedCalls((), (ParseError(message, _snippet(text[:_SNIPPET_CHARS])),), "")
    visible, reasoning, unclosed = _split_reasoning(text)
    visible = work = _strip_stop_tokens(visible)
    found: list[_Found] = []
    spans: _Spans = []
    fallbacks = (_extract_fenced_json, _extract_llama_json)
    extractors = [
        extract for markers, extract in _EXTRACTORS if any(m in visible for m in markers)
    ] or fallbacks
    for extract in extractors:
        new_found, new_spans = extract(work)
        found += new_found
        spans += new_spans
        work = _cut(work, new_spans, blank=True)
    content = re.sub(r"\n{3,}", "\n\n", _cut(visible, spans, blank=False)).strip()
    if not found and not extra:
        example = _EXAMPLES["hermes"]
        if unclosed:
            message = (
                "The reasoning block was not closed: everything after <think> counts as reasoning, so no "
                f"tool call was found. End your reasoning with </think>, then write the call, e.g. {example}."
            )
            extra.append(ParseError(message, _snippet(reasoning[-_SNIPPET_CHARS:])))
        elif any(marker in reasoning for marker in _MARKERS):
            message = (
                "A tool call was written inside the <think>...</think> reasoning, where calls are ignored. "
                f"Close the reasoning with </think> first, then write the call, e.g. {example}."
            )
            extra.append(ParseError(message, _snippet(reasoning)))
    return _finish(found, known, content, extra)


def _internal_error(exc: BaseException) -> ParsedCalls:
    name, example = type(exc).__name__, _EXAMPLES["hermes"]
    message = f"The tool-call parser could not read this message ({name}). Write each call as {example}."
    return ParsedCalls((), (ParseError(message, ""),), "")


def parse_tool_calls(text: str, known_tools: Iterable[str] | None = None) -> ParsedCalls:
    """Extract every tool call from a model's raw output.

    ``known_tools``: when given, a call to any other name becomes a :class:`ParseError` that lists the
    available tools. Never raises: every problem is returned in ``errors``.
    """
    try:
        if not isinstance(text, str):
            try:
                shown = repr(text)
            except Exception:
                shown = type(text).__name__
            message = f"Expected the model output as text (str), got {type(text).__name__}."
            return ParsedCalls((), (ParseError(message, _snippet(shown[: _SNIPPET_CHARS * 2])),), "")
        return _parse_text(text, _known_names(known_tools))
    except Exception as exc:  # the hard rule: a parser bug must never crash a rollout
        return _internal_error(exc)


def _openai_call(entry: Any, index: int) -> _Found:
    where = f"tool_calls[{index}]"
    try:
        snippet = json.dumps(entry, default=str)[: _SNIPPET_CHARS * 2]
    except Exception:
        snippet = where
    if not isinstance(entry, Mapping):
        return _error(index, "openai", f"{where} must be an object, got {_json_type(entry)}.", snippet)
    function = entry.get("function")
    if not isinstance(function, Mapping):
        if "name" not in entry:
            problem = f'{where} has no "function" object with the tool name and arguments.'
            return _error(index, "openai", problem, snippet)
        function = entry
    name = function.get("name")
    if not isinstance(name, str) or not name.strip():
        problem = f"{where}.function.name must be a non-empty string naming the tool."
        return _error(index, "openai", problem, snippet)
    name = name.strip()
    raw = function["arguments"] if "arguments" in function else function.get("parameters")
    if isinstance(raw, str) and raw.strip():
        value, problem = _load_json(raw)
        if problem is not None:
            problem = f"The arguments of the '{name}' tool call are not valid JSON: {problem}."
            return _error(index, "openai", problem, raw)
        raw = value
    elif raw is not None and not isinstance(raw, str):
        # Objects a Python caller built (not decoded from text): as JSON data, as the text would give, so that
        # nothing later (the chat record, a repr) meets a structure deeper than the interpreter can walk.
        try:
            raw = json.loads(json.dumps(raw, default=str))
        except (RecursionError, MemoryError, ValueError, TypeError):
            problem = f"The arguments of the '{name}' tool call are nested too deeply or are not JSON data."
            return _error(index, "openai", problem, where)
    arguments, problem = _as_arguments(raw)
    if arguments is None:
        return _error(index, "openai", f"In the '{name}' tool call, {problem}.", snippet)
    call_id = entry.get("id") if isinstance(entry.get("id"), str) else None
    return _ok(index, name, arguments, call_id, "openai", snippet)


def calls_from_message(message: Mapping[str, Any], known_tools: Iterable[str] | None = None) -> ParsedCalls:
    """Tool calls of an OpenAI-format assistant message.

    Its structured ``tool_calls`` win when present; otherwise the text ``content`` is parsed with
    :func:`parse_tool_calls`. Never raises.
    """
    try:
        known = _known_names(known_tools)
        if not isinstance(message, Mapping):
            kind = type(message).__name__
            problem = f"Expected an assistant message dict with 'content' and/or 'tool_calls', got {kind}."
            return ParsedCalls((), (ParseError(problem, ""),), "")
        content = message.get("content")
        if isinstance(content, (list, tuple)):  # OpenAI content parts
            parts = [
                p if isinstance(p, str) else p.get("text") for p in content if isinstance(p, (str, Mapping))
            ]
            content = "".join(p for p in parts if isinstance(p, str))
        content = content if isinstance(content, str) else ""
        raw_calls = message.get("tool_calls")
        if not raw_calls:
            return _parse_text(content, known)
        if isinstance(raw_calls, (list, tuple)):
            found = [_openai_call(entry, index) for index, entry in enumerate(raw_calls)]
        else:
            problem = f"tool_calls must be a list of calls, got {_json_type(raw_calls)}."
            found = [_error(0, "openai", problem, repr(raw_calls)[: _SNIPPET_CHARS * 2])]
        visible = _strip_stop_tokens(_split_reasoning(content[:_MAX_CHARS])[0]).strip()
        return _finish(found, known, visible, [])
    except Exception as exc:  # the hard rule: a parser bug must never crash a rollout
        return _internal_error(exc)
