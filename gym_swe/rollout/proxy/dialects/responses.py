"""The OpenAI Responses API (``POST /v1/responses``), as Codex speaks it: the whole conversation sent as input
items each turn (``store: false``), answered with output items.

Requests: ``instructions`` becomes the system message; ``input`` (a string, or items) becomes messages:
``message`` items (``input_text``/``output_text`` parts, joined), ``function_call`` items (attached to the
assistant message they follow, as its ``tool_calls``), ``function_call_output`` items (``tool`` messages) and
``reasoning`` items (the next assistant message's ``reasoning_content``: its ``reasoning_text`` content, or
the ``encrypted_content`` this proxy gave it). ``tools`` of type ``function`` become the tool schemas.
Anything else has no place in a chat template, or lives on a server this proxy is not: images and files,
built-in and custom tools, ``previous_response_id``, stored prompts, item references: a 400 that names it.
Sampling fields (temperature, max_output_tokens, reasoning effort, tool_choice...) are ignored: the
trainer's sampling parameters hold.

Answers: a ``reasoning`` item when the sampled text had a ``<think>`` block (its text as ``reasoning_text``
content, and as ``encrypted_content``, which a harness that drops the content sends back), a ``message`` item
with the text, a ``function_call`` item per tool call; ``status: incomplete`` at ``max_tokens``. Streamed as
the API streams: ``response.created``, ``response.in_progress``, per item ``response.output_item.added``,
its parts and deltas (``response.reasoning_text.delta``, ``response.output_text.delta``,
``response.function_call_arguments.delta``) and ``response.output_item.done``, then ``response.completed``
(or ``response.incomplete``).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from gym_swe.rollout.proxy.conversation import Answer, ChatRequest, RequestError, unrepresentable
from gym_swe.rollout.proxy.dialects.base import (
    Dialect,
    Route,
    bearer,
    function_tool,
    json_list,
    openai_error,
    refuse_present,
    require_object,
    sse,
    stream_flag,
    text_of,
)

MESSAGE_ROLES = ("user", "system", "developer", "assistant")
TEXT_PARTS = ("input_text", "output_text", "text")
ENCRYPTED_PREFIX = "gym_swe:"
SERVER_STATE = {
    "previous_response_id": "this proxy keeps no responses: send the whole conversation as input",
    "conversation": "this proxy keeps no conversations: send the whole conversation as input",
    "prompt": "this proxy has no stored prompts: send the prompt's text as instructions or input",
    "background": "this proxy answers each request as it comes (background: false)",
}


def parse_request(body: Any, route: Route | None = None) -> ChatRequest:
    body = require_object(body)
    refuse_present(body, SERVER_STATE)
    messages: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise unrepresentable("instructions", "must be a string")
        messages.append({"role": "system", "content": instructions})
    given = body.get("input")
    if isinstance(given, str):
        messages.append({"role": "user", "content": given})
    else:
        messages += _messages(json_list(given, "input"))
    if not messages:
        raise RequestError(400, "'input' must be a string or a non-empty list of items", param="input")
    tools = []
    for index, tool in enumerate(json_list(body.get("tools"), "tools")):
        if not isinstance(tool, Mapping) or tool.get("type") != "function":
            kind = tool.get("type") if isinstance(tool, Mapping) else type(tool).__name__
            raise unrepresentable(
                f"tools[{index}].type", f"{kind!r} tools are not served here (only 'function' tools)"
            )
        tools.append(
            function_tool(
                tool.get("name"), tool.get("description"), tool.get("parameters"), f"tools[{index}]"
            )
        )
    wire_tools = [dict(tool) for tool in body.get("tools") or []]
    return ChatRequest(messages, tools or None, stream_flag(body), {"tools": wire_tools})


def _messages(items: list[Any]) -> list[dict[str, Any]]:
    """Input items as messages: an assistant turn is the run of reasoning, assistant message and function
    call items that the proxy answered it with (in that order); anything else ends the run."""
    messages: list[dict[str, Any]] = []
    turn: dict[str, Any] | None = None  # the assistant message being gathered

    def close() -> None:
        nonlocal turn
        if turn is not None:
            messages.append(turn)
            turn = None

    for index, item in enumerate(items):
        where = f"input[{index}]"
        if not isinstance(item, Mapping):
            raise RequestError(400, f"{where} must be an object", param=where)
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role not in MESSAGE_ROLES:
                raise RequestError(
                    400, f"{where}.role must be one of {', '.join(MESSAGE_ROLES)}", param=f"{where}.role"
                )
            content = text_of(item.get("content"), f"{where}.content", TEXT_PARTS, "")
            if role == "assistant":
                if turn is not None and (turn.get("content") or turn.get("tool_calls")):
                    close()
                turn = turn or {"role": "assistant", "content": None}
                turn["content"] = content
            else:
                close()
                messages.append({"role": role, "content": content})
        elif kind == "reasoning":
            if turn is not None:
                close()
            turn = {"role": "assistant", "content": None, "reasoning_content": _reasoning_text(item, where)}
        elif kind == "function_call":
            call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments")
            if not isinstance(call_id, str) or not isinstance(name, str) or not isinstance(arguments, str):
                raise RequestError(
                    400, f"{where} needs string call_id, name and arguments", param=f"{where}.call_id"
                )
            turn = turn or {"role": "assistant", "content": None}
            call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            turn.setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            close()
            call_id = item.get("call_id")
            if not isinstance(call_id, str):
                raise RequestError(400, f"{where}.call_id must be a string", param=f"{where}.call_id")
            output = text_of(item.get("output"), f"{where}.output", TEXT_PARTS, "")
            messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
        else:
            raise unrepresentable(
                f"{where}.type",
                f"{kind!r} items are not served here (only message, reasoning, function_call and its output)",
            )
    close()
    return messages


def _reasoning_text(item: Mapping[str, Any], where: str) -> str:
    if item.get("content"):
        return text_of(item["content"], f"{where}.content", ("reasoning_text",), "")
    encrypted = item.get("encrypted_content")
    if encrypted:
        try:
            decoded = base64.b64decode(str(encrypted), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            decoded = ""
        if not decoded.startswith(ENCRYPTED_PREFIX):
            raise unrepresentable(f"{where}.encrypted_content", "not reasoning this proxy gave out")
        return decoded[len(ENCRYPTED_PREFIX) :]
    return ""


# -- answers ------------------------------------------------------------------------------------------------
def _items(answer: Answer) -> list[dict[str, Any]]:
    """The answer's output items, complete, with ids derived from the answer's (a retry gets the same)."""
    items: list[dict[str, Any]] = []
    if answer.reasoning:
        encrypted = base64.b64encode((ENCRYPTED_PREFIX + answer.reasoning).encode()).decode()
        items.append(
            {
                "type": "reasoning",
                "id": f"rs_{answer.id}",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": answer.reasoning}],
                "encrypted_content": encrypted,
                "status": "completed",
            }
        )
    if answer.text or not answer.tool_calls:
        items.append(
            {
                "type": "message",
                "id": f"msg_{answer.id}",
                "status": "completed",
                "role": "assistant",
                "content": [_text_part(answer.text)],
            }
        )
    for index, call in enumerate(answer.tool_calls):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{answer.id}_{index}",
                "call_id": call["id"],
                "name": call["function"]["name"],
                "arguments": call["function"]["arguments"],
                "status": "completed",
            }
        )
    return items


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def response(
    answer: Answer, request: ChatRequest, output: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    incomplete = answer.finish_reason == "length"
    return {
        "id": f"resp_{answer.id}",
        "object": "response",
        "created_at": answer.created,
        "status": "incomplete" if incomplete else "completed",
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": None,
        "model": answer.model,
        "output": _items(answer) if output is None else output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": list(request.reply_options.get("tools", [])),
        "store": False,
        "usage": {
            "input_tokens": answer.prompt_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": answer.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": answer.prompt_tokens + answer.completion_tokens,
        },
    }


def stream_events(answer: Answer, request: ChatRequest) -> list[bytes]:
    events: list[bytes] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append(sse({"type": kind, "sequence_number": len(events), **fields}, kind))

    started = {**response(answer, request, output=[]), "status": "in_progress", "incomplete_details": None}
    emit("response.created", response=started)
    emit("response.in_progress", response=started)
    items = _items(answer)
    for position, item in enumerate(items):
        at = {"output_index": position, "item_id": item["id"]}
        if item["type"] == "reasoning":
            emit(
                "response.output_item.added",
                output_index=position,
                item={**item, "content": [], "status": "in_progress"},
            )
            part = {"type": "reasoning_text", "text": ""}
            emit("response.content_part.added", **at, content_index=0, part=part)
            emit("response.reasoning_text.delta", **at, content_index=0, delta=answer.reasoning)
            emit("response.reasoning_text.done", **at, content_index=0, text=answer.reasoning)
            emit("response.content_part.done", **at, content_index=0, part={**part, "text": answer.reasoning})
        elif item["type"] == "message":
            emit(
                "response.output_item.added",
                output_index=position,
                item={**item, "content": [], "status": "in_progress"},
            )
            emit("response.content_part.added", **at, content_index=0, part=_text_part(""))
            emit("response.output_text.delta", **at, content_index=0, delta=answer.text, logprobs=[])
            emit("response.output_text.done", **at, content_index=0, text=answer.text, logprobs=[])
            emit("response.content_part.done", **at, content_index=0, part=_text_part(answer.text))
        else:
            emit(
                "response.output_item.added",
                output_index=position,
                item={**item, "arguments": "", "status": "in_progress"},
            )
            emit("response.function_call_arguments.delta", **at, delta=item["arguments"])
            emit(
                "response.function_call_arguments.done", **at, arguments=item["arguments"], name=item["name"]
            )
        emit("response.output_item.done", output_index=position, item=item)
    final = response(answer, request, output=items)
    emit("response.incomplete" if final["status"] == "incomplete" else "response.completed", response=final)
    return events


DIALECT = Dialect(
    name="responses",
    base_path="/v1",
    routes=(Route("POST", "/v1/responses"),),
    secret=lambda headers, query: bearer(headers),
    auth_hint="'Authorization: Bearer <its secret>'",
    parse=parse_request,
    reply=response,
    events=stream_events,
    error_body=openai_error,
    replay_ignores=frozenset({"stream", "stream_options"}),
)
