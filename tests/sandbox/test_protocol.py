"""The host reads every executor frame strictly. Nothing in a sandbox can write to the executor's pipes (see
test_contract), so these tests play the part of a broken boundary from the host side: as root, they write
frames into the real executor's stdout, through /proc, while the real sandbox runs. Every violation must
crash the sandbox with a reason, never raise anything else, and never make the host read without bound."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from gym_swe.errors import SandboxCrashedError
from gym_swe.sandbox.protocol import MAX_HEADER_BYTES, ProtocolViolation, check_reply, parse_header
from tests.redteam.scripted import bash, make_env


def executor_pid(sandbox) -> int:  # type: ignore[no-untyped-def]
    if sandbox.backend == "local":
        return sandbox._jail_pid
    sandbox.container.reload()
    return int(sandbox.container.attrs["State"]["Pid"])


def inject(sandbox, data: bytes, delay: float = 0.0) -> threading.Thread:  # type: ignore[no-untyped-def]
    """Write ``data`` into the executor's stdout from the host, after ``delay`` seconds, without blocking."""
    if os.geteuid() != 0:
        pytest.skip("writing into another process's pipe through /proc needs root")
    path = f"/proc/{executor_pid(sandbox)}/fd/1"

    def write() -> None:
        time.sleep(delay)
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        try:
            view = memoryview(data)
            deadline = time.monotonic() + 10
            while view and time.monotonic() < deadline:
                try:
                    view = view[os.write(fd, view) :]
                except BlockingIOError:
                    time.sleep(0.01)
                except BrokenPipeError:
                    return  # the host gave up reading, as it should
        finally:
            os.close(fd)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def exec_reply(request_id: int, **changes: object) -> bytes:
    reply = {
        "ok": True, "id": request_id, "size": 0, "exit_code": 0, "timed_out": False, "interrupted": False,
        "duration": 0.0,
        "stdout_size": 0, "stdout_head": 0, "stdout_cut": 0, "stderr_size": 0, "stderr_head": 0, "stderr_cut": 0,
    }  # fmt: skip
    reply.update(changes)
    return json.dumps(reply).encode() + b"\n"


def test_bytes_nobody_asked_for_crash_the_sandbox(sandbox) -> None:
    inject(sandbox, exec_reply(sandbox._next_id + 1)).join()
    time.sleep(0.2)
    with pytest.raises(SandboxCrashedError, match="no request asked for"):
        sandbox.exec("echo hi")
    assert not sandbox.alive


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        (lambda n: exec_reply(n, extra="x"), "unexpected fields"),
        (lambda n: exec_reply(n + 7), "where"),
        (lambda n: exec_reply(n, exit_code="0"), "bad 'exit_code'"),
        (lambda n: exec_reply(n, stdout_size=5, size=3), "do not add up"),
        (lambda n: exec_reply(n, size=10**12, stdout_size=10**12), "over the"),
        (lambda n: b"[1, 2, 3]\n", "not an object"),
        (lambda n: b"\xff\xfe not json\n", "not JSON"),
    ],
    ids=["extra field", "wrong id", "wrong type", "sizes", "gigantic payload", "not an object", "not json"],
)
def test_a_forged_reply_crashes_the_sandbox_with_the_reason(sandbox, frame, reason: str) -> None:  # type: ignore[no-untyped-def]
    writer = inject(sandbox, frame(sandbox._next_id + 1), delay=0.5)
    with pytest.raises(SandboxCrashedError, match="protocol violation") as raised:
        sandbox.exec("sleep 3; echo real", timeout=30)
    writer.join()
    assert reason in str(raised.value)


def test_a_header_without_end_is_not_read_without_bound(sandbox) -> None:
    writer = inject(sandbox, b"{" + b"x" * (8 * MAX_HEADER_BYTES), delay=0.5)
    with pytest.raises(SandboxCrashedError, match="header line longer than"):
        sandbox.exec("sleep 3", timeout=30)
    writer.join()
    assert len(sandbox._buffer) == 0


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_a_forged_frame_during_a_step_ends_the_episode_with_the_reason(backend: str) -> None:
    env = make_env("CodeDebug-v0", backend)
    try:
        env.reset(options={"task_id": "GymSwe/0"})
        box = env.unwrapped.sandbox
        inject(box, exec_reply(box._next_id + 1, bogus=True), delay=0.5)
        _, reward, terminated, truncated, info = env.step(bash("sleep 3; echo real"))
    finally:
        env.close()
    assert truncated and not terminated and reward == 0.0
    assert "protocol violation" in info["error"]
    assert info["end_reason"] == "sandbox_error"


def test_check_reply_accepts_exactly_the_schema() -> None:
    good = json.loads(exec_reply(3, size=5, stdout_size=3, stderr_size=2, stdout_head=3, stderr_head=2))
    check_reply("exec", 3, good, max_payload=100)
    error = {"ok": False, "id": 4, "size": 0, "kind": "FileNotFoundError", "error": "no such file"}
    check_reply("read", 4, error, max_payload=0)
    with pytest.raises(ProtocolViolation):
        check_reply("read", 4, {**error, "size": 3}, max_payload=10)  # an error carries no payload
    with pytest.raises(ProtocolViolation):
        check_reply("kill_all", 5, {"ok": True, "id": 5, "size": 0, "killed": -1, "left": 0}, max_payload=0)
    with pytest.raises(ProtocolViolation):
        parse_header(b'{"ok": true}')  # no size


def test_check_reply_takes_records_only_where_they_were_asked_for_and_within_their_bound() -> None:
    plain = json.loads(exec_reply(3, size=5, stdout_size=3, stderr_size=2, stdout_head=3, stderr_head=2))
    records = {**plain, "size": 9, "records_size": 4, "records_cut": 7}
    check_reply("exec", 3, records, max_payload=100, max_records=4)
    with pytest.raises(ProtocolViolation, match="unexpected fields"):
        check_reply("exec", 3, records, max_payload=100)  # records nobody asked for
    with pytest.raises(ProtocolViolation, match="missing"):
        check_reply("exec", 3, plain, max_payload=100, max_records=4)  # asked for, and none came
    with pytest.raises(ProtocolViolation, match="over the 3 asked for"):
        check_reply("exec", 3, records, max_payload=100, max_records=3)
    with pytest.raises(ProtocolViolation, match="do not add up"):
        check_reply("exec", 3, {**records, "records_size": 2}, max_payload=100, max_records=4)
