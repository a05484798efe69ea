"""OpenAI chat completions (``POST /v1/chat/completions``, ``GET /v1/models``): the internal representation
is this dialect's own message form, so requests pass nearly as they are.

Only the fields the proxy acts on are read; sampling fields (temperature, top_p, max_tokens, seed, stop,
tool_choice...) are accepted and ignored, because the trainer's sampling parameters override the harness's.
A request the proxy cannot serve as asked (``n`` > 1, messages that are not a list of role-bearing objects,
content parts other than text) is a 400 that says what is allowed, in OpenAI's error shape, so an SDK shows
it as it would OpenAI's. The answer's reasoning, when its text had a ``<think>`` block and tool calls, is in
``reasoning_content`` (where vLLM and DeepSeek put it); a plain text answer is the text as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gym_swe.rollout.proxy.conversation import Answer, ChatRequest, RequestError
from gym_swe.rollout.proxy.dialects.base import (
    Dialect,
    Route,
    bearer,
    openai_error,
    require_object,
    sse,
    stream_flag,
    text_of,
)

ROLES = ("system", "developer", "user", "assistant", "tool")


def parse_request(body: Any, route: Route | None = None) -> ChatRequest:
    """Check a decoded request body; a `RequestError` (400) names what is wrong and what is allowed."""
    body = require_object(body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError(400, "'messages' must be a non-empty list of message objects", param="messages")
    plain = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") not in ROLES:
            raise RequestError(
                400,
                f"messages[{index}] must be an object with a 'role' among {', '.join(ROLES)}",
                param=f"messages[{index}].role",
            )
        content = message.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise RequestError(
                400,
                f"messages[{index}].content must be a string, a list of parts or null",
                param=f"messages[{index}].content",
            )
        plain.append(_plain_content(dict(message), index))
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list) or not all(_is_function_tool(tool) for tool in tools):
            raise RequestError(
                400,
                "'tools' must be a list of {'type': 'function', 'function': {'name': ...}} objects",
                param="tools",
            )
        tools = [dict(tool) for tool in tools] or None
    n = body.get("n", 1)
    if n not in (1, None):
        raise RequestError(
            400, f"'n' must be 1 (one sample per request, as the trainer records it), got {n!r}", param="n"
        )
    options = body.get("stream_options") or {}
    include_usage = bool(isinstance(options, Mapping) and options.get("include_usage"))
    return ChatRequest(plain, tools, stream_flag(body), {"include_usage": include_usage})


def _is_function_tool(tool: Any) -> bool:
    function = tool.get("function") if isinstance(tool, Mapping) else None
    return isinstance(function, Mapping) and isinstance(function.get("name"), str)


def _plain_content(message: dict[str, Any], index: int) -> dict[str, Any]:
    """Content given as a list of text parts becomes one string (what chat templates render)."""
    if isinstance(message.get("content"), list):
        message["content"] = text_of(message["content"], f"messages[{index}].content", ("text",), "")
    return message


def completion(answer: Answer, request: ChatRequest | None = None) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{answer.id}",
        "object": "chat.completion",
        "created": answer.created,
        "model": answer.model,
        "choices": [
            {"index": 0, "message": answer.message, "finish_reason": answer.finish_reason, "logprobs": None}
        ],
        "usage": _usage(answer),
    }


def _usage(answer: Answer) -> dict[str, int]:
    return {
        "prompt_tokens": answer.prompt_tokens,
        "completion_tokens": answer.completion_tokens,
        "total_tokens": answer.prompt_tokens + answer.completion_tokens,
    }


def stream_chunks(answer: Answer, request: ChatRequest) -> list[bytes]:
    """The answer as server-sent events: the role, reasoning and content, the tool calls (each whole, in one
    delta), the finish reason, the usage when asked for (``stream_options.include_usage``), then
    ``[DONE]``."""
    message = answer.message
    head = {"id": f"chatcmpl-{answer.id}", "created": answer.created, "model": answer.model}

    def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return sse({**head, "object": "chat.completion.chunk", "choices": [choice]})

    first: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("reasoning_content"):
        first["reasoning_content"] = message["reasoning_content"]
    events = [event(first)]
    if message.get("tool_calls"):
        calls = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
        events.append(event({"tool_calls": calls}))
    events.append(event({}, answer.finish_reason))
    if request.reply_options.get("include_usage"):
        events.append(
            sse({**head, "object": "chat.completion.chunk", "choices": [], "usage": _usage(answer)})
        )
    events.append(b"data: [DONE]\n\n")
    return events


def models_list(model: str) -> dict[str, Any]:
    return {"object": "list", "data": [{"id": model, "object": "model", "created": 0, "owned_by": "gym_swe"}]}


DIALECT = Dialect(
    name="chat_completions",
    base_path="/v1",
    routes=(
        Route("POST", "/v1/chat/completions"),
        Route("GET", "/v1/models", kind="models"),
    ),
    secret=lambda headers, query: bearer(headers),
    auth_hint="'Authorization: Bearer <its secret>'",
    parse=parse_request,
    reply=completion,
    events=stream_chunks,
    error_body=openai_error,
    replay_ignores=frozenset({"stream", "stream_options"}),
    models_reply=models_list,
)
