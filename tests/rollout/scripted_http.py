"""A real HTTP server on loopback that answers from a script, for the retry policy of the server generators'
client: "503, 503, then 200" is hard to get from a real vLLM on demand, and this is a real peer over real
sockets (no client code is replaced)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    status: int = 200
    body: Any = field(default_factory=dict)
    """Sent as JSON; a str is sent as it is."""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds before answering."""


class ScriptedServer:
    """Answers each request with the next `Answer` of ``script`` (the last one repeats), and records when
    requests came and how many were in flight at once."""

    def __init__(self, *script: Answer) -> None:
        self.script = list(script) or [Answer()]
        self.times: list[float] = []
        self.paths: list[str] = []
        self.bodies: list[Any] = []
        self.authorizations: list[str | None] = []
        self.in_flight = self.most_in_flight = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                answer = server._next(self.path, body, self.headers.get("Authorization"))
                done = False

                def leave() -> None:
                    nonlocal done
                    if not done:
                        done = True
                        with server._lock:
                            server.in_flight -= 1

                try:
                    time.sleep(answer.delay)
                    data = answer.body if isinstance(answer.body, str) else json.dumps(answer.body)
                    self.send_response(answer.status)
                    for name, value in {"Content-Type": "application/json", **answer.headers}.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data.encode())))
                    self.end_headers()
                    # Counted out before the body goes: once the client has the body it may send its next
                    # request, which a decrement after the write could find still counted (5 of 4 in flight).
                    leave()
                    self.wfile.write(data.encode())
                except OSError:
                    pass  # the client gave up waiting
                finally:
                    leave()

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def _next(self, path: str, body: bytes, authorization: str | None) -> Answer:
        with self._lock:
            self.times.append(time.monotonic())
            self.paths.append(path)
            self.bodies.append(json.loads(body) if body else None)
            self.authorizations.append(authorization)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            index = min(len(self.times) - 1, len(self.script) - 1)
            return self.script[index]

    @property
    def requests(self) -> int:
        return len(self.times)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextmanager
def scripted_server(*script: Answer) -> Iterator[ScriptedServer]:
    server = ScriptedServer(*script)
    try:
        yield server
    finally:
        server.close()
