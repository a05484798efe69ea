"""Sandbox containment through the envs: what an agent can do to the machine it runs on, on both backends.

Each attack is a turn of an episode. It must stay inside the sandbox: the host is unaffected, and the episode
either goes on (the next command works) or ends with the reason in ``info``.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from gym_swe.sandbox import Limits
from tests.conftest import REPO_ROOT
from tests.redteam.scripted import bash, make_env

BACKENDS = ["local", "docker"]
LIMITS = Limits(memory_mb=512, processes=128, file_size_mb=64, disk_mb=128, tmp_mb=128)


@pytest.fixture(params=BACKENDS)
def env(request):
    environment = make_env("CodeDebug-v0", request.param, limits=LIMITS, max_observation_chars=4000)
    environment.reset(options={"task_id": "GymSwe/0"})
    yield environment
    environment.close()


def step(env, command: str) -> tuple[str, bool, dict]:  # type: ignore[no-untyped-def]
    observation, _, terminated, truncated, info = env.step(bash(command))
    return observation, terminated or truncated, info


def still_usable(env) -> None:  # type: ignore[no-untyped-def]
    observation, ended, _ = step(env, "echo still-here")
    # (after a fork bomb the sandbox may add a note that it cleared the leftover processes)
    assert not ended and observation.splitlines()[0] == "still-here"


def test_fork_bomb(env) -> None:
    step(env, ":(){ :|:& };:")
    still_usable(env)
    assert subprocess.run(["true"]).returncode == 0


def test_memory_bomb(env) -> None:
    observation, ended, _ = step(env, "python3 -c 'x = bytearray(6 * 1024**3); print(\"ALLOCATED\")'")
    assert not ended and "ALLOCATED" not in observation
    still_usable(env)


def test_disk_fill(env) -> None:
    one_file, _, _ = step(env, "head -c 200000000 /dev/zero > big; ls -l big")
    assert "File size limit exceeded" in one_file or "No space left" in one_file
    many, _, _ = step(
        env, "for i in $(seq 1 40); do head -c 60000000 /dev/zero > f$i || break; done; echo done"
    )
    assert "done" in many
    if env.unwrapped.sandbox_backend == "local":  # the workspace is a tmpfs of disk_mb
        assert "No space left" in many
    step(env, "rm -f big f*")
    still_usable(env)


def test_filling_every_place_it_can_write_ends_in_a_full_disk_not_a_dead_sandbox(env) -> None:
    """Every writable mount backed by memory is sized inside the memory budget: filled, it says "No space
    left" to the command, and the sandbox lives (an unsized one filled the jail's memory, and the OOM killer
    took the executor: an episode the trainer would drop as the sandbox's failure)."""
    local = env.unwrapped.sandbox_backend == "local"
    # (a container's /var/tmp and its workspace are on its writable layer: disk, bounded per file only)
    mounts = ["/tmp", "/dev/shm"] + (["/var/tmp", "/workspace"] if local else ["/dev"])
    for mount in mounts:
        observation, ended, info = step(
            env,
            f"for i in $(seq 1 12); do head -c 60000000 /dev/zero > {mount}/fill$i || break; done; df -m {mount} | tail -1",
        )
        assert not ended and "No space left" in observation, (mount, observation, info.get("error"))
    if local:  # the rest of the jail's root is read-only: bwrap makes it a tmpfs without a size
        observation, ended, _ = step(env, "for d in / /run /dev /var; do echo x > $d/fill; done 2>&1")
        assert not ended and observation.count("Read-only file system") == 4, observation
    still_usable(env)
    step(env, "rm -f " + " ".join(f"{mount}/fill*" for mount in mounts))
    still_usable(env)


def test_an_agent_that_uses_up_its_memory_fails_its_episode_scored(env) -> None:
    """The agent fills its memory-backed mounts, then starts processes each smaller than the executor until
    the OOM killer of the sandbox's own memory limit takes the largest: the executor. That is the agent's
    doing, so the episode ends as its failure, scored 0 with the reason, never as a sandbox error a trainer
    would leave out of the loss."""
    step(
        env,
        "for d in /tmp /dev/shm; do for i in 1 2 3; do head -c 60000000 /dev/zero > $d/f$i; done; done 2>&1",
    )
    observation, reward, terminated, truncated, info = env.step(
        bash(
            "for i in $(seq 100); do python3 -c 'import time; x = bytearray(3 << 20); time.sleep(30)' & done; wait"
        )
    )
    assert terminated and not truncated and reward == 0.0, info.get("error")
    assert "error" not in info and info["end_reason"] == "out_of_memory"
    assert "OOM killer" in info["grade"]["rejection"] and not info["grade"]["error"]
    assert "ran out of memory" in observation
    env.reset(options={"task_id": "GymSwe/0"})
    still_usable(env)


def test_endless_output(env) -> None:
    observation, ended, _ = step(env, "yes 'flood' & sleep 3; kill %1")
    assert not ended and len(observation) < 5000 and "characters cut here" in observation
    still_usable(env)


def test_sleeping_forever(env) -> None:
    call = '<tool_call>{"name": "bash", "arguments": {"command": "sleep 100000", "timeout": 2}}</tool_call>'
    observation, *_ = env.step(call)
    assert "timed out after 2 s" in observation
    still_usable(env)


def test_the_agent_cannot_kill_or_stop_its_executor(env) -> None:
    """The executor is the sandbox's pid 1: an agent that tries to end its episode as a "crash" (which a
    trainer would mask out rather than score) gets an ordinary turn, and the episode goes on."""
    _, ended, info = step(env, "kill -9 $PPID; kill -9 1; kill -STOP 1; kill -9 -1; echo tried")
    assert not ended and "error" not in info
    still_usable(env)


def test_reading_host_files(env, tmp_path: Path) -> None:
    secret = tmp_path / f"secret-{uuid.uuid4().hex}"
    secret.write_text("host secret")
    paths = [str(secret), str(REPO_ROOT / "README.md"), str(Path.home() / ".bashrc"), "/root", str(tmp_path)]
    observation, ended, _ = step(env, " ; ".join(f"cat {p} 2>&1 | head -c 200" for p in paths))
    assert not ended
    assert "host secret" not in observation and "make demo" not in observation


def test_other_episodes_workspaces_are_out_of_reach(env) -> None:
    other = make_env("CodeDebug-v0", env.unwrapped.sandbox_backend)
    try:
        other.reset(options={"task_id": "GymSwe/0"})
        marker = f"other-{uuid.uuid4().hex}"
        other.step(bash(f"echo {marker} > /workspace/{marker}.txt"))
        found, _, _ = step(env, f"find / -name '{marker}*' -not -path '/proc/*' 2>/dev/null")
        assert marker not in found
        assert "No such file" in step(env, f"cat /workspace/{marker}.txt")[0]
    finally:
        other.close()


def test_writing_outside_the_workspace_does_not_reach_the_host(env) -> None:
    name = f"gym_swe_escape_{uuid.uuid4().hex}"
    step(env, f"for d in / /tmp /var/tmp /etc /usr; do echo x > $d/{name}; done 2>&1")
    for directory in ("/", "/tmp", "/var/tmp", "/etc", "/usr"):
        assert not (Path(directory) / name).exists()
    if env.unwrapped.sandbox_backend == "local":
        observation, _, _ = step(env, f"echo x > /usr/{name}")
        assert "Read-only file system" in observation


def test_network_egress(env) -> None:
    observation, _, _ = step(
        env,
        "python3 -c \"import socket; socket.create_connection(('151.101.0.223', 80), timeout=3); print('OPEN')\" 2>&1;"
        " python3 -c \"import socket; print(socket.gethostbyname('deb.debian.org'))\" 2>&1",
    )
    assert "OPEN" not in observation
    assert "Errno" in observation or "gaierror" in observation or "unreachable" in observation.lower()


def test_signals_to_host_processes(env) -> None:
    victim = subprocess.Popen(["sleep", "300"])
    try:
        _observation, ended, info = step(env, f"kill -9 {victim.pid} {os.getpid()} 1; kill -9 -1")
        assert victim.poll() is None  # the host's process is untouched
        if ended:  # kill -1 reached the executor: the episode ends with the reason
            assert "sandbox died" in info["error"]
            env.reset(options={"task_id": "GymSwe/0"})
        still_usable(env)
    finally:
        victim.kill()
        victim.wait()
