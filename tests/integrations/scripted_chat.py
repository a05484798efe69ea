"""A scripted policy behind a real OpenAI-compatible chat endpoint on loopback, for the stacks' tests: a stack
(its client, its harness, its interception server) runs unchanged against it, and the policy's moves are
known, so the rewards it must earn are known too.

The policy: on a task it is told to fix, its first reply writes the task's known fix into the workspace and
its next one submits; on any other task it runs ``true`` for ``idle_turns`` replies, then submits. Replies
are text with ``<tool_call>`` blocks, as a Hermes-format model writes them.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from gym_swe.tasks.functions import load_function_tasks

SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'
IDLE = '<tool_call>{"name": "bash", "arguments": {"command": "true"}}</tool_call>'


def fix_turn(task_id: str) -> str:
    code = load_function_tasks("bundled").get(task_id).fixed_code
    encoded = base64.b64encode(code.encode()).decode()
    call = {"name": "bash", "arguments": {"command": f"echo {encoded} | base64 -d > /workspace/solution.py"}}
    return "I will fix it.\n<tool_call>" + json.dumps(call) + "</tool_call>"


class ScriptedChatServer:
    """``fixes``: the CodeDebug task ids the policy fixes; other tasks it submits unfixed, after
    ``idle_turns`` turns that change nothing. The task of a conversation is told by its function's name in the
    first user message. ``requests`` counts the chat completions answered."""

    def __init__(self, fixes: Sequence[str], idle_turns: int = 0) -> None:
        tasks = load_function_tasks("bundled")
        self.fixes = {tasks.get(task_id).entry_point: fix_turn(task_id) for task_id in fixes}
        self.idle_turns = idle_turns
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
                    self._stream(completion)
                else:
                    self._send(completion)

            def _stream(self, completion: dict[str, Any]) -> None:
                """The completion as server-sent events, as OpenAI streams it: the text, the finish reason
                (with usage), then ``[DONE]``."""
                choice = completion["choices"][0]
                head = {key: completion[key] for key in ("id", "created", "model")}
                chunks = [
                    {"index": 0, "delta": {"role": "assistant", "content": choice["message"]["content"]},
                     "finish_reason": None},
                    {"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]},
                ]  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for number, chunk in enumerate(chunks):
                    event = {**head, "object": "chat.completion.chunk", "choices": [chunk]}
                    if number == len(chunks) - 1:
                        event["usage"] = completion["usage"]
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

    def reply(self, messages: list[dict[str, Any]]) -> str:
        users = [m for m in messages if m.get("role") == "user"]
        opening = _text(users[0].get("content")) if users else ""
        fix = next((turn for name, turn in self.fixes.items() if f"`{name}`" in opening), None)
        replied = sum(1 for m in messages if m.get("role") == "assistant")
        if fix is not None:
            return fix if replied == 0 else SUBMIT
        return IDLE if replied < self.idle_turns else SUBMIT

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests += 1
        text = self.reply(body.get("messages") or [])
        return {
            "id": f"chatcmpl-{self.requests}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }  # fmt: skip

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")
