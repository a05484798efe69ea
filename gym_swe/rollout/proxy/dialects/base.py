"""What a wire dialect is to the proxy's core: its routes, how a request proves its secret, how a request
becomes a `ChatRequest` and an `Answer` a response (whole, or as the server-sent events that API streams),
and the shape of its errors. Helpers the dialects share are here too."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gym_swe.rollout.proxy.conversation import Answer, ChatRequest, RequestError, unrepresentable

ROUTE_KINDS = ("generate", "count", "models")


@dataclass(frozen=True)
class Route:
    """One route of a dialect, under the rollout's root (``/rollout/{rollout_id}``)."""

    method: str
    path: str
    """aiohttp's path syntax: ``/v1/chat/completions``, ``/v1beta/models/{model}:generateContent``."""
    kind: str = "generate"
    """"generate": a turn; "count": the request's prompt length under the chat template, nothing recorded;
    "models": the one model."""
    streams: bool | None = None
    """Whether the route answers as a stream whatever the body says (Google's ``:streamGenerateContent``);
    None: the request's own ``stream`` field says."""


@dataclass(frozen=True)
class Dialect:
    name: str
    base_path: str
    """What a harness's SDK takes as its base URL, under the rollout's root: ``/v1`` for OpenAI's SDKs
    (they add ``/chat/completions``), "" for Anthropic's and Google's (they add ``/v1/messages``,
    ``/v1beta/models/...``)."""
    routes: tuple[Route, ...]
    secret: Callable[[Mapping[str, str], Mapping[str, str]], str | None]
    """The secret a request presents, from its headers and query (None: it presents none)."""
    auth_hint: str
    """How to present it, for the 401's message."""
    parse: Callable[[Any, Route], ChatRequest]
    """A decoded body as a `ChatRequest`, or a `RequestError` (400) naming the field at fault."""
    reply: Callable[[Answer, ChatRequest], dict[str, Any]]
    events: Callable[[Answer, ChatRequest], list[bytes]]
    """The answer as the server-sent events that API streams, in order."""
    error_body: Callable[[RequestError], dict[str, Any]]
    replay_ignores: frozenset[str] = frozenset({"stream"})
    """Body fields that do not change the answer: a retry that differs only in them is the same request."""
    count_reply: Callable[[int], dict[str, Any]] | None = None
    models_reply: Callable[[str], dict[str, Any]] | None = None


def bearer(headers: Mapping[str, str]) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header."""
    scheme, _, token = headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def sse(data: Mapping[str, Any], event: str | None = None) -> bytes:
    """One server-sent event: ``event:`` (when the API names its events) and one ``data:`` line of JSON."""
    line = b"data: " + json.dumps(data, ensure_ascii=False).encode() + b"\n\n"
    return b"event: " + event.encode() + b"\n" + line if event else line


def require_object(body: Any) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise RequestError(400, f"the request body must be a JSON object, got {type(body).__name__}")
    return body


def stream_flag(body: Mapping[str, Any]) -> bool:
    stream = body.get("stream", False)
    if stream is None:
        return False
    if not isinstance(stream, bool):
        raise RequestError(400, f"'stream' must be true or false, got {stream!r}", param="stream")
    return stream


def refuse_present(body: Mapping[str, Any], fields: Mapping[str, str]) -> None:
    """A 400 for the first of ``fields`` (name -> why the proxy cannot serve it) that ``body`` sets."""
    for name, why in fields.items():
        if body.get(name) not in (None, False, "", [], {}):
            raise unrepresentable(name, why)


def function_tool(name: Any, description: Any, parameters: Any, param: str) -> dict[str, Any]:
    """A tool in the internal form (an OpenAI function schema); a 400 naming ``param`` when its name is not
    a string or its parameters not an object."""
    if not isinstance(name, str) or not name:
        raise unrepresentable(f"{param}.name", "a tool needs a name (a non-empty string)")
    if parameters is None:
        parameters = {"type": "object", "properties": {}}
    if not isinstance(parameters, Mapping):
        raise unrepresentable(f"{param}", "a tool's parameters must be a JSON schema object")
    function: dict[str, Any] = {"name": name}
    if isinstance(description, str):
        function["description"] = description
    function["parameters"] = dict(parameters)
    return {"type": "function", "function": function}


def text_of(value: Any, param: str, text_types: tuple[str, ...], joiner: str) -> str:
    """Content given as a string or a list of text parts (``{"type": one of text_types, "text": ...}``) as
    one string; a 400 naming the first part that is not text (an image, a file: nothing a chat template
    renders as text)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise unrepresentable(param, f"must be a string or a list of parts, got {type(value).__name__}")
    texts = []
    for index, part in enumerate(value):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind not in text_types or not isinstance(part.get("text"), str):
            raise unrepresentable(
                f"{param}[{index}].type",
                f"{kind!r} parts cannot be rendered by a chat template (only {', '.join(text_types)})",
            )
        texts.append(part["text"])
    return joiner.join(texts)


def json_list(value: Any, param: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise RequestError(400, f"'{param}' must be a list, got {type(value).__name__}", param=param)
    return value


def openai_error(error: RequestError) -> dict[str, Any]:
    """OpenAI's error shape (chat completions and the Responses API)."""
    return {"error": {"message": error.message, "type": error.kind, "param": error.param, "code": error.code}}
