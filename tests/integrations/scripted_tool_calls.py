"""A scripted policy that answers with OpenAI ``tool_calls``, behind a real OpenAI-compatible chat endpoint on
loopback: for harnesses whose model calls tools the OpenAI way (verifiers' ``bash`` harness) rather than in its
text (tests/integrations/scripted_chat.py). Standard library only: it runs in the other stacks' environments
too, where gym_swe is not installed.

The policy: a conversation whose first user message holds one of the ``scripts``' instructions gets, at its
n-th reply, a ``bash`` call of that script's n-th command, then, past the last, a text reply with no tool call
(the harness then ends the agent's turn). It keeps what the tools answered (``outputs``, per instruction).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DONE = "Done: the work dir is as I leave it."


class ChatEndpoint:
    """A real OpenAI-compatible chat endpoint on loopback (``base_url``) whose replies a subclass scripts:
    `reply` gives the assistant message for a conversation so far. Both scripted policies stand on it (this
    one and tests/integrations/scripted_chat.py's); it lives here because this module stays standard-library
    only. ``requests`` counts the chat completions answered."""

    def __init__(self) -> None:
        self.requests = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._send({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                completion = server.complete(body)
                if body.get("stream"):
                    self._stream(server.stream_events(completion))
                else:
                    self._send(completion)

            def _stream(self, events: list[dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for event in events:
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _send(self, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def reply(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        raise NotImplementedError

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests += 1
            number = self.requests
        message = self.reply(body.get("messages") or [])
        return {
            "id": f"chatcmpl-{number}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }  # fmt: skip

    def stream_events(self, completion: dict[str, Any]) -> list[dict[str, Any]]:
        """The completion as server-sent events, as OpenAI streams it: the message (its text or its tool
        calls, each with its index), the finish reason, the usage, then (the handler) ``[DONE]``."""
        choice = completion["choices"][0]
        message = choice["message"]
        delta: dict[str, Any] = {"role": "assistant", "content": message["content"]}
        if message.get("tool_calls"):
            delta["tool_calls"] = [{"index": n, **call} for n, call in enumerate(message["tool_calls"])]
        head = {key: completion[key] for key in ("id", "created", "model")}
        events = [
            {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
            {**head, "choices": [], "usage": completion["usage"]},
        ]
        return [{**event, "object": "chat.completion.chunk"} for event in events]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class ScriptedToolCallServer(ChatEndpoint):
    """``scripts``: {instruction text: [bash command, ...]}. A conversation whose opening user message holds none
    of them is answered with ``DONE`` at once. ``outputs[instruction]``: the tool messages' contents of its
    latest request, in order."""

    def __init__(self, scripts: Mapping[str, Sequence[str]]) -> None:
        self.scripts = {instruction.strip(): list(commands) for instruction, commands in scripts.items()}
        self.outputs: dict[str, list[str]] = {}
        super().__init__()

    def reply(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The assistant message for a conversation so far."""
        users = [m for m in messages if m.get("role") == "user"]
        opening = text_of(users[0].get("content")) if users else ""
        instruction = next((text for text in self.scripts if text in opening), None)
        if instruction is None:
            return {"role": "assistant", "content": DONE}
        with self._lock:
            self.outputs[instruction] = [
                text_of(m.get("content")) for m in messages if m.get("role") == "tool"
            ]
        replied = sum(1 for m in messages if m.get("role") == "assistant")
        commands = self.scripts[instruction]
        if replied >= len(commands):
            return {"role": "assistant", "content": DONE}
        call = {"id": f"call_{replied}", "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": commands[replied]})}}  # fmt: skip
        return {"role": "assistant", "content": None, "tool_calls": [call]}


def text_of(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")
