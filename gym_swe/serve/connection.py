"""Knowing, while a step runs, that its WebSocket client has gone.

OpenEnv's WebSocket endpoint reads the next frame only after it has answered the last one, so a client that
goes away (closed, crashed, its machine gone) while a step runs a long command is noticed when the step
ends: its sandbox, and its slot of ``--max-sessions``, stay taken until then. `WatchClient` reads the
connection's ASGI messages as they come, a few ahead of the endpoint (`READ_AHEAD`), and sets the
connection's `client_gone` event the moment the server hears the client's disconnect. The session's step
(`gym_swe.serve.environment.ServedEnvironment`) waits on that event beside the step, and stops the step
when it is set; the endpoint then finds the client gone and closes the session, its sandbox and its slot.

A client that keeps more than `READ_AHEAD` frames unanswered is noticed late (when the step ends, at most
the env's ``max_step_seconds`` later): no client of the protocol does, and reading further ahead would
let one fill the server's memory. HTTP requests are not watched: an HTTP MCP session outlives its requests,
and ends when it is closed or reaped idle.
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar

from gym_swe.serve.guard import ASGIApp, Message, Receive, Scope, Send

READ_AHEAD = 4
"""Messages of a connection read before the endpoint asks for them."""

_GONE: ContextVar[asyncio.Event | None] = ContextVar("gym_swe_client_gone", default=None)


def client_gone() -> asyncio.Event | None:
    """In a WebSocket connection's task (and the tasks it starts): an event set once its client has gone.
    None elsewhere (an HTTP request, a test calling the session directly)."""
    return _GONE.get()


class WatchClient:
    """ASGI middleware: every WebSocket connection's messages read as they come (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        inbox: asyncio.Queue[Message] = asyncio.Queue(maxsize=READ_AHEAD)
        gone = asyncio.Event()

        async def read() -> None:
            message: Message = {"type": "websocket.disconnect", "code": 1006}
            try:
                while True:
                    message = await receive()
                    if message["type"] == "websocket.disconnect":
                        break
                    await inbox.put(message)
            except Exception:  # the server lost the connection some other way: it is gone all the same
                message = {"type": "websocket.disconnect", "code": 1006}
            gone.set()
            await inbox.put(message)

        async def send_while_there(message: Message) -> None:
            # Once the client has gone, what the endpoint still sends (a step's answer, an error frame, its
            # close) reaches nobody: dropped, so that the endpoint reads the disconnect next and closes the
            # session, rather than failing on a send with an error of the server's.
            if gone.is_set():
                return
            try:
                await send(message)
            except OSError:  # the server's "client disconnected"
                gone.set()

        token = _GONE.set(gone)
        reader = asyncio.create_task(read())
        try:
            await self.app(scope, inbox.get, send_while_there)
        finally:
            reader.cancel()
            _GONE.reset(token)
