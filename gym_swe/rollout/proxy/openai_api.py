"""The OpenAI chat-completions wire format: what a harness may send, and the responses it gets back.

Only the fields the proxy acts on are read; sampling fields (temperature, top_p, max_tokens, seed...) are
accepted and ignored, because the trainer's sampling parameters override the harness's. A request the proxy
cannot serve as asked (``n`` > 1, messages that are not a list of role-bearing objects) is a 400 with a
message that says what is allowed, in OpenAI's error shape, so an SDK shows it as it would OpenAI's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gym_swe.tools.parsing import parse_tool_calls

ROLES = ("system", "developer", "user", "assistant", "tool")


class RequestError(Exception):
    """A request the proxy answers with an HTTP error: ``status``, OpenAI ``type`` and ``code``."""

    def __init__(
        self, status: int, message: str, kind: str = "invalid_request_error", code: str | None = None
    ):
        super().__init__(message)
        self.status, self.message, self.kind, self.code = status, message, kind, code

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.kind, self.code)


def error_body(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


@dataclass(frozen=True)
class ChatRequest:
    """The parts of a chat-completions request the proxy uses."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    stream: bool
    include_usage: bool

    @property
    def tool_names(self) -> list[str]:
        return [tool["function"]["name"] for tool in self.tools or []]


def parse_request(body: Any) -> ChatRequest:
    """Check a decoded request body; a `RequestError` (400) names what is wrong and what is allowed."""
    if not isinstance(body, Mapping):
        raise RequestError(400, f"the request body must be a JSON object, got {type(body).__name__}")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError(400, "'messages' must be a non-empty list of message objects")
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") not in ROLES:
            raise RequestError(
                400, f"messages[{index}] must be an object with a 'role' among {', '.join(ROLES)}"
            )
        content = message.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise RequestError(400, f"messages[{index}].content must be a string, a list of parts or null")
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list) or not all(_is_function_tool(tool) for tool in tools):
            raise RequestError(
                400, "'tools' must be a list of {'type': 'function', 'function': {'name': ...}} objects"
            )
        tools = [dict(tool) for tool in tools] or None
    n = body.get("n", 1)
    if n not in (1, None):
        raise RequestError(
            400, f"'n' must be 1 (one sample per request, as the trainer records it), got {n!r}"
        )
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise RequestError(400, f"'stream' must be true or false, got {stream!r}")
    options = body.get("stream_options") or {}
    include_usage = bool(isinstance(options, Mapping) and options.get("include_usage"))
    return ChatRequest([_plain_content(dict(m)) for m in messages], tools, stream, include_usage)


def _is_function_tool(tool: Any) -> bool:
    function = tool.get("function") if isinstance(tool, Mapping) else None
    return isinstance(function, Mapping) and isinstance(function.get("name"), str)


def _plain_content(message: dict[str, Any]) -> dict[str, Any]:
    """Content given as a list of text parts becomes one string (what chat templates render)."""
    content = message.get("content")
    if isinstance(content, list):
        message["content"] = "".join(
            part.get("text", "")
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "text"
        )
    return message


def assistant_message(text: str, tool_names: Sequence[str], turn: int) -> tuple[dict[str, Any], str]:
    """The sampled text as an OpenAI assistant message, and its finish reason hint: with tools, the calls
    gym_swe's parser finds become ``tool_calls`` (ids of nine alphanumerics, the only ones some templates
    accept); without tools, or when the text holds no call, the text is the content."""
    if tool_names:
        parsed = parse_tool_calls(text, known_tools=tool_names)
        if parsed.calls:
            calls = [
                {
                    "id": call.id or f"call{turn % 1000:03d}{index % 100:02d}",
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": json.dumps(call.arguments, ensure_ascii=False),
                    },
                }
                for index, call in enumerate(parsed.calls)
            ]
            return {"role": "assistant", "content": parsed.content or None, "tool_calls": calls}, "tool_calls"
    return {"role": "assistant", "content": text}, "stop"


def completion(
    completion_id: str, model: str, message: dict[str, Any], finish_reason: str, usage: dict[str, int]
) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
        "usage": usage,
    }


def stream_chunks(response: Mapping[str, Any], include_usage: bool) -> list[bytes]:
    """A completed response as server-sent events: the role and content, the tool calls (each whole, in
    one delta), the finish reason, the usage when asked for, then ``[DONE]``."""
    choice = response["choices"][0]
    message = choice["message"]
    head = {key: response[key] for key in ("id", "created", "model")}

    def event(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        chunk = {**head, "object": "chat.completion.chunk", **extra}
        chunk["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]
        return b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n"

    events = [event({"role": "assistant", "content": message.get("content") or ""})]
    if message.get("tool_calls"):
        calls = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
        events.append(event({"tool_calls": calls}))
    events.append(event({}, choice["finish_reason"]))
    if include_usage:
        usage = {**head, "object": "chat.completion.chunk", "choices": [], "usage": response["usage"]}
        events.append(b"data: " + json.dumps(usage).encode() + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    return events


def models_list(model: str) -> dict[str, Any]:
    return {"object": "list", "data": [{"id": model, "object": "model", "created": 0, "owned_by": "gym_swe"}]}
