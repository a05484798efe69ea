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

Each format is declared once, in its family's module, as a :class:`~gym_swe.tools.parsing.scanning.Format`
(name, markers, example, extractor); ``FORMATS`` below lists them in the order they are tried. Adding a
format is a module (or an entry in one) and a line in that list. This package holds the entry points and
the result types; ``scanning`` and ``json_calls`` the helpers the formats share.
"""  # noqa: RUF002 (the DeepSeek tokens really are written with full-width bars)

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gym_swe.tools.parsing.bare_json import FENCED_JSON, LLAMA3_JSON
from gym_swe.tools.parsing.harmony import HARMONY
from gym_swe.tools.parsing.hermes import HERMES, QWEN3_CODER
from gym_swe.tools.parsing.json_calls import _as_arguments, _json_type, _load_json
from gym_swe.tools.parsing.python_calls import PYTHON_TAG, TOOL_CODE, TOOL_CODE_FENCED
from gym_swe.tools.parsing.scanning import _SNIPPET_CHARS, Format, _error, _Found, _ok, _snippet, _Spans
from gym_swe.tools.parsing.special_tokens import DEEPSEEK, KIMI, MISTRAL

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
MAX_ERRORS = 20
"""Most errors reported for one message: past that, one more says how many were left out (a megabyte of
broken calls would otherwise be tens of thousands of messages, each several times longer than its call)."""
MAX_ERROR_CHARS = 1_000
"""Longest error message: a message may quote what the model wrote (a tool name, say)."""

# The order is the precedence. Each extractor sees the text with earlier matches blanked out, so a call is
# read once, by the syntax that encloses it: harmony bodies and special-token calls first (their JSON may
# hold anything), then tags, then bare tags (a <function=...> inside <tool_call> belongs to hermes). A format
# runs only when one of its markers appears in the message; the fallbacks, which have no markers, run only
# when no marker appears at all: fenced JSON before bare JSON lines, which would read the fenced block too.
FORMATS: tuple[Format, ...] = (
    HARMONY,
    KIMI,
    DEEPSEEK,
    MISTRAL,
    HERMES,
    QWEN3_CODER,
    TOOL_CODE,
    TOOL_CODE_FENCED,
    PYTHON_TAG,
    FENCED_JSON,
    LLAMA3_JSON,
)

# Any of these means the model used a known call syntax: the fenced and bare JSON fallbacks stay off. They
# are also looked for in the reasoning, to tell the model that a call written there was ignored.
_MARKERS = tuple(marker for fmt in FORMATS for marker in fmt.markers)
# End-of-turn tokens that servers leave at the end of the text when they keep special tokens.
_STOP_TOKENS = (
    "<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "</s>", "<end_of_turn>",
    "<|end|>", "<|return|>", "<|call|>", "<｜end▁of▁sentence｜>",
)  # fmt: skip
_OPENAI_EXAMPLE = (
    '{"id": "call_1", "type": "function", "function": {"name": "bash", '
    '"arguments": "{\\"command\\": \\"ls\\"}"}}'
)

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
        if item.error is not None:
            errors.append(ParseError(item.error, _snippet(item.snippet)))
        elif known is not None and item.name not in known:
            if len(errors) <= MAX_ERRORS:  # past that only the count is reported: spare difflib the work
                errors.append(ParseError(_unknown_tool(item.name, known), _snippet(item.snippet)))
            else:
                errors.append(ParseError("", ""))
        else:
            calls.append(ToolCall(item.name, item.arguments, item.call_id, item.format))
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
    marked = [fmt for fmt in FORMATS if any(marker in visible for marker in fmt.markers)]
    for fmt in marked or [fmt for fmt in FORMATS if not fmt.markers]:
        new_found, new_spans = fmt.extract(work)
        found += new_found
        spans += new_spans
        work = _cut(work, new_spans, blank=True)
    content = re.sub(r"\n{3,}", "\n\n", _cut(visible, spans, blank=False)).strip()
    if not found and not extra:
        example = HERMES.example
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
    name, example = type(exc).__name__, HERMES.example
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
    problem: str | None  # what is wrong with the call, told to the model
    try:
        snippet = json.dumps(entry, default=str)[: _SNIPPET_CHARS * 2]
    except Exception:
        snippet = where
    if not isinstance(entry, Mapping):
        return _error(index, _OPENAI_EXAMPLE, f"{where} must be an object, got {_json_type(entry)}.", snippet)
    function = entry.get("function")
    if not isinstance(function, Mapping):
        if "name" not in entry:
            problem = f'{where} has no "function" object with the tool name and arguments.'
            return _error(index, _OPENAI_EXAMPLE, problem, snippet)
        function = entry
    name = function.get("name")
    if not isinstance(name, str) or not name.strip():
        problem = f"{where}.function.name must be a non-empty string naming the tool."
        return _error(index, _OPENAI_EXAMPLE, problem, snippet)
    name = name.strip()
    raw = function["arguments"] if "arguments" in function else function.get("parameters")
    if isinstance(raw, str) and raw.strip():
        value, problem = _load_json(raw)
        if problem is not None:
            problem = f"The arguments of the '{name}' tool call are not valid JSON: {problem}."
            return _error(index, _OPENAI_EXAMPLE, problem, raw)
        raw = value
    elif raw is not None and not isinstance(raw, str):
        # Objects a Python caller built (not decoded from text): as JSON data, as the text would give, so that
        # nothing later (the chat record, a repr) meets a structure deeper than the interpreter can walk.
        try:
            raw = json.loads(json.dumps(raw, default=str))
        except (RecursionError, MemoryError, ValueError, TypeError):
            problem = f"The arguments of the '{name}' tool call are nested too deeply or are not JSON data."
            return _error(index, _OPENAI_EXAMPLE, problem, where)
    arguments, problem = _as_arguments(raw)
    if arguments is None:
        return _error(index, _OPENAI_EXAMPLE, f"In the '{name}' tool call, {problem}.", snippet)
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
            found = [_error(0, _OPENAI_EXAMPLE, problem, repr(raw_calls)[: _SNIPPET_CHARS * 2])]
        visible = _strip_stop_tokens(_split_reasoning(content[:_MAX_CHARS])[0]).strip()
        return _finish(found, known, visible, [])
    except Exception as exc:  # the hard rule: a parser bug must never crash a rollout
        return _internal_error(exc)
