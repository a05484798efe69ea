"""Anthropic Messages (``POST /v1/messages``, ``POST /v1/messages/count_tokens``), as Claude Code speaks it.
The secret comes as ``x-api-key`` (``ANTHROPIC_API_KEY``) or as a bearer token (``ANTHROPIC_AUTH_TOKEN``).

Requests: ``system`` (a string or text blocks) becomes the system message; each message's content (a string
or blocks) becomes messages: ``text`` blocks (a message's text blocks joined by a blank line, as separate
paragraphs), an assistant's ``thinking`` (its ``reasoning_content``) and ``tool_use`` blocks (its
``tool_calls``), a user's ``tool_result`` blocks (``tool`` messages, in order, before the text that follows
them); a ``system`` message among them (Claude Code's notes on its environment) is a system message where it
stands (a template that renders none there answers 400). ``is_error`` on a result is not shown to the model
(a chat template has no place for it; the result's text says what went wrong), and ``cache_control`` is a
caching hint with nothing to render. A tool with ``defer_loading`` is not shown to the model, as the API
keeps it out of the context until a tool search loads it (tool search is not served here).
``context_management`` may clear old thinking (the template renders reasoning as it does anyway); any other
edit is a 400. Images, documents, redacted thinking, tool references, server tools and their results have no
place in a chat template: a 400 that names the block. Sampling fields (max_tokens, temperature, thinking
budget, tool_choice, stop_sequences...) are ignored: the trainer's sampling parameters hold.

Answers: a ``thinking`` block when the sampled text had a ``<think>`` block (its text left out when the
request says ``"thinking": {"display": "omitted"}``), a ``text`` block, a ``tool_use`` block per call;
``stop_reason`` ``end_turn``, ``tool_use`` or ``max_tokens``. Streamed as the API streams: ``message_start``,
``ping``, per block ``content_block_start``, its deltas (``thinking_delta`` and ``signature_delta``,
``text_delta``, ``input_json_delta``) and ``content_block_stop``, then ``message_delta`` (the stop reason, the
usage) and ``message_stop``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gym_swe.rollout.proxy.conversation import (
    Answer,
    ChatRequest,
    RequestError,
    arguments_json,
    arguments_object,
    unrepresentable,
)
from gym_swe.rollout.proxy.dialects.base import (
    Dialect,
    Route,
    bearer,
    function_tool,
    json_list,
    require_object,
    sse,
    stream_flag,
    text_of,
)

ROLES = ("user", "assistant", "system")
JOINER = "\n\n"
SIGNATURE = "gym_swe"  # thinking blocks must carry one; this proxy checks none
STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
ERROR_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    502: "api_error",
}


def secret(headers: Mapping[str, str], query: Mapping[str, str]) -> str | None:
    key = headers.get("x-api-key")
    return key.strip() if key else bearer(headers)


def parse_request(body: Any, route: Route | None = None) -> ChatRequest:
    body = require_object(body)
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        messages.append({"role": "system", "content": text_of(system, "system", ("text",), JOINER)})
    given = body.get("messages")
    if not isinstance(given, list) or not given:
        raise RequestError(400, "'messages' must be a non-empty list of message objects", param="messages")
    for index, message in enumerate(given):
        where = f"messages[{index}]"
        if not isinstance(message, Mapping) or message.get("role") not in ROLES:
            raise RequestError(
                400,
                f"{where} must be an object with a 'role' among {', '.join(ROLES)}",
                param=f"{where}.role",
            )
        content = message.get("content")
        if message["role"] == "system":  # a system turn mid-conversation: text only, as the API takes it
            text = text_of(content, f"{where}.content", ("text",), JOINER)
            messages.append({"role": "system", "content": text})
            continue
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            raise RequestError(
                400, f"{where}.content must be a string or a list of blocks", param=f"{where}.content"
            )
        if message["role"] == "assistant":
            messages.append(_assistant(blocks, where))
        else:
            messages += _user(blocks, where)
    _check_context_management(body.get("context_management"))
    tools = []
    for index, tool in enumerate(json_list(body.get("tools"), "tools")):
        if not isinstance(tool, Mapping) or tool.get("type", "custom") != "custom":
            kind = tool.get("type") if isinstance(tool, Mapping) else type(tool).__name__
            raise unrepresentable(
                f"tools[{index}].type",
                f"{kind!r} tools are Anthropic's own: only client tools are served here",
            )
        if tool.get("defer_loading"):  # not in the model's context until a tool search loads it
            continue
        tools.append(
            function_tool(
                tool.get("name"), tool.get("description"), tool.get("input_schema"), f"tools[{index}]"
            )
        )
    thinking = body.get("thinking")
    omit = isinstance(thinking, Mapping) and thinking.get("display") == "omitted"
    return ChatRequest(messages, tools or None, stream_flag(body), {"omit_thinking": omit})


def _check_context_management(value: Any) -> None:
    """Context edits the API would make before the model reads the conversation: clearing old thinking is
    the chat template's and the bridge's business already (reasoning is rendered as the template renders
    it); any other edit (clearing tool results, say) would change what the model reads: a 400."""
    if not value:
        return
    edits = value.get("edits") if isinstance(value, Mapping) else None
    for index, edit in enumerate(json_list(edits, "context_management.edits")):
        kind = edit.get("type") if isinstance(edit, Mapping) else None
        if not (isinstance(kind, str) and kind.startswith("clear_thinking_")):
            raise unrepresentable(
                f"context_management.edits[{index}].type",
                f"{kind!r} edits change what the model reads and are not served here "
                "(only clear_thinking edits: the chat template renders reasoning as it does)",
            )


def _blocks(blocks: list[Any], where: str) -> list[tuple[str, Mapping[str, Any], str]]:
    checked = []
    for index, block in enumerate(blocks):
        at = f"{where}.content[{index}]"
        if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
            raise RequestError(400, f"{at} must be an object with a 'type'", param=f"{at}.type")
        checked.append((block["type"], block, at))
    return checked


def _assistant(blocks: list[Any], where: str) -> dict[str, Any]:
    texts, reasoning, calls = [], [], []
    for kind, block, at in _blocks(blocks, where):
        if kind == "text":
            texts.append(_string(block, "text", at))
        elif kind == "thinking":
            reasoning.append(_string(block, "thinking", at))
        elif kind == "tool_use":
            call_id, name = block.get("id"), block.get("name")
            if not isinstance(call_id, str) or not isinstance(name, str):
                raise RequestError(400, f"{at} needs a string id and name", param=f"{at}.id")
            arguments = arguments_json(block.get("input", {}), f"{at}.input")
            calls.append(
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            )
        else:
            raise unrepresentable(
                f"{at}.type",
                f"{kind!r} blocks cannot be rendered by a chat template (text, thinking, tool_use)",
            )
    message: dict[str, Any] = {"role": "assistant", "content": JOINER.join(texts) or None}
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = calls
    return message


def _user(blocks: list[Any], where: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    texts: list[str] = []
    for kind, block, at in _blocks(blocks, where):
        if kind == "text":
            texts.append(_string(block, "text", at))
        elif kind == "tool_result":
            if texts:
                messages.append({"role": "user", "content": JOINER.join(texts)})
                texts = []
            call_id = block.get("tool_use_id")
            if not isinstance(call_id, str):
                raise RequestError(400, f"{at}.tool_use_id must be a string", param=f"{at}.tool_use_id")
            output = text_of(block.get("content"), f"{at}.content", ("text",), JOINER)
            messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
        else:
            raise unrepresentable(
                f"{at}.type", f"{kind!r} blocks cannot be rendered by a chat template (text, tool_result)"
            )
    if texts or not messages:
        messages.append({"role": "user", "content": JOINER.join(texts)})
    return messages


def _string(block: Mapping[str, Any], key: str, at: str) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise RequestError(400, f"{at}.{key} must be a string", param=f"{at}.{key}")
    return value


# -- answers ------------------------------------------------------------------------------------------------
def _content(answer: Answer, request: ChatRequest | None = None) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if answer.reasoning:  # "display": "omitted" asks for the block without its text, as the API sends it
        omit = request is not None and request.reply_options.get("omit_thinking")
        blocks.append(
            {"type": "thinking", "thinking": "" if omit else answer.reasoning, "signature": SIGNATURE}
        )
    if answer.text or not answer.tool_calls:
        blocks.append({"type": "text", "text": answer.text})
    for call in answer.tool_calls:
        name, arguments = call["function"]["name"], arguments_object(call)
        blocks.append({"type": "tool_use", "id": call["id"], "name": name, "input": arguments})
    return blocks


def message(answer: Answer, request: ChatRequest | None = None) -> dict[str, Any]:
    return {
        "id": f"msg_{answer.id}",
        "type": "message",
        "role": "assistant",
        "model": answer.model,
        "content": _content(answer, request),
        "stop_reason": STOP_REASONS.get(answer.finish_reason, "end_turn"),
        "stop_sequence": None,
        "usage": _usage(answer.prompt_tokens, answer.completion_tokens),
    }


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": prompt_tokens,
        "output_tokens": completion_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def stream_events(answer: Answer, request: ChatRequest) -> list[bytes]:
    def event(kind: str, **fields: Any) -> bytes:
        return sse({"type": kind, **fields}, kind)

    start = {
        **message(answer, request),
        "content": [],
        "stop_reason": None,
        "usage": _usage(answer.prompt_tokens, 0),
    }
    events = [event("message_start", message=start), event("ping")]
    for index, block in enumerate(_content(answer, request)):
        if block["type"] == "thinking":
            empty: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": block["thinking"]}] if block["thinking"] else []
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif block["type"] == "text":
            empty, deltas = {"type": "text", "text": ""}, [{"type": "text_delta", "text": block["text"]}]
        else:
            empty = {**block, "input": {}}
            partial = json.dumps(block["input"], ensure_ascii=False)
            deltas = [{"type": "input_json_delta", "partial_json": partial}]
        events.append(event("content_block_start", index=index, content_block=empty))
        events += [event("content_block_delta", index=index, delta=delta) for delta in deltas]
        events.append(event("content_block_stop", index=index))
    stop = {"stop_reason": STOP_REASONS.get(answer.finish_reason, "end_turn"), "stop_sequence": None}
    events.append(event("message_delta", delta=stop, usage={"output_tokens": answer.completion_tokens}))
    events.append(event("message_stop"))
    return events


def error_body(error: RequestError) -> dict[str, Any]:
    kind = ERROR_TYPES.get(error.status, "invalid_request_error" if error.status < 500 else "api_error")
    return {"type": "error", "error": {"type": kind, "message": error.message}}


DIALECT = Dialect(
    name="anthropic_messages",
    base_path="",
    routes=(
        Route("POST", "/v1/messages"),
        Route("POST", "/v1/messages/count_tokens", kind="count"),
    ),
    secret=secret,
    auth_hint="'x-api-key: <its secret>' or 'Authorization: Bearer <its secret>'",
    parse=parse_request,
    reply=message,
    events=stream_events,
    error_body=error_body,
    count_reply=lambda tokens: {"input_tokens": tokens},
)
