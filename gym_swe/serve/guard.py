"""What a server facing untrusted clients needs beyond OpenEnv's app: a bearer token on every route but
``/health`` (when the server has one), a cap on request bodies, and no address beyond loopback without a
token. Plain ASGI, so that it guards WebSocket handshakes as well as HTTP requests.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from gym_swe.errors import ConfigError

TOKEN_VARIABLE = "GYM_SWE_SERVE_TOKEN"
"""Where the server (with no --token-file) and the client (with no token=) read the bearer token from."""
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""Largest request body and WebSocket message a server reads (an action's text is at most 4 M characters)."""
LOOPBACK = ("127.0.0.1", "localhost", "::1")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def check_binding(host: str, token: str | None) -> None:
    """An address other than loopback needs a token: the sandboxes run whatever their clients send."""
    if host not in LOOPBACK and not token:
        raise ConfigError(
            f"--host {host} exposes the server beyond this machine: give it a bearer token "
            "(--token-file, or GYM_SWE_SERVE_TOKEN), which every client then sends"
        )


class Guard:
    """ASGI middleware: the bearer token (when the server has one) on every route but ``/health``, and a cap
    on request bodies (413; WebSocket messages are capped by the server, ``ws_max_size``)."""

    def __init__(self, app: ASGIApp, token: str | None, max_body: int) -> None:
        self.app, self.token, self.max_body = app, token, max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if self.token is not None and scope.get("path") != "/health" and not self._authorized(scope):
            if kind == "websocket":
                await send(
                    {"type": "websocket.close", "code": 1008, "reason": "missing or wrong bearer token"}
                )
            else:
                await _answer(send, 401, "missing or wrong bearer token", [(b"www-authenticate", b"Bearer")])
            return
        if kind == "http":
            body = await self._read_body(scope, receive, send)
            if body is None:
                return
            replayed = False

            async def replay() -> Message:
                nonlocal replayed
                if replayed:
                    return await receive()  # after the body: the disconnect, when it comes
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}

            await self.app(scope, replay, send)
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        assert self.token is not None
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                scheme, _, given = value.decode("latin-1").partition(" ")
                return scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), self.token)
        return False

    async def _read_body(self, scope: Scope, receive: Receive, send: Send) -> bytes | None:
        """The whole request body, or None after answering 413 (declared or streamed past the cap)."""
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_body:
                await _answer(send, 413, f"request body over {self.max_body} bytes")
                return None
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                await _answer(send, 413, f"request body over {self.max_body} bytes")
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


async def _answer(
    send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), *(headers or [])]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})
