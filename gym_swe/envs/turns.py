"""What a turn of a `gym_swe.envs.base.ToolEnv` episode is, and how it is told to the agent and written down:
the action read into tool calls (`parse_action`), the `Turn` it makes, what the agent hears back (the
observation, with notes on the calls that could not be run as written) and the chat messages it adds in
OpenAI format (`TurnWriter`), and how it is rendered (`render_turn`). The episode loop (`ToolEnv.step`) runs
the calls and decides when the episode ends; this module says what a turn reads like."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gym_swe.errors import SandboxExhaustedError
from gym_swe.tools import ParsedCalls, ToolCall, ToolResult, bound_text
from gym_swe.tools.parsing import ParseError, calls_from_message, parse_tool_calls

MAX_FEEDBACK_NOTE_CHARS = 2_000
"""Longest note about one call that could not be run: it may quote the agent's text, which must never come
back to it unbounded (a megabyte of broken calls would otherwise become tens of megabytes of feedback)."""


@dataclass
class Turn:
    """One step of an episode, as custom reward functions and logs see it."""

    index: int
    action: str | dict[str, Any]
    calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    parse_errors: list[str] = field(default_factory=list)
    observation: str = ""
    seconds: float = 0.0
    step_limit: str | None = None
    """The step bound that cut this turn short (`gym_swe.envs.step_bound.STEP_LIMITS`), or None."""
    stopped_call: bool = False
    """Whether that bound stopped the last call that ran (its command killed), not only later calls."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "action": self.action,
            "calls": [
                {"name": c.name, "arguments": c.arguments, "id": c.id, "format": c.format} for c in self.calls
            ],
            "results": [{"ok": r.ok, "done": r.done, "output": r.output, **r.metadata} for r in self.results],
            "parse_errors": self.parse_errors,
            "observation": self.observation,
            "seconds": self.seconds,
            "step_limit": self.step_limit,
        }


def parse_action(action: Any, known: list[str]) -> ParsedCalls:
    """The tool calls of the model's turn ``action`` (its text, or an assistant message dict), for the
    tools named ``known``; an action of another type is one parse error."""
    if isinstance(action, str):
        return parse_tool_calls(action, known_tools=known)
    if isinstance(action, bytes):
        return parse_tool_calls(action.decode("utf-8", errors="replace"), known_tools=known)
    if isinstance(action, Mapping):
        return calls_from_message(action, known_tools=known)
    message = (
        f"The action must be the model's text (str) or an assistant message (dict), got "
        f"{type(action).__name__}."
    )
    return ParsedCalls(calls=(), errors=(ParseError(message, safe_repr(action)[:200]),))


@dataclass(frozen=True)
class TurnWriter:
    """How a turn is told to the agent and written into the chat, within the env's bounds (a `ToolEnv` makes
    one from its own for each turn)."""

    max_observation_chars: int
    max_tool_calls: int
    max_step_seconds: float

    def feedback(self, turn: Turn) -> list[str]:
        """What the model must hear about calls that could not be run as written: each note and all of them
        together bounded like any observation, since they may quote what the agent wrote."""
        notes: list[str] = []
        room = self.max_observation_chars
        for index, message in enumerate(turn.parse_errors):
            note = bound_text(f"Tool call error: {_valid_text(message)}", MAX_FEEDBACK_NOTE_CHARS)
            if len(note) > room:
                notes.append(f"({len(turn.parse_errors) - index} more tool call error(s) not shown.)")
                break
            notes.append(note)
            room -= len(note) + 2
        if turn.step_limit is not None:
            notes.append(self.step_limit_note(turn))
        if not turn.calls and not turn.parse_errors:
            notes.append(
                "No tool call found in your message. Act with a tool call, for example "
                '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>, '
                "and call submit when you are done."
            )
        return notes

    def step_limit_note(self, turn: Turn) -> str:
        """What the model hears about a step its bound cut short."""
        left = len(turn.calls) - len(turn.results)
        if turn.step_limit == "max_tool_calls":
            return (
                f"({left} tool call(s) past the limit of {self.max_tool_calls} per turn were not run. Make "
                "fewer calls in one turn.)"
            )
        if turn.stopped_call:
            what = f"call {len(turn.results)} was stopped"
            what += f" and the {left} call(s) after it were not run" if left else ""
        else:
            what = f"the last {left} call(s) were not run"
        if turn.step_limit == "interrupted":
            return f"(This turn was interrupted: {what}.)"
        return (
            f"(This turn ran out of time: its tool calls may take {self.max_step_seconds:g} s together, so "
            f"{what}. Run long commands in a turn of their own, or in the background.)"
        )

    def observation(
        self,
        turn: Turn,
        skipped_after_submit: int,
        error: str | None,
        exhausted: SandboxExhaustedError | None = None,
    ) -> str:
        many = len(turn.results) > 1
        parts = [
            f"[{index}: {call.name}]\n{result.output}" if many else result.output
            for index, (call, result) in enumerate(zip(turn.calls, turn.results), start=1)
        ]
        parts += self.feedback(turn)
        if skipped_after_submit:
            parts.append(f"({skipped_after_submit} call(s) after submit were not run.)")
        if error is not None:
            parts.append("The sandbox stopped working; the episode is over.")
        if exhausted is not None:
            parts.append(
                f"The sandbox ran out of {exhausted.resource}: your commands used all it has, and it had to "
                "be stopped. The episode is over, and it counts as failed."
            )
        return bound_text("\n\n".join(parts), self.max_observation_chars)

    def messages(self, action: Any, parsed: ParsedCalls, turn: Turn) -> list[dict[str, Any]]:
        """The turn's messages for the chat, in OpenAI format: the assistant message with its calls, one tool
        message per call, and a user message for what could not be parsed."""
        if isinstance(action, Mapping):
            # calls found in its text stand in tool_calls: the text keeps what is left, not each call twice
            from_text = bool(parsed.calls) and not action.get("tool_calls")
            said = parsed.content if from_text else action.get("content")
        else:
            text = action if isinstance(action, str) else safe_repr(action)
            said = parsed.content if parsed.calls else text
        assistant: dict[str, Any] = {"role": "assistant", "content": _valid_text(said)}
        new = [assistant]
        if turn.calls:
            assistant["tool_calls"] = []
            for index, call in enumerate(turn.calls):
                # Nine alphanumerics: the only ids some templates accept (Mistral's).
                call_id = _valid_text(call.id) or f"call{turn.index % 1000:03d}{index % 100:02d}"
                arguments = _valid_text(json.dumps(call.arguments, ensure_ascii=False))
                assistant["tool_calls"].append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": _valid_text(call.name), "arguments": arguments},
                    }
                )
                ran = index < len(turn.results)
                content = turn.results[index].output if ran else self.not_run(turn)
                content = bound_text(content, self.max_observation_chars)
                name = _valid_text(call.name)
                new.append({"role": "tool", "tool_call_id": call_id, "name": name, "content": content})
        feedback = self.feedback(turn)
        if feedback:
            content = bound_text("\n\n".join(feedback), self.max_observation_chars)
            new.append({"role": "user", "content": content})
        return new

    def not_run(self, turn: Turn) -> str:
        """A call's tool message when the call was not run."""
        if turn.step_limit == "max_tool_calls":
            return f"(not run: past the limit of {self.max_tool_calls} tool calls per turn)"
        if turn.step_limit is not None:
            return "(not run: this turn was cut short before this call)"
        return "(not run: the episode ended before this call)"


def render_turn(turn: Turn) -> str:
    """A turn as ``render`` shows it: the action, then the observation."""
    action = turn.action if isinstance(turn.action, str) else json.dumps(turn.action, indent=1)
    return f"--- turn {turn.index} ---\n[assistant]\n{action}\n[observation]\n{turn.observation}"


def safe_repr(value: Any) -> str:
    """repr() for logs, even of an object whose own repr raises."""
    try:
        return repr(value)[:10_000]
    except Exception:
        return f"<{type(value).__name__} object>"


def _valid_text(value: Any) -> Any:
    """``value`` as text a chat can be saved and rendered with: a lone surrogate (which an action dict or a
    JSON "\\ud800" can hold) is written as its escape; anything that is not a str is returned as it is."""
    if not isinstance(value, str):
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value
