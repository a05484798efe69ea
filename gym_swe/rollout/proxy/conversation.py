"""The one internal chat representation every wire dialect translates to and from, and the error every route
answers with (each dialect in its own shape).

A harness's request becomes a `ChatRequest`: messages as chat templates take them (role; ``content`` one
string; an assistant's ``tool_calls`` with JSON-string arguments and its ``reasoning_content`` where the
dialect carries reasoning apart; ``tool`` results with their ``tool_call_id``) and tools as OpenAI function
schemas. The proxy's reply to a turn is an `Answer`: the assistant message parsed from the sampled text, its
reasoning and visible text apart, why it stopped, and the token counts. The recorder, the bridge, the
budgets, batching and the retry record see only these; a dialect (`gym_swe.rollout.proxy.dialects`) only
translates.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gym_swe.tools.parsing import parse_tool_calls

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


class RequestError(Exception):
    """A request the proxy answers with an HTTP error: ``status``, the error's ``kind``
    (``invalid_request_error``, ``authentication_error``, ``permission_error``, ``not_found_error``,
    ``server_error``), a ``code`` a client may branch on, and the request field at fault (``param``)."""

    def __init__(
        self,
        status: int,
        message: str,
        kind: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.kind, self.code, self.param = status, message, kind, code, param


def unrepresentable(param: str, message: str) -> RequestError:
    """A 400 for a request field the proxy cannot put into a chat template faithfully: it names the field,
    never re-tokenizes around it."""
    return RequestError(400, f"{param}: {message}", code="unsupported_field", param=param)


@dataclass(frozen=True)
class ChatRequest:
    """A harness's request in the internal representation (see the module docstring)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    stream: bool
    reply_options: Mapping[str, Any] = field(default_factory=dict)
    """What the dialect needs from the request to answer in kind (chat completions' ``include_usage``,
    the tools to echo in a Responses API response): read by the dialect that wrote it, by nobody else."""

    @property
    def tool_names(self) -> list[str]:
        return [tool["function"]["name"] for tool in self.tools or []]


@dataclass(frozen=True)
class Answer:
    """One turn's reply, before any dialect shapes it. Kept as the retry record of its request."""

    id: str
    """Unique (hex): each dialect prefixes it as its API does (``chatcmpl-``, ``resp_``, ``msg_``)."""
    created: int
    model: str
    message: dict[str, Any]
    """The assistant message (chat completions answer with it as it is)."""
    finish_reason: str
    """"stop", "tool_calls" or "length" (``max_tokens`` reached)."""
    prompt_tokens: int
    completion_tokens: int
    reasoning: str = ""
    """The sampled text's reasoning (its ``<think>`` block), "" when it has none."""
    text: str = ""
    """What the message says besides its reasoning and tool calls."""

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return list(self.message.get("tool_calls") or [])


def call_id(position: int, index: int) -> str:
    """The id of the ``index``-th tool call of the ``position``-th assistant message of a conversation: nine
    alphanumerics (the only ids some templates accept), the same however the conversation is re-sent, so
    that a dialect without call ids (Google's) finds its calls again."""
    return f"call{position % 1000:03d}{index % 100:02d}"


def assistant_message(text: str, tool_names: Sequence[str], position: int) -> tuple[dict[str, Any], str]:
    """The sampled text as an assistant message, and its finish reason hint: with tools, the calls gym_swe's
    parser finds become ``tool_calls`` (ids from `call_id`, ``position`` being how many assistant messages
    come before it); the content is then the text without reasoning and call markup, and the reasoning, if
    any, goes in ``reasoning_content``. Without tools, or when the text holds no call, the text is the
    content as the model wrote it."""
    if tool_names:
        parsed = parse_tool_calls(text, known_tools=tool_names)
        if parsed.calls:
            calls = [
                {
                    "id": call.id or call_id(position, index),
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": json.dumps(call.arguments, ensure_ascii=False),
                    },
                }
                for index, call in enumerate(parsed.calls)
            ]
            message: dict[str, Any] = {"role": "assistant", "content": parsed.content or None}
            reasoning = split_reasoning(text)[0].strip()
            if reasoning:
                message["reasoning_content"] = reasoning
            message["tool_calls"] = calls
            return message, "tool_calls"
    return {"role": "assistant", "content": text}, "stop"


def split_reasoning(text: str) -> tuple[str, str]:
    """``(reasoning, the rest)`` of a model's text: a ``<think>...</think>`` block at its start, or the text
    up to a ``</think>`` whose opening tag was in the prompt (Qwen3, DeepSeek-R1). ``("", text)`` when there
    is none (a block never closed stays text: the model did not finish its reasoning)."""
    close = text.find(THINK_CLOSE)
    if close < 0:
        return "", text
    opening = text.find(THINK_OPEN)
    if 0 <= opening < close:
        if text[:opening].strip():  # a block after some text is part of the text
            return "", text
        return text[opening + len(THINK_OPEN) : close], text[close + len(THINK_CLOSE) :]
    return text[:close], text[close + len(THINK_CLOSE) :]


def make_answer(
    answer_id: str,
    created: int,
    model: str,
    message: dict[str, Any],
    finish_reason: str,
    sampled_text: str,
    prompt_tokens: int,
    completion_tokens: int,
) -> Answer:
    """The `Answer` of a turn whose sampled text was ``sampled_text`` and whose message is ``message``."""
    reasoning = split_reasoning(sampled_text)[0].strip()
    text = split_reasoning(str(message.get("content") or ""))[1].strip()
    return Answer(
        answer_id, created, model, message, finish_reason, prompt_tokens, completion_tokens, reasoning, text
    )


def visible_content(message: Mapping[str, Any]) -> str:
    """An assistant message's text as the harness was shown it: without its reasoning, trimmed."""
    return split_reasoning(str(message.get("content") or ""))[1].strip()


def arguments_json(arguments: Any, param: str) -> str:
    """Tool-call arguments given as an object (Anthropic's ``input``, Google's ``args``) as the JSON string of
    the internal form; a 400 naming ``param`` when they are not an object."""
    if not isinstance(arguments, Mapping):
        raise unrepresentable(param, f"must be an object, got {type(arguments).__name__}")
    return json.dumps(arguments, ensure_ascii=False)


def arguments_object(call: Mapping[str, Any]) -> dict[str, Any]:
    """An internal tool call's arguments as an object (what Anthropic and Google answer with)."""
    arguments = call.get("function", {}).get("arguments")
    try:
        value = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError:
        value = None
    return dict(value) if isinstance(value, Mapping) else {}
