"""Google generateContent (``POST /v1beta/models/{model}:generateContent``, ``:streamGenerateContent``
(server-sent events with ``?alt=sse``), ``:countTokens``), as Gemini CLI speaks it. The secret comes as
``x-goog-api-key`` or as ``?key=``. Field names are read as the API reads them (protobuf's JSON): in
lowerCamelCase or as the proto spells them (``parametersJsonSchema`` or ``parameters_json_schema``, which the
Python SDK sends).

Requests: ``systemInstruction`` becomes the system message; ``contents`` become messages: a ``model``
content is one assistant message (its ``thought`` text parts the ``reasoning_content``, its other text parts
the content, its ``functionCall`` parts the ``tool_calls``); a ``user`` content's ``functionResponse`` parts
become ``tool`` messages, its text parts a user message (parts joined as written: they are pieces of one
text). A call without an ``id`` gets the one this proxy answered it with (`call_id` of its position), and a
response without one the id of the first call of that name before it that has no response yet. A response
object ``{"output": text}`` (or ``result``/``content``: the one-key wrapper the API requires) is rendered as
its text; any other object as its JSON. ``tools`` give their ``functionDeclarations`` (``parameters``,
Gemini's schema with upper-case types, made JSON schema; or ``parametersJsonSchema``). Inline or file data,
code execution, Google's own tools, cached contents and more than one candidate have no place in a chat
template: a 400 that names the field. Sampling settings are ignored: the trainer's hold.

Answers: a candidate whose parts are a ``thought`` text when the sampled text had a ``<think>`` block, the
text, a ``functionCall`` per call (with its ``id``); ``finishReason`` ``STOP`` or ``MAX_TOKENS``. Streamed
as the API streams (``alt=sse``): one response object per ``data:`` event, a part at a time, the last with
the finish reason and the usage.
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
    call_id,
    unrepresentable,
)
from gym_swe.rollout.proxy.dialects.base import (
    Dialect,
    Route,
    function_tool,
    json_list,
    require_object,
    sse,
)

ROLES = ("user", "model")
PART_NOTES = ("thought", "thoughtSignature", "partMetadata")  # beside a part's content: nothing to render
WRAPPERS = ("output", "result", "content")
STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    413: "INVALID_ARGUMENT",
    415: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    502: "UNAVAILABLE",
}


def secret(headers: Mapping[str, str], query: Mapping[str, str]) -> str | None:
    key = headers.get("x-goog-api-key") or query.get("key")
    return key.strip() if key else None


def fields(value: Any) -> dict[str, Any]:
    """An API object's fields by their lowerCamelCase names (``function_call`` -> ``functionCall``); not for
    what holds user data (a schema's ``properties``, call arguments, a function's response)."""
    if not isinstance(value, Mapping):
        return {}
    if isinstance(value, dict) and not any("_" in key for key in value):  # as JavaScript clients send it
        return value
    return {_camel(str(key)): item for key, item in value.items()}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def parse_request(body: Any, route: Route | None = None) -> ChatRequest:
    body = fields(require_object(body))
    if isinstance(body.get("generateContentRequest"), Mapping):  # countTokens' other form
        body = fields(body["generateContentRequest"])
    if body.get("cachedContent"):
        raise unrepresentable("cachedContent", "this proxy keeps no cached contents: send them as contents")
    config = fields(body.get("generationConfig"))
    if config.get("candidateCount") not in (None, 1):
        raise unrepresentable(
            "generationConfig.candidateCount", "must be 1 (one sample per request, as the trainer records it)"
        )
    messages: list[dict[str, Any]] = []
    system = body.get("systemInstruction")
    if system:
        if isinstance(system, str):
            text = system
        elif isinstance(system, Mapping):
            text = _text(
                json_list(fields(system).get("parts"), "systemInstruction.parts"), "systemInstruction"
            )
        else:
            raise unrepresentable("systemInstruction", "must be a content object with text parts")
        messages.append({"role": "system", "content": text})
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        raise RequestError(400, "'contents' must be a non-empty list of content objects", param="contents")
    messages += _messages(contents)
    tools = []
    for index, tool in enumerate(json_list(body.get("tools"), "tools")):
        if not isinstance(tool, Mapping):
            raise RequestError(400, f"tools[{index}] must be an object", param=f"tools[{index}]")
        tool = fields(tool)
        for key, value in tool.items():
            if key != "functionDeclarations" and value is not None:  # {} turns a tool on
                raise unrepresentable(f"tools[{index}].{key}", "Google's own tools are not served here")
        declarations = json_list(tool.get("functionDeclarations"), f"tools[{index}].functionDeclarations")
        for number, declaration in enumerate(declarations):
            where = f"tools[{index}].functionDeclarations[{number}]"
            if not isinstance(declaration, Mapping):
                raise RequestError(400, f"{where} must be an object", param=where)
            declaration = fields(declaration)
            schema = declaration.get("parametersJsonSchema")
            if schema is None and declaration.get("parameters") is not None:
                schema = json_schema(declaration["parameters"])
            tools.append(
                function_tool(declaration.get("name"), declaration.get("description"), schema, where)
            )
    stream = bool(route is not None and route.streams)
    return ChatRequest(messages, tools or None, stream)


def _messages(contents: list[Any]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    position = 0  # assistant messages so far: the ids this proxy gave their calls
    unanswered: list[tuple[str, str]] = []  # (name, id) of the last model content's calls without a response
    for index, content in enumerate(contents):
        where = f"contents[{index}]"
        if not isinstance(content, Mapping):
            raise RequestError(400, f"{where} must be an object", param=where)
        content = fields(content)
        role = content.get("role") or "user"
        if role not in ROLES:
            raise RequestError(400, f"{where}.role must be 'user' or 'model'", param=f"{where}.role")
        parts = json_list(content.get("parts"), f"{where}.parts")
        if role == "model":
            message = _model(parts, where, position)
            unanswered = [(c["function"]["name"], c["id"]) for c in message.get("tool_calls", [])]
            messages.append(message)
            position += 1
        else:
            messages += _user(parts, where, unanswered)
    return messages


def _parts(parts: list[Any], where: str) -> list[tuple[str, dict[str, Any], str]]:
    """(kind, part, where) of each part: kind "text", "thought", "functionCall" or "functionResponse"."""
    checked = []
    for index, part in enumerate(parts):
        at = f"{where}.parts[{index}]"
        if not isinstance(part, Mapping):
            raise RequestError(400, f"{at} must be an object", param=at)
        part = fields(part)
        kinds = [key for key, value in part.items() if key not in PART_NOTES and value is not None]
        if len(kinds) != 1 or kinds[0] not in ("text", "functionCall", "functionResponse"):
            other = next(
                (key for key in kinds if key not in ("text", "functionCall", "functionResponse")), None
            )
            field = f"{at}.{other}" if other else at
            raise unrepresentable(
                field, "a part must hold one of text, functionCall, functionResponse (nothing else renders)"
            )
        kind = "thought" if kinds[0] == "text" and part.get("thought") else kinds[0]
        if kind in ("text", "thought") and not isinstance(part["text"], str):
            raise RequestError(400, f"{at}.text must be a string", param=f"{at}.text")
        checked.append((kind, part, at))
    return checked


def _text(parts: list[Any], where: str) -> str:
    texts = []
    for kind, part, at in _parts(parts, where):
        if kind != "text":
            raise unrepresentable(f"{at}.{kind}", "only text parts are allowed here")
        texts.append(part["text"])
    return "".join(texts)


def _model(parts: list[Any], where: str, position: int) -> dict[str, Any]:
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[dict[str, Any]] = []
    for kind, part, at in _parts(parts, where):
        if kind == "text":
            texts.append(part["text"])
        elif kind == "thought":
            reasoning.append(part["text"])
        elif kind == "functionCall":
            call = fields(part["functionCall"])
            name = call.get("name")
            if not isinstance(name, str):
                raise RequestError(
                    400, f"{at}.functionCall.name must be a string", param=f"{at}.functionCall"
                )
            arguments = arguments_json(call.get("args") or {}, f"{at}.functionCall.args")
            given = call.get("id")
            identifier = given if isinstance(given, str) and given else call_id(position, len(calls))
            calls.append(
                {"id": identifier, "type": "function", "function": {"name": name, "arguments": arguments}}
            )
        else:
            raise unrepresentable(f"{at}.functionResponse", "a model turn cannot hold a function response")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = calls
    return message


def _user(parts: list[Any], where: str, unanswered: list[tuple[str, str]]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    texts: list[str] = []
    for kind, part, at in _parts(parts, where):
        if kind in ("text", "thought"):
            texts.append(part["text"])
        elif kind == "functionResponse":
            if texts:
                messages.append({"role": "user", "content": "".join(texts)})
                texts = []
            messages.append(_tool_result(part["functionResponse"], at, unanswered))
        else:
            raise unrepresentable(f"{at}.functionCall", "a user turn cannot hold a function call")
    if texts or not messages:
        messages.append({"role": "user", "content": "".join(texts)})
    return messages


def _tool_result(result: Any, at: str, unanswered: list[tuple[str, str]]) -> dict[str, Any]:
    result = fields(result)
    name = result.get("name")
    if not isinstance(name, str):
        raise RequestError(
            400, f"{at}.functionResponse.name must be a string", param=f"{at}.functionResponse"
        )
    response = result.get("response")
    if not isinstance(response, Mapping):
        raise unrepresentable(f"{at}.functionResponse.response", "must be an object")
    if result.get("parts"):
        raise unrepresentable(f"{at}.functionResponse.parts", "only a response object renders as text")
    given = result.get("id")
    match = next((pair for pair in unanswered if (pair[1] == given if given else pair[0] == name)), None)
    if match is not None:
        unanswered.remove(match)
    identifier = given if isinstance(given, str) and given else (match[1] if match else "")
    if (
        len(response) == 1
        and next(iter(response)) in WRAPPERS
        and isinstance(next(iter(response.values())), str)
    ):
        content = next(iter(response.values()))
    else:
        content = json.dumps(response, ensure_ascii=False)
    return {"role": "tool", "tool_call_id": identifier, "name": name, "content": content}


def json_schema(schema: Any) -> Any:
    """Gemini's schema (``"type": "OBJECT"``, ``any_of``) as JSON schema (``"type": "object"``, ``anyOf``):
    the same keywords, camel-cased, types in lower case; property names as they are."""
    if not isinstance(schema, Mapping):
        return schema
    converted = dict(fields(schema))  # a copy: the request body is not changed
    if isinstance(converted.get("type"), str):
        converted["type"] = converted["type"].lower()
    if isinstance(converted.get("properties"), Mapping):
        converted["properties"] = {name: json_schema(sub) for name, sub in converted["properties"].items()}
    for key in ("items", "anyOf"):
        value = converted.get(key)
        converted[key] = (
            [json_schema(sub) for sub in value] if isinstance(value, list) else json_schema(value)
        )
        if value is None:
            del converted[key]
    return converted


# -- answers ------------------------------------------------------------------------------------------------
def _parts_of(answer: Answer) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if answer.reasoning:
        parts.append({"text": answer.reasoning, "thought": True})
    if answer.text or not answer.tool_calls:
        parts.append({"text": answer.text})
    for call in answer.tool_calls:
        name, arguments = call["function"]["name"], arguments_object(call)
        parts.append({"functionCall": {"id": call["id"], "name": name, "args": arguments}})
    return parts


def _response(answer: Answer, parts: list[dict[str, Any]], last: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": answer.model, "responseId": answer.id}
    if last:
        candidate["finishReason"] = "MAX_TOKENS" if answer.finish_reason == "length" else "STOP"
        out["usageMetadata"] = {
            "promptTokenCount": answer.prompt_tokens,
            "candidatesTokenCount": answer.completion_tokens,
            "totalTokenCount": answer.prompt_tokens + answer.completion_tokens,
        }
    return out


def generate_response(answer: Answer, request: ChatRequest | None = None) -> dict[str, Any]:
    return _response(answer, _parts_of(answer), last=True)


def stream_events(answer: Answer, request: ChatRequest) -> list[bytes]:
    parts = _parts_of(answer)
    return [sse(_response(answer, [part], last=i == len(parts) - 1)) for i, part in enumerate(parts)]


def error_body(error: RequestError) -> dict[str, Any]:
    status = STATUSES.get(error.status, "INVALID_ARGUMENT" if error.status < 500 else "INTERNAL")
    return {"error": {"code": error.status, "message": error.message, "status": status}}


ROUTES = tuple(
    route
    for version in ("v1beta", "v1")
    for route in (
        Route("POST", f"/{version}/models/{{model}}:generateContent", streams=False),
        Route("POST", f"/{version}/models/{{model}}:streamGenerateContent", streams=True),
        Route("POST", f"/{version}/models/{{model}}:countTokens", kind="count"),
    )
)

DIALECT = Dialect(
    name="google_generate",
    base_path="",
    routes=ROUTES,
    secret=secret,
    auth_hint="'x-goog-api-key: <its secret>' or '?key=<its secret>'",
    parse=parse_request,
    reply=generate_response,
    events=stream_events,
    error_body=error_body,
    count_reply=lambda tokens: {"totalTokens": tokens},
)
