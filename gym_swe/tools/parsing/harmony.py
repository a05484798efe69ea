"""gpt-oss harmony messages, a call being
``<|channel|>commentary to=functions.bash <|constrain|>json<|message|>{"command": "ls"}<|call|>``.

A message's header names its recipient: a header addressed ``to=functions.NAME`` makes its body a call.
Headers and call bodies leave the transcript, and so do ``analysis`` messages (reasoning); the text of
``final`` and ``commentary`` messages stays.
"""

from __future__ import annotations

import re

from gym_swe.tools.parsing.json_calls import _decode_args_text
from gym_swe.tools.parsing.scanning import (
    Format,
    _error,
    _Extracted,
    _Finder,
    _Found,
    _ok,
    _Spans,
    _valid_name,
)

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
                found.append(_error(head, HARMONY.example, problem, work[head:after]))
            elif arguments is None:
                problem = (
                    f"Could not parse the JSON arguments (after <|message|>) of functions.{name}: {problem}."
                )
                found.append(_error(head, HARMONY.example, problem, work[head:after]))
            else:
                found.append(_ok(head, name, arguments, None, HARMONY.name, work[head:after]))
        # Calls, tool outputs and analysis (reasoning) leave the transcript; final/commentary text stays.
        spans.append((body if to or (channel and channel.group(1) == "analysis") else body_end, after))
        pos = max(after, body)
    tail = min((x for x in (work.find(_H_START, pos), work.find(_H_CHANNEL, pos)) if x >= 0), default=-1)
    if tail >= 0:
        spans.append((tail, len(work)))
        if "to=" in work[tail:]:
            problem = "The call was cut off before <|message|> and its JSON arguments."
            found.append(_error(tail, HARMONY.example, problem, work[tail:]))
    return found, spans


HARMONY = Format(
    name="harmony",
    markers=("<|message|>", "<|channel|>"),
    example='<|channel|>commentary to=functions.bash <|constrain|>json<|message|>{"command": "ls"}<|call|>',
    extract=_extract_harmony,
)
