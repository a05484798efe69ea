"""A hosted model for black-box mode: a scripted OpenAI-compatible chat endpoint on loopback, answering as a
server with a tool-call parser does (vLLM's ``--tool-call-parser hermes``, a hosted API): each reply an
assistant message with its text in ``content``, its calls as structured ``tool_calls`` (the server's own ids,
arguments as JSON strings), optionally its reasoning apart (``reasoning_content``), and the server's token
count in ``usage``.

A plan is a list of turns written as a Hermes-format model writes them (`tests.integrations.harnesses.scripted`'s
``tool_turn``: a line of text with its ``(step N)`` mark, then ``<tool_call>`` JSON), so every harness's
token-mode plan serves here too: the server parses the calls out as a real one would. A request gets the first
turn of its plan whose mark the conversation's assistant messages do not hold yet (as
`tests.rollout.scripted.ScriptedGenerator` answers; only the assistant's, since a harness's own prompt may say
"step 1": Gemini CLI's does for a model named ``gemini-*``). Plans are chosen by the request's ``model``, so that one server serves every test of a module.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.rollout.scripted import MARK

CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)


@dataclass(frozen=True)
class Plan:
    turns: list[str]
    reasoning: bool = False
    """Each reply carries ``reasoning_content`` ("Thinking about step N."), as a reasoning model's server
    sends it."""
    usage: bool = True
    """Each reply carries ``usage``: its prompt's tokens (a word count of the request's messages) and its
    completion's."""


@dataclass(frozen=True)
class Failure:
    """Every request of the plan is answered with this HTTP error (OpenAI's error shape)."""

    status: int
    message: str
    code: str = "server_error"


class HostedModel:
    """The endpoint (``base_url``: what ``openai-chat`` takes). ``requests`` keeps every body it was sent."""

    def __init__(self) -> None:
        self.plans: dict[str, Plan | Failure] = {}
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        hosted = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                status, answer = hosted.answer(body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def plan(self, model: str, plan: Plan | Failure) -> str:
        """Serve ``plan`` to requests for ``model``; returns ``model``."""
        self.plans[model] = plan
        return model

    def requests_for(self, model: str) -> list[dict[str, Any]]:
        with self._lock:
            return [body for body in self.requests if body.get("model") == model]

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(body)
            number = len(self.requests)
        plan = self.plans.get(str(body.get("model")))
        if plan is None:
            return 404, {"error": {"message": f"no model {body.get('model')!r}", "code": "model_not_found"}}
        if isinstance(plan, Failure):
            return plan.status, {"error": {"message": plan.message, "type": plan.code, "code": plan.code}}
        messages = body.get("messages") or []
        written = [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
        seen = {int(n) for n in MARK.findall(json.dumps(written))}
        step = next((index for index in range(len(plan.turns)) if index not in seen), len(plan.turns) - 1)
        text = plan.turns[step]
        calls = [json.loads(found) for found in CALL.findall(text)]
        message: dict[str, Any] = {"role": "assistant", "content": CALL.sub("", text).strip() or None}
        if calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{number}_{index}",
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
                }
                for index, call in enumerate(calls)
            ]
        if plan.reasoning:
            message["reasoning_content"] = f"Thinking about step {step}."
        answer: dict[str, Any] = {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        }
        if plan.usage:
            prompt = sum(len(str(m.get("content") or "").split()) for m in messages)
            answer["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": len(text.split()),
                "total_tokens": prompt + len(text.split()),
            }
        return 200, answer

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextmanager
def hosted_model() -> Iterator[HostedModel]:
    server = HostedModel()
    try:
        yield server
    finally:
        server.close()
