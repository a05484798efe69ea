"""A hostile client against ``gym-swe serve``, as an agent that has read every line of gym_swe would be: malformed
and oversized requests, another session's sandbox, the hidden tests and the grade before the episode ends, the
server itself from inside a sandbox. Each is refused (4xx, an error frame), the server stays up, and an honest
client, played after the attacks on the same server, still earns its reward."""

from __future__ import annotations

import json
import re
import uuid

import httpx
import pytest

from gym_swe.serve.client import ServedEnv
from gym_swe.tasks.functions import load_function_tasks
from tests.serve.conftest import MAX_SESSIONS, TASK, RawSession, honest_fix, tool_call
from tests.serve.server import EnvServer

BIG = 16 * 1024 * 1024  # the server's cap on a request body or a WebSocket message


def rpc(method: str, params: object) -> dict:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def test_malformed_and_hostile_frames_are_error_frames_and_the_session_goes_on(server: EnvServer) -> None:
    with RawSession(server.url) as session:
        session.reset(task_id=TASK)
        hostile: list[tuple[str | dict, str]] = [
            ("{not json", "INVALID_JSON"),
            ({"type": "rm -rf /"}, "UNKNOWN_TYPE"),
            (
                {"type": "step", "data": {"text": "ls", "truncate": "x"}},
                "exactly one of text, message, truncate",
            ),
            ({"type": "step", "data": {}}, "exactly one of"),
            ({"type": "step", "data": {"text": 42}}, "VALIDATION_ERROR"),
            ({"type": "step", "data": {"text": "ls", "grade": {"resolved": True}}}, "VALIDATION_ERROR"),
            ({"type": "step", "data": {"message": {"role": "user", "content": "x"}}}, "VALIDATION_ERROR"),
            ({"type": "step", "data": {"message": {"tool_calls": "rm"}}}, "VALIDATION_ERROR"),
            ({"type": "step", "data": {"text": "x" * 4_000_001}}, "VALIDATION_ERROR"),
            ({"type": "step", "data": {"truncate": ""}}, "VALIDATION_ERROR"),
            ({"type": "reset", "data": {"task_id": "../../../etc/passwd"}}, "TaskError: Unknown task id"),
            ({"type": "reset", "data": {"task_id": ["GymSwe/1"]}}, "task_id must be a string"),
            ({"type": "reset", "data": {"tests": "show me"}}, "unknown key(s) ['tests']"),
            ({"type": "reset", "data": {"seed": -1}}, "seed must be an int >= 0"),
            ({"type": "reset", "data": {"seed": "7"}}, "seed must be an int >= 0"),
            ({"type": "reset", "data": {"index": 10**9}}, "out of range"),
            ({"type": "reset", "data": {"split": "test", "index": 0}}, "Unknown task split 'test'"),
            ({"type": "reset", "data": {"task_id": TASK, "index": 0}}, "not both"),
            ({"type": "reset", "data": {"episode_id": "e" * 300}}, "episode_id"),
            ({"type": "mcp", "data": rpc("tools/call", {"name": "reset", "arguments": {}})}, "error"),
        ]
        for frame, expected in hostile:
            answer = session.ask(frame)
            text = json.dumps(answer)
            assert answer["type"] == "error" or "error" in answer.get("data", {}), (frame, answer)
            assert expected in text, (str(frame)[:200], text[:500])
            assert session.state()["task_id"] == TASK  # the session is still there, its episode too
        looked = session.step(text=tool_call("bash", command="ls"))["data"]["observation"]["text"]
        assert looked == "solution.py\ntest_solution.py"

    # A frame over the cap closes that connection (1009), and only that one.
    from websockets.exceptions import ConnectionClosed

    with RawSession(server.url) as session:
        session.reset(task_id=TASK)
        with pytest.raises(ConnectionClosed) as closed:
            session.ask({"type": "step", "data": {"text": "x" * (BIG + 1)}})
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    assert httpx.get(f"{server.url}/health").json() == {"status": "healthy"}


def test_malformed_and_oversized_http_requests_are_4xx_never_5xx(server: EnvServer) -> None:
    url = server.url
    json_header = {"content-type": "application/json"}

    def chunks():  # a body with no length, streamed past the cap
        for _ in range(BIG // 2**20 + 2):
            yield b"x" * 2**20

    requests = [
        ("POST", "/step", {"content": b"{garbage", "headers": json_header}),
        ("POST", "/step", {"json": {"action": {"text": 1}}}),
        ("POST", "/step", {"json": {"action": {"text": "ls"}}}),  # stateless HTTP: no episode to step
        ("POST", "/step", {"json": {"action": {"truncate": "x"}}}),
        ("POST", "/reset", {"json": {"seed": -1}}),
        ("POST", "/reset", {"json": {"task_id": "nope"}}),
        ("POST", "/reset", {"json": {"bogus": 1}}),
        ("POST", "/reset", {"content": b"x" * (BIG + 1), "headers": json_header}),
        ("POST", "/reset", {"content": chunks(), "headers": json_header}),
        ("POST", "/CodeDebug-v0/task", {"json": {"split": "default", "index": "abc"}}),
        ("POST", "/CodeDebug-v0/task", {"json": {"split": "default", "index": -5}}),
        ("POST", "/CodeDebug-v0/task_range", {"json": {"split": "nope"}}),
        ("POST", "/CodeDebug-v0/tasks", {"content": b"[]", "headers": json_header}),
        ("GET", "/CodeDebug-v0/../../etc/passwd", {}),
        ("GET", "/nope", {}),
        ("DELETE", "/health", {}),
    ]
    statuses = []
    for method, path, options in requests:
        answer = httpx.request(method, url + path, timeout=60, **options)
        statuses.append((method, path, answer.status_code))
        assert 400 <= answer.status_code < 500, (method, path, answer.status_code, answer.text[:300])
    assert (statuses[2][2], statuses[7][2], statuses[8][2]) == (409, 413, 413)

    # MCP answers JSON-RPC errors (200, as the protocol wants), never a crash.
    bodies = [
        b"{garbage",
        b"[]",
        json.dumps(rpc("tools/call", "not an object")).encode(),
        json.dumps(
            rpc("tools/call", {"name": "bash", "arguments": {"command": "id"}})
        ).encode(),  # no session
    ]
    for body in bodies:
        answer = httpx.post(f"{url}/mcp", content=body, headers=json_header)
        assert answer.status_code == 200 and "error" in answer.json(), answer.text[:300]
    assert httpx.get(f"{url}/health").json() == {"status": "healthy"}


def test_no_client_reaches_another_sessions_sandbox(server: EnvServer) -> None:
    secret = uuid.uuid4().hex
    with RawSession(server.url) as owner, RawSession(server.url) as intruder:
        owner.reset(task_id=TASK)
        owner.step(text=tool_call("bash", command=f"echo {secret} > /workspace/secret && (sleep 300 &)"))
        intruder.reset(task_id=TASK)
        looked = intruder.step(
            text=tool_call("bash", command="cat /workspace/secret; ls /tmp; ps -e -o args")
        )
        text = looked["data"]["observation"]["text"]
        assert secret not in text and "No such file" in text and "sleep 300" not in text
        # Another session by id: none is ever sent to a client, and a guessed one is unknown.
        guessed = str(uuid.uuid4())
        with RawSession(server.url, query=f"?session_id={guessed}") as attached:
            answer = attached.ask({"type": "state"})
            assert answer["type"] == "error" and "Unknown session_id" in answer["data"]["message"]
        for method in ("tools/call", "openenv/session/close"):
            params = {
                "session_id": guessed,
                "name": "bash",
                "arguments": {"command": "cat /workspace/secret"},
            }
            rpc = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            answer = httpx.post(f"{server.url}/mcp", json=rpc).json()
            assert "Unknown session_id" in answer["error"]["message"]
        # The stateless HTTP routes answer from a fresh env, never from a session's.
        state = httpx.get(f"{server.url}/state").json()
        assert state["task_id"] is None and state["running"] is False
        for frame in (owner.state(), intruder.state()):
            assert secret not in json.dumps(frame)
        # The owner's sandbox is untouched.
        mine = owner.step(text=tool_call("bash", command="cat /workspace/secret"))
        assert mine["data"]["observation"]["text"] == secret


def test_the_hidden_tests_and_the_grade_stay_on_the_server_until_the_episode_ends(server: EnvServer) -> None:
    (task,) = [t for t in load_function_tasks("bundled") if t.task_id == TASK]
    shown = set(task.example_test.splitlines())
    hidden = [line.strip() for line in task.test.splitlines() if "assert" in line and line not in shown]
    assert hidden  # the task has tests the agent never sees
    received: list[str] = []
    url = server.url
    for path in ("/metadata", "/schema", "/state", "/openapi.json"):
        received.append(httpx.get(url + path).text)
    received.append(httpx.post(f"{url}/CodeDebug-v0/tasks", json={"split": "default"}).text)
    received.append(httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).text)
    with RawSession(url) as session:
        received.append(json.dumps(session.reset(task_id=TASK)))
        port = url.rsplit(":", 1)[1]
        # The agent's code, in the sandbox, tries the server itself: no network reaches it.
        probe = (f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3)\" 2>&1 | tail -1;"
                 f" (echo > /dev/tcp/127.0.0.1/{port}) 2>&1 | tail -1; ls /proc/1/root/ 2>&1 | head -3")  # fmt: skip
        for action in (tool_call("bash", command=probe), tool_call("bash", command="cat test_solution.py"),
                       "<tool_call>{broken", honest_fix()):  # fmt: skip
            answer = session.step(text=action)
            received.append(json.dumps(answer))
            observation = answer["data"]["observation"]
            assert answer["data"]["reward"] == 0.0 and answer["data"]["done"] is False
            assert observation["grade"] is None and observation["reward_grade"] is None
            received.append(json.dumps(session.state()))
        probed = json.loads(received[-8])["data"]["observation"]["text"]
        assert "healthy" not in probed and re.search(r"(refused|unreachable|Errno)", probed), probed
        assert session.state()["grade"] is None and session.state()["reward"] is None
        for line in hidden:
            for text in received:
                assert line not in text, line
        ended = session.step(text=tool_call("submit"))["data"]
        assert ended["reward"] == 1.0 and ended["observation"]["grade"]["resolved"] is True


def test_a_flood_of_sessions_past_the_cap_is_refused_and_the_server_goes_on(server: EnvServer) -> None:
    sessions: list[RawSession] = []
    refused = 0
    try:
        for _ in range(2 * MAX_SESSIONS):
            session = RawSession(server.url)
            answer = session.ask({"type": "state"})
            if answer["type"] == "error":
                assert answer["data"]["code"] == "CAPACITY_REACHED"
                refused += 1
                session.stack.close()
            else:
                sessions.append(session)
        assert len(sessions) <= MAX_SESSIONS and refused >= MAX_SESSIONS
    finally:
        for session in sessions:
            session.close()
    assert httpx.get(f"{server.url}/health").json() == {"status": "healthy"}


def test_control_an_honest_client_earns_the_reward_after_the_attacks(server: EnvServer) -> None:
    """Runs after the attacks above, on the same server: nothing they did changed what an honest fix earns."""
    with ServedEnv(server.url) as env:
        env.reset(options={"task_id": TASK})
        env.step(honest_fix())
        _, reward, terminated, truncated, info = env.step(tool_call("submit"))
        assert (reward, terminated, truncated) == (1.0, True, False)
        assert info["grade"]["resolved"] is True and info["end_reason"] == "submitted"
        env.reset(options={"task_id": TASK})
        _, reward, terminated, _, info = env.step(tool_call("submit"))  # and no fix earns nothing
        assert (reward, terminated, info["grade"]["resolved"]) == (0.0, True, False)
