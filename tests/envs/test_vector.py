"""gymnasium.make_vec with both envs, both modes, default arguments: what a new user would try first.

Real sandboxes (bubblewrap), real worker processes, gymnasium's default shared memory in async mode."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import gymnasium
import pytest

import gym_swe  # noqa: F401
from gym_swe.sandbox.local import WORKSPACE_PREFIX, workspace_root
from tests.conftest import kill_jail, require_bwrap

MODES = ["sync", "async"]
SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'
UNICODE = "héllo ✓ 🙂 中文 Σλ"


def bash(command: str) -> str:
    return "<tool_call>" + json.dumps({"name": "bash", "arguments": {"command": command}}) + "</tool_call>"


@pytest.fixture
def make_vec():
    """gymnasium.make_vec, with every vector env it made closed at the end (also when a test fails)."""
    require_bwrap()
    made = []

    def make(env_id: str, num_envs: int, mode: str, **kwargs):  # type: ignore[no-untyped-def]
        envs = gymnasium.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode, **kwargs)
        made.append(envs)
        return envs

    yield make
    for envs in made:
        envs.close()


# -- the env's own resources: its sandboxes' directories and processes -----------------------------------
def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        children = _children(todo.pop())
        found += children
        todo += children
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def sandbox_resources(envs) -> tuple[set[Path], set[int]]:  # type: ignore[no-untyped-def]
    """The workspace directories and jail processes of the vector env's sandboxes, as they are now."""
    if isinstance(envs, gymnasium.vector.SyncVectorEnv):
        sandboxes = [env.unwrapped.sandbox for env in envs.envs if env.unwrapped.sandbox is not None]
        dirs = {box.host_dir for box in sandboxes}
        pids = {pid for box in sandboxes for pid in (box._process.pid, box._jail_pid)}
        return dirs, pids
    workers = [process.pid for process in envs.processes]
    dirs = {path for pid in workers for path in workspace_root().glob(f"{WORKSPACE_PREFIX}{pid}-*")}
    pids = {child for pid in workers for child in _descendants(pid)}
    return dirs, pids


def wait_until_dead(pids: set[int], seconds: float = 10.0) -> set[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.01)
    return {pid for pid in pids if _alive(pid)}


def crash_sandbox(envs, index: int) -> None:  # type: ignore[no-untyped-def]
    """Kill sub-env ``index``'s jail from outside, as the OOM killer would, and wait until it is gone."""
    if isinstance(envs, gymnasium.vector.SyncVectorEnv):
        kill_jail(envs.envs[index].unwrapped.sandbox)
        return
    worker = envs.processes[index].pid
    jail = set(_descendants(worker))
    assert jail, "the worker has no sandbox process to kill"
    for pid in _children(worker):
        os.killpg(pid, signal.SIGKILL)  # each sandbox leads its own process group
    assert not wait_until_dead(jail)


# -- observations: any text, any length -------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_reset_gives_each_sub_env_its_prompt(make_vec, mode: str) -> None:
    envs = make_vec("CodeDebug-v0", 3, mode)
    observations, infos = envs.reset(seed=7)
    single = gymnasium.make("CodeDebug-v0")
    try:
        assert isinstance(observations, tuple) and len(observations) == 3
        for index, observation in enumerate(observations):
            expected, _ = single.reset(options={"task_id": infos["task_id"][index]})
            assert observation == expected
            assert infos["messages"][index][1]["role"] == "user"
    finally:
        single.close()


@pytest.mark.parametrize("mode", MODES)
def test_non_ascii_and_long_output_come_back_exactly(make_vec, mode: str) -> None:
    envs = make_vec("CodeDebug-v0", 2, mode)
    envs.reset(seed=0)
    observations, rewards, terminated, truncated, _ = envs.step(
        (bash(f"echo '{UNICODE}'"), bash("echo plain"))
    )
    assert observations == (UNICODE, "plain")
    assert list(rewards) == [0.0, 0.0] and not terminated.any() and not truncated.any()

    long_line = "é✓🙂x" * 3_000  # 12,000 characters, 27,000 bytes of UTF-8; under max_observation_chars
    program = f"import sys; sys.stdout.write({long_line!r})"
    command = f'python3 -c "{program}"'
    observations, *_ = envs.step((bash(command), bash("printf ''")))
    assert observations[0] == long_line
    assert observations[1] != long_line  # the other slot holds its own text, not the neighbour's


@pytest.mark.parametrize("mode", MODES)
def test_shorter_text_after_longer_leaves_nothing_behind(make_vec, mode: str) -> None:
    envs = make_vec("CodeDebug-v0", 1, mode)
    envs.reset(seed=0)
    assert envs.step((bash("echo " + "ü" * 500),))[0] == ("ü" * 500,)
    assert envs.step((bash("echo ok"),))[0] == ("ok",)


# -- autoreset, as gymnasium defines NEXT_STEP --------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_next_step_autoreset(make_vec, mode: str) -> None:
    envs = make_vec("CodeDebug-v0", 2, mode)
    assert envs.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.NEXT_STEP
    envs.reset(seed=1)
    _, rewards, terminated, truncated, infos = envs.step((SUBMIT, bash("echo still")))
    assert list(terminated) == [True, False] and not truncated.any()
    assert infos["_grade"][0] and not infos["_grade"][1]
    assert rewards[0] == infos["reward_grade"][0]  # the grade's reward, on the step that ended the episode

    # The action after the end is not run: the sub-env starts its next episode instead.
    observations, rewards, terminated, truncated, infos = envs.step(
        (bash("touch /workspace/should_not_exist"), bash("echo on"))
    )
    assert observations[0].startswith("You are a careful software engineer")
    assert infos["_task_id"][0] and infos["_messages"][0] and len(infos["messages"][0]) == 2
    assert observations[1] == "on"
    assert list(rewards) == [0.0, 0.0] and not terminated.any() and not truncated.any()

    observations, *_ = envs.step((bash("ls /workspace"), bash("echo on")))
    assert "should_not_exist" not in observations[0] and "solution.py" in observations[0]


# -- sandboxes: closed with the vector env, a crash stays in its sub-env ----------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_sandboxes_close_with_the_vector_env(make_vec, mode: str) -> None:
    envs = make_vec("CodeDebug-v0", 3, mode)
    envs.reset(seed=2)
    envs.step((bash("sleep 300 &"), bash("echo x"), bash("echo y")))
    dirs, pids = sandbox_resources(envs)
    assert len(dirs) == 3 and all(path.is_dir() for path in dirs)
    assert pids and all(_alive(pid) for pid in pids)
    envs.close()
    assert not [path for path in dirs if path.exists()]
    assert not wait_until_dead(pids)


@pytest.mark.parametrize("mode", MODES)
def test_a_crashed_sandbox_ends_only_its_own_episode(make_vec, mode: str) -> None:
    envs = make_vec("CodeDebug-v0", 3, mode)
    envs.reset(seed=3)
    crash_sandbox(envs, 1)
    observations, rewards, terminated, truncated, infos = envs.step(
        (bash("echo zero"), bash("echo one"), bash(f"echo '{UNICODE}'"))
    )
    assert observations[0] == "zero" and observations[2] == UNICODE
    assert "sandbox stopped working" in observations[1]
    assert list(truncated) == [False, True, False] and not terminated.any()
    assert list(infos["_error"]) == [False, True, False] and infos["error"][1]
    assert infos["end_reason"][1] == "sandbox_error" and infos["grade"]["error"][1]
    assert list(rewards) == [0.0, 0.0, 0.0]

    observations, *_ = envs.step((bash("echo a"), bash("echo ignored"), bash("echo c")))
    assert observations[0] == "a" and observations[2] == "c"
    assert observations[1].startswith("You are a careful software engineer")  # its next episode, fresh jail
    observations, *_ = envs.step((bash("echo a"), bash("echo 'revived ✓'"), bash("echo c")))
    assert observations == ("a", "revived ✓", "c")


# -- SWEGym-v0 -------------------------------------------------------------------------------------------
def test_swegym_async_with_default_arguments(make_vec) -> None:
    envs = make_vec("SWEGym-v0", 2, "async")
    observations, infos = envs.reset(seed=0)
    assert all("/testbed" in observation for observation in observations)
    assert all(task_id.startswith("gymswe__") for task_id in infos["task_id"])
    observations, *_ = envs.step((bash(f"echo '{UNICODE}' && pwd"), bash("git status --short | wc -l")))
    assert observations == (f"{UNICODE}\n/testbed", "0")
    dirs, pids = sandbox_resources(envs)
    assert len(dirs) == 2
    envs.close()
    assert not [path for path in dirs if path.exists()]
    assert not wait_until_dead(pids)
