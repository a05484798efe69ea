"""ToolEnv's side of the episode-env contract (gym_swe/envs/base.py): done, truncate, messages and close, on a
real CodeDebug-v0 env with a local sandbox. What its episodes do turn by turn is tests/envs/test_codedebug.py's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import gymnasium
import pytest

import gym_swe  # noqa: F401
from gym_swe.envs.codedebug import CodeDebugEnv
from gym_swe.errors import GymSweError, TaskError
from gym_swe.sandbox import Sandbox
from gym_swe.tasks.functions import load_function_tasks
from tests.conftest import require_bwrap
from tests.rollout.test_episode_env import assert_is_episode_env

SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'


def bash(command: str) -> str:
    return "<tool_call>" + json.dumps({"name": "bash", "arguments": {"command": command}}) + "</tool_call>"


@pytest.fixture
def env() -> Iterator[Any]:
    require_bwrap()
    environment = gymnasium.make("CodeDebug-v0")
    yield environment.unwrapped
    environment.close()


def test_the_local_env_is_an_episode_env(env: Any) -> None:
    assert_is_episode_env(env)
    env.reset(options={"task_id": "GymSwe/0"})
    assert_is_episode_env(env)  # while an episode runs too


def test_done_says_whether_an_episode_is_running(env: Any) -> None:
    assert env.done  # none yet
    env.reset(options={"task_id": "GymSwe/0"})
    assert not env.done
    env.step(bash("echo hi"))
    assert not env.done
    *_, terminated, _, _ = env.step(SUBMIT)
    assert terminated and env.done
    env.reset(options={"task_id": "GymSwe/1"})
    assert not env.done
    env.truncate("budget")
    assert env.done
    with pytest.raises(AttributeError):
        env.done = False  # read-only: only the env's own episode decides it


class BrokenPrepare(CodeDebugEnv):
    """CodeDebug whose workspace cannot be set up for GymSwe/1 (as a missing repository or image would)."""

    def _prepare(self, task: Any, sandbox: Sandbox) -> None:
        if task.task_id == "GymSwe/1":
            raise TaskError("the workspace of GymSwe/1 cannot be set up")
        super()._prepare(task, sandbox)


def test_a_reset_that_fails_leaves_no_episode_running() -> None:
    """It ended the episode before it, and started none: truncate and step refuse, a reset starts afresh."""
    require_bwrap()
    env = BrokenPrepare()
    try:
        env.reset(options={"task_id": "GymSwe/0"})
        env.step(bash("echo hi"))
        with pytest.raises(TaskError):
            env.reset(options={"task_id": "GymSwe/1"})
        assert env.done and env.sandbox is None
        with pytest.raises(GymSweError, match="call reset"):
            env.truncate("budget")
        with pytest.raises(GymSweError, match="call reset"):
            env.step(bash("echo hi"))
        env.reset(options={"task_id": "GymSwe/0"})
        assert not env.done and env.step(bash("echo ok"))[0] == "ok"
    finally:
        env.close()


def test_messages_are_the_chat_each_call_returned(env: Any) -> None:
    _, info = env.reset(options={"task_id": "GymSwe/0"})
    assert env.messages == info["messages"] and [m["role"] for m in env.messages] == ["system", "user"]
    *_, info = env.step(bash("echo hi"))
    assert env.messages == info["messages"]
    assert [m["role"] for m in env.messages] == ["system", "user", "assistant", "tool"]
    assert env.messages[-1]["content"] == "hi"
    info["messages"].append({"role": "user", "content": "planted"})  # the info holds a copy
    assert len(env.messages) == 4
    ended = env.truncate("budget")
    assert ended["messages"] == env.messages and len(env.messages) == 4
    env.reset(options={"task_id": "GymSwe/1"})
    assert len(env.messages) == 2  # a new episode's chat


def test_truncate_grades_the_work_as_at_max_turns_and_returns_the_reward_no_step_paid(env: Any) -> None:
    task = load_function_tasks("bundled").get("GymSwe/0")
    env.reset(options={"task_id": task.task_id})
    path = env.sandbox.workdir + "/solution.py"
    env.sandbox.write_file(path, task.fixed_code)  # the fix, as the agent would have written it
    sandbox = env.sandbox
    ended = env.truncate("max_model_len")
    assert ended["end_reason"] == "max_model_len" and ended["task_id"] == task.task_id
    assert ended["grade"]["resolved"] and ended["reward_grade"] == 1.0 and "error" not in ended
    assert env.sandbox is None and not sandbox.host_dir.exists()  # graded, then the sandbox went
    with pytest.raises(GymSweError, match="truncate\\(\\) after the episode ended"):
        env.truncate("again")


def test_close_ends_the_sandbox_and_may_be_called_twice(env: Any) -> None:
    env.reset(options={"task_id": "GymSwe/0"})
    sandbox = env.sandbox
    assert sandbox.host_dir.exists()
    env.close()
    assert env.sandbox is None and not sandbox.host_dir.exists()
    env.close()
