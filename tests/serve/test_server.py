"""``gym-swe serve``: a real server (OpenEnv's own server library, in .venv-serve) serving CodeDebug-v0 with
real bubblewrap sandboxes, spoken to over its real wire: health, metadata, schema, the task API, WebSocket
sessions, MCP tools, ``openenv validate``, capacity, reaping, shutdown, and the CLI's refusals."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import gymnasium
import httpx
import pytest

from gym_swe.tasks.functions import load_function_tasks
from tests.conftest import REPO_ROOT, require_bwrap
from tests.serve.conftest import MAX_TURNS, TASK, RawSession, honest_fix, tool_call
from tests.serve.server import EnvServer, serve_python

TOKEN = "s3cret-token-for-tests"


def test_health_metadata_schema_and_the_task_api(server: EnvServer) -> None:
    url = server.url
    assert httpx.get(f"{url}/health").json() == {"status": "healthy"}
    metadata = httpx.get(f"{url}/metadata").json()
    assert metadata["name"] == "CodeDebug-v0" and "48 tasks" in metadata["description"]
    schema = httpx.get(f"{url}/schema").json()
    assert {"text", "message", "truncate"} <= set(schema["action"]["properties"])
    assert {"text", "messages", "tools", "grade", "reward", "done"} <= set(
        schema["observation"]["properties"]
    )
    assert {"env_id", "max_turns", "running", "grade"} <= set(schema["state"]["properties"])

    tasks = load_function_tasks("bundled")
    assert httpx.get(f"{url}/list_environments").json() == ["CodeDebug-v0"]
    assert httpx.get(f"{url}/CodeDebug-v0/splits").json() == [
        {"name": "default", "type": "train", "num_tasks": 48}
    ]
    assert httpx.post(f"{url}/CodeDebug-v0/num_tasks", json={"split": "default"}).json() == {"num_tasks": 48}
    listed = httpx.post(f"{url}/CodeDebug-v0/tasks", json={"split": "default"}).json()["tasks"]
    assert [task["id"] for task in listed] == [task.task_id for task in tasks]
    env = gymnasium.make("CodeDebug-v0")
    third = httpx.post(f"{url}/CodeDebug-v0/task", json={"split": "default", "index": 3}).json()["task"]
    assert third == {
        "id": tasks[3].task_id,
        "index": 3,
        "prompt": env.unwrapped.opening_messages(tasks[3].task_id),
    }
    env.close()
    window = httpx.post(
        f"{url}/CodeDebug-v0/task_range", json={"split": "default", "start": 2, "stop": 4}
    ).json()
    assert [task["index"] for task in window["tasks"]] == [2, 3]

    out_of_range = httpx.post(f"{url}/CodeDebug-v0/task", json={"split": "default", "index": 48})
    assert out_of_range.status_code == 400
    wrong_split = httpx.post(f"{url}/CodeDebug-v0/num_tasks", json={"split": "train"})
    assert wrong_split.status_code == 400 and "Known: 'default'" in wrong_split.json()["detail"]
    assert httpx.get(f"{url}/SWEGym-v0/splits").status_code == 404


def test_a_session_plays_an_episode_and_its_grade_comes_only_at_the_end(server: EnvServer) -> None:
    with RawSession(server.url) as session:
        assert session.state()["running"] is False and session.state()["env_id"] == "CodeDebug-v0"
        opened = session.reset(task_id=TASK)["data"]
        observation = opened["observation"]
        assert [m["role"] for m in observation["messages"]] == ["system", "user"]
        assert [tool["function"]["name"] for tool in observation["tools"]] == [
            "bash",
            "str_replace_editor",
            "submit",
        ]
        assert observation["task_id"] == TASK and opened["done"] is False

        looked = session.step(text=tool_call("bash", command="ls"))["data"]
        assert looked["observation"]["text"] == "solution.py\ntest_solution.py"
        assert [m["role"] for m in looked["observation"]["messages"]] == [
            "assistant",
            "tool",
        ]  # only the new ones
        for hidden in ("grade", "reward_grade", "end_reason"):
            assert looked["observation"][hidden] is None
        state = session.state()
        assert state["running"] is True and state["grade"] is None and state["reward"] is None
        assert state["step_count"] == 1 and state["task_id"] == TASK

        session.step(text=honest_fix())
        ended = session.step(message={"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "submit", "arguments": "{}"}}]})["data"]  # fmt: skip
        assert ended["done"] is True and ended["reward"] == 1.0
        assert (
            ended["observation"]["terminated"] is True and ended["observation"]["end_reason"] == "submitted"
        )
        assert ended["observation"]["grade"]["resolved"] is True
        state = session.state()
        assert state["running"] is False and state["reward"] == 1.0 and state["grade"]["resolved"] is True

        after = session.step(text="ls")
        assert after["type"] == "error" and "EpisodeNotRunning" in after["data"]["message"]


def test_a_truncate_action_ends_the_episode_graded_as_at_max_turns(server: EnvServer) -> None:
    with RawSession(server.url) as session:
        session.reset(task_id=TASK)
        session.step(text=honest_fix())
        ended = session.step(truncate="token_budget")["data"]
        assert ended["done"] is True and ended["observation"]["truncated"] is True
        assert (
            ended["observation"]["end_reason"] == "token_budget" and ended["observation"]["grade"]["resolved"]
        )
        assert ended["reward"] == ended["observation"]["reward_grade"] == 1.0
        assert ended["observation"]["parse_errors"] is None  # not a step: no turn was played


def test_the_envs_tools_are_mcp_tools_that_play_turns_of_the_session(server: EnvServer) -> None:
    listed = httpx.post(
        f"{server.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    )
    tools = {tool["name"]: tool for tool in listed.json()["result"]["tools"]}
    env = gymnasium.make("CodeDebug-v0")
    for schema in env.unwrapped.toolbox.schemas():
        function = schema["function"]
        assert tools[function["name"]]["inputSchema"] == function["parameters"]
        assert tools[function["name"]]["description"] == function["description"]
    env.close()

    with RawSession(server.url) as session:
        early = session.mcp("tools/call", {"name": "bash", "arguments": {"command": "ls"}})
        assert "error" in early and "no episode" in early["error"]["message"]
        session.reset(task_id=TASK)
        wrote = session.mcp(
            "tools/call", {"name": "bash", "arguments": {"command": "echo hi > note && cat note"}}
        )
        assert wrote["result"]["content"][0]["text"] == "hi"
        state = session.state()
        assert state["step_count"] == 1 and state["running"] is True  # one turn, in this session's episode
        looked = session.step(text=tool_call("bash", command="cat note"))["data"]["observation"]
        assert looked["text"] == "hi"  # the same sandbox
        submitted = session.mcp("tools/call", {"name": "submit", "arguments": {}})
        assert "grade" not in json.dumps(submitted) and "resolved" not in json.dumps(
            submitted
        )  # agent-facing
        state = session.state()
        assert state["running"] is False and state["end_reason"] == "submitted" and state["grade"] is not None


def test_an_http_mcp_session_is_the_websocket_session_it_names(server: EnvServer) -> None:
    """OpenEnv's production shape: the trainer resets over the WebSocket, the agent calls tools over /mcp."""
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}
    session_id = httpx.post(f"{server.url}/mcp", json=rpc).json()["result"]["session_id"]
    try:
        with RawSession(server.url, query=f"?session_id={session_id}") as trainer:
            trainer.reset(task_id=TASK)
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "bash", "arguments": {"command": "pwd"}, "session_id": session_id}}  # fmt: skip
            answer = httpx.post(f"{server.url}/mcp", json=call).json()
            assert answer["result"]["content"][0]["text"] == "/workspace"
            assert trainer.state()["step_count"] == 1
    finally:
        close = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "openenv/session/close",
            "params": {"session_id": session_id},
        }
        assert httpx.post(f"{server.url}/mcp", json=close).json()["result"]["closed"] is True


def test_openenv_validate_passes_against_the_running_server(server: EnvServer) -> None:
    """The real ``openenv validate`` CLI in runtime mode; the docs record its report (docs/serve.md)."""
    openenv = str(Path(serve_python()).parent / "openenv")
    done = subprocess.run([openenv, "validate", "--url", server.url, "--json"], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["passed"] is True and report["mode"] == "simulation"
    criteria = [criterion["id"] for criterion in report["criteria"]]
    assert all(criterion["passed"] for criterion in report["criteria"])
    recorded = (REPO_ROOT / "docs" / "serve.md").read_text()
    for criterion in criteria:  # the recorded report is this one
        assert re.search(rf"PASS\s+{criterion}\b", recorded), criterion


def test_at_capacity_a_session_is_refused_at_once_idle_ones_are_reaped_and_the_token_guards(
    tmp_path: Path,
) -> None:
    require_bwrap()
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    from websockets.exceptions import InvalidStatus

    from gym_swe.serve.client import ServedEnv, ServerGone, ServerRefused

    flags = ["--max-sessions", "1", "--idle-timeout", "1", "--token-file", str(token_file)]
    with EnvServer("CodeDebug-v0", [f"max_turns={MAX_TURNS}"], flags) as guarded:
        # The token: everything but /health needs it, over HTTP and WebSocket alike.
        assert httpx.get(f"{guarded.url}/health").status_code == 200
        assert httpx.get(f"{guarded.url}/metadata").status_code == 401
        assert (
            httpx.get(f"{guarded.url}/metadata", headers={"Authorization": "Bearer wrong"}).status_code == 401
        )
        assert (
            httpx.get(f"{guarded.url}/metadata", headers={"Authorization": f"Bearer {TOKEN}"}).status_code
            == 200
        )
        with pytest.raises(InvalidStatus):
            RawSession(guarded.url)
        with pytest.raises(ServerRefused, match="bearer token"):
            ServedEnv(guarded.url)

        first = ServedEnv(guarded.url, token=TOKEN)
        first.reset(options={"task_id": TASK})
        assert len(guarded.leftovers()) == 1  # its sandbox's workspace
        # One session is the cap: a second is refused at once, over the WebSocket and the stateless HTTP reset.
        started = time.monotonic()
        with pytest.raises(ServerRefused, match="capacity"):
            ServedEnv(guarded.url, token=TOKEN)
        refused = httpx.post(f"{guarded.url}/reset", json={}, headers={"Authorization": f"Bearer {TOKEN}"})
        assert refused.status_code == 503 and "capacity" in refused.json()["detail"]
        assert time.monotonic() - started < 60  # answered, not queued until the first session ends

        # Idle past the timeout: the reaper closes the session, its sandbox goes, the slot is free again.
        deadline = time.monotonic() + 60
        while guarded.leftovers() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert guarded.leftovers() == []
        with pytest.raises(ServerGone, match="closed this session: SessionClosed"):
            first.step(tool_call("bash", command="ls"))
        assert first.done  # the episode is lost; the next reset opens a new session in the freed slot
        first.reset(options={"task_id": TASK})
        assert first.step(tool_call("bash", command="ls"))[0] == "solution.py\ntest_solution.py"
        first.close()


def test_a_production_server_serves_sessions_and_closes_every_sandbox_when_stopped() -> None:
    """OpenEnv's production mode: no stateless /reset, /step, /state; sessions as ever."""
    require_bwrap()
    from gym_swe.serve.client import ServedEnv

    with EnvServer("CodeDebug-v0", flags=["--max-sessions", "2", "--mode", "production"]) as stopping:
        assert httpx.post(f"{stopping.url}/reset", json={}).status_code == 404
        assert httpx.get(f"{stopping.url}/state").status_code == 404
        envs = [ServedEnv(stopping.url) for _ in range(2)]
        for env in envs:
            env.reset(options={"task_id": TASK})
        assert len(stopping.leftovers()) == 2
        # uvicorn shuts down gracefully, then re-raises the signal: the exit status says SIGTERM ended it.
        assert stopping.stop(signal.SIGTERM) in (0, -signal.SIGTERM)
        assert stopping.leftovers() == [], stopping.log()
        for env in envs:
            env.close()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["CodeDebg-v0"], "Unknown env 'CodeDebg-v0'. Did you mean 'CodeDebug-v0'?"),
        (
            ["CodeDebug-v0", "max_turn=3"],
            "Unknown keyword argument of CodeDebugEnv: 'max_turn'. Did you mean 'max_turns'?",
        ),
        (["CodeDebug-v0", "max_turns"], "make kwargs are KEY=VALUE words"),
        (["CodeDebug-v0", "sandbox=dokcer"], "Unknown sandbox 'dokcer'. Did you mean 'docker'?"),
        (["CodeDebug-v0", "max_step_seconds=0"], "max_step_seconds must be a finite number of seconds > 0"),
        (["CodeDebug-v0", "--host", "0.0.0.0"], "--host 0.0.0.0 exposes the server beyond this machine"),
        (["CodeDebug-v0", "--max-sessions", "0"], "--max-sessions must be >= 1"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2_before_the_server_starts(
    arguments: list[str], message: str
) -> None:
    done = subprocess.run([serve_python(), "-m", "gym_swe.cli", "serve", *arguments, "--port", "1"],
                          capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("gym-swe: error: ") and message in line


def test_without_openenv_the_command_says_how_to_get_it() -> None:
    """In the test environment (no OpenEnv: its mcp pin breaks mini-swe-agent's litellm)."""
    import sys

    done = subprocess.run([sys.executable, "-m", "gym_swe.cli", "serve", "CodeDebug-v0"], capture_output=True,
                          text=True, timeout=120, cwd=REPO_ROOT)  # fmt: skip
    assert done.returncode == 2
    assert 'pip install "gym-swe[serve]"' in done.stderr and "make serve-env" in done.stderr


def _processes_with(marker: str) -> list[int]:
    """Pids of this machine's processes whose command line holds ``marker`` (a jail's processes show here:
    its pid namespace is a child of the host's)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # gone meanwhile
        if marker in command:
            found.append(int(entry.name))
    return found


def _wait_until(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


@pytest.mark.parametrize("how", ["websocket step", "mcp tool call"])
def test_a_client_that_goes_away_mid_step_frees_its_sandbox_and_slot_within_seconds(how: str) -> None:
    """A client starts ``sleep 600`` and vanishes (its TCP connection shut, as when its process dies): the
    sleep is killed, the sandbox removed and the one slot free again well before the sleep would end. The
    control: while the client is connected the sleep runs, and the slot is taken."""
    require_bwrap()
    import socket

    from gym_swe.serve.client import ServedEnv, ServerRefused

    marker = f"{600 + time.time_ns() % 1000 / 1000:.3f}"  # `sleep 600.xyz`: this test's process alone
    with EnvServer("CodeDebug-v0", [f"max_turns={MAX_TURNS}"], ["--max-sessions", "1"]) as single:
        session = RawSession(single.url)
        session.reset(task_id=TASK)
        if how == "websocket step":
            frame = {"type": "step", "data": {"text": tool_call("bash", command=f"sleep {marker}")}}
        else:
            call = {"name": "bash", "arguments": {"command": f"sleep {marker}"}}
            frame = {
                "type": "mcp",
                "data": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
            }
        session.socket.send(json.dumps(frame))
        assert _wait_until(lambda: bool(_processes_with(f"sleep {marker}")), 60), single.log()[-2000:]
        # The control: connected, the command runs on and the slot is taken.
        with pytest.raises(ServerRefused, match="capacity"):
            ServedEnv(single.url).reset(options={"task_id": TASK})
        assert _processes_with(f"sleep {marker}") and len(single.leftovers()) == 1

        session.socket.socket.shutdown(socket.SHUT_RDWR)  # gone without a word
        session.stack.close()
        assert _wait_until(lambda: not _processes_with(f"sleep {marker}"), 60), (
            "the sleep outlived its client"
        )
        assert _wait_until(lambda: single.leftovers() == [], 60), single.leftovers()
        fresh = ServedEnv(single.url)  # the one slot is free again
        fresh.reset(options={"task_id": TASK})
        assert fresh.step(tool_call("bash", command="echo here"))[0] == "here"
        fresh.close()
        assert single.alive() and "Traceback" not in single.log(), single.log()[-4000:]
