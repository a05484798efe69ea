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
from gym_swe.errors import ConfigError, GymSweError, TaskError
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


def test_a_message_whose_calls_are_in_its_text_records_each_call_once(env: Any) -> None:
    """An assistant message (a dict) without structured tool_calls: its text's calls become tool_calls, and
    the text the chat keeps is what is left, as for a plain string (the model would see each call twice)."""
    env.reset(options={"task_id": "GymSwe/0"})
    env.step({"role": "assistant", "content": "Looking first. " + bash("echo hi")})
    said = env.messages[2]
    assert said["content"] == "Looking first." and "<tool_call>" not in said["content"]
    assert [call["function"]["name"] for call in said["tool_calls"]] == ["bash"]
    env.step({"role": "assistant", "content": "no call at all"})  # nothing parsed: kept as written
    assert env.messages[4] == {"role": "assistant", "content": "no call at all"}


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


class RecordingSandboxes(CodeDebugEnv):
    """CodeDebugEnv noting the extra options each sandbox it makes gets."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.extras: list[Any] = []

    def new_sandbox(self, task: Any, extra: Any = None) -> Sandbox:
        self.extras.append(extra)
        return super().new_sandbox(task, extra)


def test_a_resets_sandbox_options_are_the_agents_sandbox_only_merged_over_the_envs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """How a harness run inside the sandbox gets its files: binds and variables merged with the env's own,
    for the agent's sandbox; grading's fresh sandbox gets none of them."""
    require_bwrap()
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "mark").write_text(name + "\n")
    env = RecordingSandboxes(
        sandbox_options={"env": {"FROM_ENV": "1"}, "ro_binds": {str(tmp_path / "a"): "/opt/a"}}
    )
    try:
        episode = {"env": {"FROM_RESET": "2"}, "ro_binds": {str(tmp_path / "b"): "/opt/b"}}
        env.reset(options={"task_id": "GymSwe/0", "sandbox_options": episode})
        shown = env.step(bash("cat /opt/a/mark /opt/b/mark; echo $FROM_ENV $FROM_RESET"))[0]
        assert shown.split() == ["a", "b", "1", "2"]
        *_, info = env.step(SUBMIT)
        assert info["end_reason"] == "submitted"
        assert env.extras == [episode, None]  # the agent's sandbox, then grading's
        with pytest.raises(ConfigError, match="'sandbox_options' must be a mapping"):
            env.reset(options={"task_id": "GymSwe/0", "sandbox_options": ["ro_binds"]})
        with pytest.raises(ConfigError, match="allowed: 'task_id', 'sandbox_options'"):
            env.reset(options={"task": "GymSwe/0"})
    finally:
        env.close()


def test_merged_sandbox_options_merge_binds_and_variables_and_replace_the_rest() -> None:
    from gym_swe.envs.base import merged_sandbox_options

    task = {"workdir": "/testbed", "ro_binds": ["/venv"], "env": {"PATH": "/venv/bin"}, "image": "t"}
    layer = {"ro_binds": {"/h": "/opt/h"}, "env": {"HOME": "/tmp/h"}, "image": "u"}
    assert merged_sandbox_options(task, layer) == {
        "workdir": "/testbed",
        "ro_binds": {"/venv": "/venv", "/h": "/opt/h"},
        "env": {"PATH": "/venv/bin", "HOME": "/tmp/h"},
        "image": "u",
    }
