"""The served-env fixtures: one ``gym-swe serve CodeDebug-v0`` for the whole run (starting one costs seconds:
OpenEnv imports its web interface), and the honest fix of a bundled task, as the controls play it."""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Iterator

import pytest

from tests.conftest import require_bwrap
from tests.serve.server import EnvServer

TASK = "GymSwe/1"
MAX_TURNS = 6
MAX_SESSIONS = 8


@pytest.fixture(scope="session")
def server() -> Iterator[EnvServer]:
    """CodeDebug-v0 with the local sandbox, 6 turns an episode, up to 8 sessions at once."""
    require_bwrap()
    with EnvServer(
        "CodeDebug-v0", [f"max_turns={MAX_TURNS}"], ["--max-sessions", str(MAX_SESSIONS)]
    ) as running:
        yield running


def tool_call(name: str, **arguments: object) -> str:
    """A turn as a model writes it (Hermes format)."""
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def honest_fix(task_id: str = TASK) -> str:
    """The turn that writes the task's correct solution into the workspace."""
    from gym_swe.tasks.functions import load_function_tasks

    (task,) = [t for t in load_function_tasks("bundled") if t.task_id == task_id]
    encoded = base64.b64encode(task.fixed_code.encode()).decode()
    return tool_call("bash", command=f"echo {encoded} | base64 -d > solution.py")


class RawSession:
    """A WebSocket session spoken by hand, frame by frame, as any OpenEnv client (or a hostile one) would."""

    def __init__(self, url: str, token: str | None = None, query: str = "") -> None:
        from websockets.sync.client import connect

        headers = {"Authorization": f"Bearer {token}"} if token else None
        address = url.replace("http", "ws", 1) + "/ws" + query
        self.stack = contextlib.ExitStack()
        self.socket = self.stack.enter_context(
            connect(address, additional_headers=headers, proxy=None, max_size=2**26, open_timeout=30)
        )

    def ask(self, message: dict | str) -> dict:
        from websockets.exceptions import ConnectionClosed

        try:
            self.socket.send(message if isinstance(message, str) else json.dumps(message))
        except ConnectionClosed:
            pass  # a refused session is an error frame then a close: the frame is still there to read
        return json.loads(self.socket.recv(timeout=120))

    def reset(self, **data: object) -> dict:
        return self.ask({"type": "reset", "data": data})

    def step(self, **data: object) -> dict:
        return self.ask({"type": "step", "data": data})

    def state(self) -> dict:
        return self.ask({"type": "state"})["data"]

    def mcp(self, method: str, params: dict, request_id: int = 1) -> dict:
        rpc = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        return self.ask({"type": "mcp", "data": rpc})["data"]

    def close(self) -> None:
        try:
            self.socket.send(json.dumps({"type": "close"}))
        except Exception:
            pass
        self.stack.close()

    def __enter__(self) -> RawSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
