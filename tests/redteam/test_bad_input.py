"""Bad input from models and users: clear errors for users, model-facing messages for models, never a crash
of the env and never lost data."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium
import pytest

from gym_swe.errors import ConfigError, TaskError, TaskFormatError
from gym_swe.rollout.trajectory import Trajectory, load_jsonl, save_jsonl
from gym_swe.sandbox import Limits
from gym_swe.tasks.functions import load_function_tasks
from gym_swe.tasks.swe import load_swe_tasks
from gym_swe.tools.parsing import MAX_ERROR_CHARS, MAX_ERRORS
from tests.redteam.scripted import bash, make_env, run_episode, write

ENVS = [("CodeDebug-v0", "GymSwe/0"), ("SWEGym-v0", "gymswe__inikit-1")]
BACKENDS = ["local", "docker"]


class Weird:
    def __repr__(self) -> str:
        raise RuntimeError("even repr fails")


BAD_ACTIONS = {
    "None": None,
    "int": 42,
    "float": 3.5,
    "list": ["bash", "ls"],
    "object with a failing repr": Weird(),
    "message without content or calls": {"role": "assistant"},
    "tool_calls not a list": {"role": "assistant", "tool_calls": "ls -la"},
    "tool call with a numeric name": {
        "role": "assistant",
        "tool_calls": [{"function": {"name": 5, "arguments": {}}}],
    },
    "arguments that are not JSON": {
        "role": "assistant",
        "tool_calls": [{"function": {"name": "bash", "arguments": "{oops"}}],
    },
    "invalid UTF-8": b"\xff\xfe<tool_call>\xc3\x28</tool_call>",
    "control characters": "\x00\x01\x02<tool_call>\x1b[31m</tool_call>",
    "unknown tool": '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>',
    "wrong argument types": '<tool_call>{"name": "bash", "arguments": {"command": ["ls"], "timeout": "soon"}}</tool_call>',
    "editor with bad view_range": '<tool_call>{"name": "str_replace_editor", "arguments": {"command": "view", "path": "/etc/passwd", "view_range": "abc"}}</tool_call>',
    "editor insert_line as text": '<tool_call>{"name": "str_replace_editor", "arguments": {"command": "insert", "path": "/nope", "insert_line": "x", "new_str": 1}}</tool_call>',
}


@pytest.mark.parametrize(("env_id", "task_id"), ENVS)
def test_bad_actions_become_messages_and_lose_nothing(env_id: str, task_id: str) -> None:
    env = make_env(env_id, "local", max_turns=len(BAD_ACTIONS) + 5)
    env.reset(options={"task_id": task_id})
    for name, action in BAD_ACTIONS.items():
        observation, _reward, terminated, truncated, info = env.step(action)
        assert isinstance(observation, str) and observation, name
        assert not (terminated or truncated), name
        assert (
            info["parse_errors"]
            or "No tool call" in observation
            or "must be" in observation
            or "Unknown" in observation
        ), name
    # Every turn was recorded, and the episode goes on.
    assert len(env.unwrapped.history) == len(BAD_ACTIONS)
    assert env.step(bash("echo fine"))[0] == "fine"
    env.close()


@pytest.mark.parametrize(("env_id", "task_id"), ENVS)
def test_an_enormous_action_ends_by_the_context_budget_not_a_crash(env_id: str, task_id: str) -> None:
    env = make_env(env_id, "local")
    env.reset(options={"task_id": task_id})
    flood = bash("echo " + "y" * 3_000_000)
    observation, _reward, _terminated, truncated, info = env.step(flood)
    assert truncated and info["end_reason"] == "context_budget" and "grade" in info
    assert len(observation) <= env.unwrapped.max_observation_chars + 100


@pytest.mark.parametrize(("env_id", "task_id"), ENVS)
def test_unknown_task_id_suggests_the_nearest(env_id: str, task_id: str) -> None:
    env = make_env(env_id, "local")
    with pytest.raises(TaskError) as raised:
        env.reset(options={"task_id": task_id[:-1] + "9x"})
    assert "Did you mean" in str(raised.value)
    with pytest.raises(ConfigError, match="unknown key"):
        env.reset(options={"task": task_id})


@pytest.mark.parametrize("env_id", ["CodeDebug-v0", "SWEGym-v0"])
@pytest.mark.parametrize(("kwargs", "message"), [
    ({"sandbox": "podman"}, "Unknown sandbox 'podman'"),
    ({"reward": "dense"}, "Unknown reward 'dense'"),
    ({"max_turns": -1}, "max_turns must be a positive int"),
    ({"format_penalty": -1}, "format_penalty must be a number >= 0"),
    ({"tools": ["bash", "curl"]}, "Unknown tool 'curl'"),
    ({"max_observation_chars": 5}, "max_observation_chars must be an int >= 100"),
    ({"tasks": "nope"}, "Unknown task source 'nope'"),
    ({"render_mode": "rgb_array"}, "Unknown render_mode 'rgb_array'"),
    ({"max_turnz": 3}, "Did you mean 'max_turns'"),
])  # fmt: skip
def test_invalid_kwargs_fail_at_make(env_id: str, kwargs: dict, message: str) -> None:
    with pytest.raises((ConfigError, TaskError), match=message.replace("(", r"\(")):
        gymnasium.make(env_id, **kwargs)


def test_malformed_dataset_rows_name_the_row(tmp_path: Path) -> None:
    codedebug = tmp_path / "functions.jsonl"
    codedebug.write_text(json.dumps({"task_id": "x"}) + "\n")
    with pytest.raises(TaskFormatError, match="row 1: missing field 'prompt'"):
        gymnasium.make("CodeDebug-v0", tasks=str(codedebug))
    swe = tmp_path / "swe.jsonl"
    swe.write_text('{"instance_id": "a__b-1"}\nnot json\n')
    with pytest.raises(TaskFormatError, match="row 2: not valid JSON"):
        gymnasium.make("SWEGym-v0", tasks=str(swe))


@pytest.mark.parametrize(("env_id", "task_id"), ENVS)
def test_a_message_of_a_million_broken_calls_gets_bounded_feedback(env_id: str, task_id: str) -> None:
    """Parse errors quote what the model wrote and were one per broken call: a megabyte of unclosed calls
    became a 27 MB user message. Each error and all of them together are bounded like any observation."""
    env = make_env(env_id, "local", max_context_chars=50_000_000)  # the episode goes on after each flood
    env.reset(options={"task_id": task_id})
    limit = env.unwrapped.max_observation_chars
    for unit in (
        "<tool_call>{",
        "[TOOL_CALLS]",
        '<tool_call>{"name": "' + "n" * 5000 + '", "arguments": {}}</tool_call>',
    ):
        flood = unit * (999_000 // len(unit))
        observation, _reward, terminated, truncated, info = env.step(flood)
        assert not (terminated or truncated), info.get("error")
        feedback = env.unwrapped.messages[-1]
        assert feedback["role"] == "user" and len(feedback["content"]) <= limit + 100, len(
            feedback["content"]
        )
        assert len(observation) <= limit + 100
        assert len(info["parse_errors"]) == MAX_ERRORS + 1
        assert all(len(message) <= MAX_ERROR_CHARS for message in info["parse_errors"])
        assert "could not be read either" in info["parse_errors"][-1]
    # The control: one broken call still gets its whole, helpful message, and the episode goes on.
    observation, *_ = env.step("<tool_call>{'name': 'bash', 'arguments': {'command': 'ls'}}</tool_call>")
    assert "double quotes" in observation
    assert env.step(bash("echo fine"))[0] == "fine"
    env.close()


def _saved_and_loaded(info: dict, tmp_path: Path) -> Trajectory:
    trajectory = Trajectory(
        "t", grade=info["grade"], messages=info["messages"], end_reason=info["end_reason"]
    )
    return load_jsonl(save_jsonl([trajectory], tmp_path / "t.jsonl"))[0]


# File names of any bytes the file system takes: not UTF-8 (a file, and a directory holding one), and one git
# will not put in a tree. A file holding a byte that is not UTF-8, beside them.
ODD_NAMES = (
    "cd /testbed && printf 'x = 1\\n' > \"$(printf 'notes\\377.py')\" && mkdir -p \"$(printf 'pkg\\376')\" "
    "&& printf 'y = 2\\n' > \"$(printf 'pkg\\376/mod.py')\" && mkdir -p .Git && echo z > .Git/hooks.py "
    "&& printf '\\ncaf\\351\\n' >> README.md && ls"
)


@pytest.mark.parametrize("backend", BACKENDS)
def test_file_names_and_bytes_that_are_not_utf8_are_graded_and_saved(backend: str, tmp_path: Path) -> None:
    """Such a name made the host's diff raise out of step(), and such a byte made the grade unsavable. Now
    the names are dropped with the reason, the byte is graded as it is and shown escaped, and the episode
    saves: with the fix beside them it still earns 1.0, without it 0.0, never an error."""
    task = load_swe_tasks("bundled").get("gymswe__inikit-1")
    fix = [write("/tmp/fix.diff", task.patch), bash("cd /testbed && git apply /tmp/fix.diff && echo applied")]
    env = make_env("SWEGym-v0", backend)
    try:
        for actions, earned in (([bash(ODD_NAMES), *fix], 1.0), ([bash(ODD_NAMES)], 0.0)):
            reward, terminated, _, info = run_episode(env, task.instance_id, actions)
            assert terminated and reward == earned and "error" not in info, info.get("error") or info["grade"]
            log = info["grade"]["log"]
            assert "dropped notes\\xff.py: a file name that is not valid UTF-8" in log, log
            assert "dropped pkg\\xfe/mod.py: a file name that is not valid UTF-8" in log, log
            assert "dropped .Git/hooks.py: a path git does not take" in log, log
            assert "+caf\\xe9" in info["grade"]["diff"] and "bytes that are not UTF-8 in the diff" in log
            back = _saved_and_loaded(info, tmp_path)
            assert back.grade == info["grade"] and back.end_reason == "submitted"
    finally:
        env.close()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "leave",
    [
        "rm solution.py && mkfifo solution.py",
        "ln -sf /dev/tty solution.py",
        "ln -sf /proc/self/fd/0 solution.py",
    ],
)
def test_a_solution_that_is_not_a_file_is_graded_as_unreadable(backend: str, leave: str) -> None:
    """A FIFO hung the executor's read until the host gave up on it, and a link to a device made grading
    fail: either way the episode ended "not graded", which a trainer leaves out. It is graded, and fails."""
    env = make_env("CodeDebug-v0", backend)
    try:
        reward, terminated, _, info = run_episode(env, "GymSwe/0", [bash(f"cd /workspace && {leave}")])
    finally:
        env.close()
    assert terminated and reward == 0.0 and "error" not in info, info.get("error")
    assert info["grade"]["total"] > 0 and info["grade"]["passed"] == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_solution_with_bytes_that_are_not_utf8_is_graded_as_written(backend: str, tmp_path: Path) -> None:
    task = load_function_tasks("bundled").get("GymSwe/0")
    latin1 = "# -*- coding: latin-1 -*-\n# caf\xe9\n" + task.fixed_code
    encode = 'python3 -c \'import sys; open("/workspace/solution.py", "wb").write(open("/tmp/s.py").read().encode("latin-1"))\''
    env = make_env("CodeDebug-v0", backend)
    try:
        reward, terminated, _, info = run_episode(
            env, task.task_id, [write("/tmp/s.py", latin1), bash(encode)]
        )
    finally:
        env.close()
    assert terminated and reward == 1.0, info["grade"]
    assert "+# caf\\xe9" in info["grade"]["diff"] and "bytes that are not UTF-8" in info["grade"]["log"]
    assert _saved_and_loaded(info, tmp_path).grade == info["grade"]


@pytest.mark.parametrize("sandbox", BACKENDS)
def test_limits_whose_tmpfs_mounts_could_outgrow_memory_fail_at_make(sandbox: str) -> None:
    with pytest.raises(ConfigError, match=r"Limits\.tmp_mb=1024"):
        gymnasium.make("CodeDebug-v0", sandbox=sandbox, limits=Limits(memory_mb=1024))
    fits = Limits(memory_mb=1024, tmp_mb=256)  # disk_mb keeps its default, 2048: the local workspace tmpfs
    if sandbox == "local":
        with pytest.raises(ConfigError, match=r"Limits\.disk_mb=2048"):
            gymnasium.make("CodeDebug-v0", sandbox=sandbox, limits=fits)
    else:
        gymnasium.make("CodeDebug-v0", sandbox=sandbox, limits=fits).close()
