"""Calls between special tokens: Mistral ``[TOOL_CALLS]``, DeepSeek (V3 and V3.1) and Kimi K2.

- Mistral: ``[TOOL_CALLS] [{"name": "bash", "arguments": {...}, "id": "..."}]`` (v0.3, Nemo) and
  ``[TOOL_CALLS]bash[CALL_ID]a1b2c3d4e[ARGS]{"command": "ls"}`` (Devstral, Mistral Small 3.x).
- DeepSeek and Kimi: each call between a begin and an end token, its name (Kimi: its id,
  ``functions.NAME:INDEX``) before a separator token and its JSON arguments after it, all the calls inside
  a section. One extractor serves both; ``split`` reads a call's name, id and arguments.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from gym_swe.tools.parsing.json_calls import _calls_from_value, _decode_args_text, _raw_json
from gym_swe.tools.parsing.scanning import (
    _WS,
    Format,
    _blocks,
    _error,
    _Extracted,
    _Found,
    _ok,
    _skip,
    _Spans,
    _valid_name,
)

_DS_CALLS = ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>")
_DS_CALL_BEGIN, _DS_CALL_END, _DS_SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
_KIMI_SECTION = ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>")
_KIMI_BEGIN, _KIMI_END, _KIMI_ARGS = (
    "<|tool_call_begin|>",
    "<|tool_call_end|>",
    "<|tool_call_argument_begin|>",
)
# The Devstral form gets its own hint: a model that wrote name[ARGS] is shown that form, not the JSON list.
_MISTRAL_ARGS_EXAMPLE = '[TOOL_CALLS]bash[ARGS]{"command": "ls"}'

_MISTRAL_HEAD = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.\-]*)\s*(?:\[CALL_ID\]\s*([^\s\[]*)\s*)?\[ARGS\]")


def _extract_mistral(work: str) -> _Extracted:
    found: list[_Found] = []
    spans: _Spans = []
    for start, body_start, body_end, _, _ in _blocks(work, "[TOOL_CALLS]", None):
        region = work[body_start:body_end]
        lead, used = _skip(_WS, region), len(region)
        if region.startswith(("[", "{"), lead):  # v0.3 / Nemo: a JSON list of call objects
            value, end, problem = _raw_json(region, lead)
            if problem is None:
                where = "The JSON after [TOOL_CALLS]"
                found += _calls_from_value(value, start, MISTRAL, where, region[:end])
                used = end
            else:
                problem = f"Could not parse the JSON list after [TOOL_CALLS]: {problem}."
                found.append(_error(start, MISTRAL.example, problem, region))
        elif head := _MISTRAL_HEAD.match(region, lead):  # Devstral / Small 3.x: name[CALL_ID]id[ARGS]{...}
            name, call_id = head.group(1), head.group(2) or None
            arguments, problem, used = _decode_args_text(region[head.end() :], trailing_ok=True)
            used += head.end()
            snippet = "[TOOL_CALLS]" + region[:used]
            if arguments is None:
                problem = f"Could not parse the [ARGS] of the call to '{name}': {problem}."
                found.append(_error(start, _MISTRAL_ARGS_EXAMPLE, problem, snippet))
            else:
                found.append(_ok(start, name, arguments, call_id, MISTRAL.name, snippet))
        else:
            problem = "After [TOOL_CALLS] write the tool name, then [ARGS] and the JSON arguments."
            found.append(_error(start, _MISTRAL_ARGS_EXAMPLE, problem, "[TOOL_CALLS]" + region))
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


def _special_token_format(
    fmt: str,
    example: str,
    begin: str,
    end: str,
    section: tuple[str, str],
    split: Callable[[str], tuple[str, str | None, str] | str],
) -> Format:
    """DeepSeek and Kimi: each call between two special tokens, all of them inside a section. ``split``
    reads a call's name, id and JSON arguments, or says what is wrong. A call's opening token or the
    section's turns the format on."""

    def extract(work: str) -> _Extracted:
        found: list[_Found] = []
        spans = [(m.start(), m.end()) for tok in section for m in re.finditer(re.escape(tok), work)]
        for start, body_start, body_end, stop, closed in _blocks(work, begin, end, (section[1],)):
            parts = split(work[body_start:body_end])
            if isinstance(parts, str):
                found.append(_error(start, example, parts, work[start:stop]))
            else:
                name, call_id, args_text = parts
                arguments, problem, used = _decode_args_text(args_text, trailing_ok=not closed)
                stop = stop if closed else body_end - len(args_text) + used  # cut off at a stop token
                if arguments is None:
                    problem = f"Could not parse the JSON arguments of the call to '{name}': {problem}."
                    found.append(_error(start, example, problem, work[start:stop]))
                else:
                    found.append(_ok(start, name, arguments, call_id, fmt, work[start:stop]))
            spans.append((start, stop))
        if not found and (at := work.find(section[0])) >= 0:
            found.append(_error(at, example, f"{section[0]} is not followed by any {begin}.", work[at:]))
        return found, spans

    return Format(fmt, (begin, section[0]), example, extract)


MISTRAL = Format(
    name="mistral",
    markers=("[TOOL_CALLS]",),
    example='[TOOL_CALLS][{"name": "bash", "arguments": {"command": "ls"}}]',
    extract=_extract_mistral,
)
DEEPSEEK = _special_token_format(
    "deepseek",
    '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>bash<｜tool▁sep｜>{"command": "ls"}'
    "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    _DS_CALL_BEGIN,
    _DS_CALL_END,
    _DS_CALLS,
    _split_deepseek,
)
KIMI = _special_token_format(
    "kimi",
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.bash:0<|tool_call_argument_begin|>"
    '{"command": "ls"}<|tool_call_end|><|tool_calls_section_end|>',
    _KIMI_BEGIN,
    _KIMI_END,
    _KIMI_SECTION,
    _split_kimi,
)
