"""What every format's extractor is built from: findings, the declared :class:`Format`, and linear-time scans.

An extractor reads one syntax out of a message and returns :data:`_Extracted`: the calls and errors it
found, each at its position (so that calls written in different syntaxes keep their order), and the spans
it used (blanked out before the next format looks, so that a call is read once). The entry points in
``__init__`` turn findings into the public :class:`~gym_swe.tools.parsing.ToolCall` and
:class:`~gym_swe.tools.parsing.ParseError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

_SNIPPET_CHARS = 200
_MAX_NAME = 256

_WS = re.compile(r"\s*")
_SEP = re.compile(r"[\s;,]*")
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:\-]*")


def _skip(pattern: re.Pattern[str], text: str, pos: int = 0) -> int:
    """Where ``pattern`` (one that matches the empty string too, like ``_WS``) stops matching from ``pos``."""
    found = pattern.match(text, pos)
    return found.end() if found is not None else pos


@dataclass
class _Found:
    """A call or an error, with its position so that calls written in different syntaxes keep their order.

    A call has ``error`` None and its ``name``, ``arguments``, ``call_id`` and ``format``; an error has the
    message for the model in ``error``."""

    pos: int
    snippet: str
    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    call_id: str | None = None
    format: str = ""
    error: str | None = None


_Spans = list[tuple[int, int]]
_Extracted = tuple[list[_Found], _Spans]  # what each format's extractor returns: items, spans to blank out


@dataclass(frozen=True)
class Format:
    """One tool-call syntax, declared once: the entry points try the formats in the order of ``FORMATS``.

    ``markers``: substrings whose presence in a message turns the format on; a format without markers is a
    fallback, tried only when no format's markers appear. ``example``: a correct call, shown to the model
    in every error about this syntax. ``extract``: reads the calls out of a message."""

    name: str
    markers: tuple[str, ...]
    example: str
    extract: Callable[[str], _Extracted]


def _snippet(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _SNIPPET_CHARS else text[: _SNIPPET_CHARS - 3] + "..."


def _error(pos: int, example: str, problem: str, snippet: str) -> _Found:
    """An error whose message says what was wrong and shows ``example``, a correct call in that syntax."""
    problem = problem.strip()
    if not problem.endswith((".", "?", "!")):
        problem += "."
    message = f"{problem} Write each call as {example}{'' if example.endswith('`') else '.'}"
    return _Found(pos, snippet, error=message)


def _ok(
    pos: int, name: str, arguments: dict[str, Any], call_id: str | None, fmt: str, snippet: str
) -> _Found:
    return _Found(pos, snippet, name, arguments, call_id, fmt)


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
