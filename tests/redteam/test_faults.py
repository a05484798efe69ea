"""Faults from outside the agent's control: the episode ends truncated with info["error"] (never an
exception out of step), what it recorded is all there, and the next reset works."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import kill_jail
from tests.redteam.scripted import SUBMIT, bash, make_env


def play_two_turns(env, task_id: str) -> None:  # type: ignore[no-untyped-def]
    env.reset(options={"task_id": task_id})
    assert env.step(bash("echo one"))[0] == "one"
    assert env.step(bash("echo two"))[0] == "two"


def assert_ended_with_the_record_intact(result: tuple, env) -> None:  # type: ignore[no-untyped-def]
    _observation, reward, terminated, truncated, info = result
    assert truncated and not terminated and reward == 0.0
    assert info["error"] and info["end_reason"] == "sandbox_error"
    assert "grade" in info and info["grade"]["error"]
    turns = env.unwrapped.history
    assert [turn.index for turn in turns] == [0, 1, 2]
    assert [t.observation for t in turns[:2]] == ["one", "two"]
    tool_outputs = [m["content"] for m in info["messages"] if m["role"] == "tool"]
    assert tool_outputs[:2] == ["one", "two"] and len(tool_outputs) == 3


def next_episode_works(env, task_id: str) -> None:  # type: ignore[no-untyped-def]
    env.reset(options={"task_id": task_id})
    assert env.step(bash("echo fresh"))[0] == "fresh"
    env.close()


@pytest.mark.parametrize("env_id, task_id", [("CodeDebug-v0", "GymSwe/0"), ("SWEGym-v0", "gymswe__inikit-1")])
def test_jail_killed_from_outside(env_id: str, task_id: str) -> None:
    env = make_env(env_id, "local")
    play_two_turns(env, task_id)
    kill_jail(env.unwrapped.sandbox)
    assert_ended_with_the_record_intact(env.step(bash("echo three")), env)
    next_episode_works(env, task_id)


@pytest.mark.parametrize("env_id, task_id", [("CodeDebug-v0", "GymSwe/0"), ("SWEGym-v0", "gymswe__inikit-1")])
def test_container_killed_from_outside(env_id: str, task_id: str) -> None:
    env = make_env(env_id, "docker")
    play_two_turns(env, task_id)
    env.unwrapped.sandbox.container.kill()
    assert_ended_with_the_record_intact(env.step(bash("echo three")), env)
    next_episode_works(env, task_id)


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_a_kill_from_outside_after_the_agents_own_oom_is_still_the_sandboxs_failure(backend: str) -> None:
    """An executor killed by the agent's own memory use is the agent's failure (test_containment); one killed
    from outside is not, even in an episode where the OOM killer already took one of the agent's commands."""
    from gym_swe.sandbox import Limits

    limits = Limits(memory_mb=512, tmp_mb=128, disk_mb=128)
    env = make_env("CodeDebug-v0", backend, limits=limits)
    env.reset(options={"task_id": "GymSwe/0"})
    assert "exit code -9" in env.step(bash("python3 -c 'x = bytearray(2 << 30)'"))[0]  # the OOM killer's
    assert env.step(bash("echo two"))[0] == "two"
    sandbox = env.unwrapped.sandbox
    if backend == "docker":
        sandbox.container.kill()
    else:
        os.kill(sandbox._jail_pid, signal.SIGKILL)  # the executor alone, as an OOM kill would take it
    _observation, reward, terminated, truncated, info = env.step(bash("echo three"))
    assert truncated and not terminated and reward == 0.0
    assert info["end_reason"] == "sandbox_error" and "sandbox died" in info["error"]
    assert info["grade"]["error"] and not info["grade"]["rejection"]
    next_episode_works(env, "GymSwe/0")


def restart_docker_daemon() -> None:
    from gym_swe.sandbox.docker import docker_client

    if Path("/run/systemd/system").exists():
        subprocess.run(["systemctl", "restart", "docker"], check=True)
    else:
        pids = subprocess.run(["pidof", "dockerd"], capture_output=True, text=True).stdout.split()
        if not pids:
            pytest.fail("no dockerd process to restart")
        for pid in pids:
            os.kill(int(pid), signal.SIGTERM)
        deadline = time.monotonic() + 60
        while any(Path(f"/proc/{pid}").exists() for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        with open("/tmp/gym_swe-dockerd.log", "ab") as log:
            subprocess.Popen(
                ["dockerd"], stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True
            )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            docker_client().ping()
            return
        except Exception:
            time.sleep(0.5)
    pytest.fail("dockerd did not come back")


@pytest.mark.alone  # every container of every other test dies with the daemon
def test_docker_daemon_restart_mid_episode() -> None:
    if os.geteuid() != 0:
        pytest.skip("restarting the Docker daemon needs root")
    env = make_env("CodeDebug-v0", "docker")
    play_two_turns(env, "GymSwe/0")
    restart_docker_daemon()
    assert_ended_with_the_record_intact(env.step(bash("echo three")), env)
    next_episode_works(env, "GymSwe/0")


def test_disk_full_when_grading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The host's disk fills up during an episode: grading cannot make its sandbox. The episode still ends
    normally from the agent's side, with the reason in info, and the next reset works once there is room."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs as the full disk needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], check=True)
    try:
        monkeypatch.setenv("GYM_SWE_WORKSPACES", str(disk))
        env = make_env("SWEGym-v0", "local", source_mode="copy")
        env.reset(options={"task_id": "gymswe__inikit-1"})
        assert env.step(bash("echo working"))[0] == "working"
        subprocess.run(["sh", "-c", f"cat /dev/zero > {disk}/filler"], capture_output=True)
        _observation, reward, terminated, _truncated, info = env.step(SUBMIT)
        assert terminated and reward == 0.0
        assert "No space left" in info["error"] and "No space left" in info["grade"]["error"]
        assert len(env.unwrapped.history) == 2
        (disk / "filler").unlink()
        next_episode_works(env, "gymswe__inikit-1")
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
