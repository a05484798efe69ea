"""The bound on one step (gym_swe/envs/step_bound.py): the cap on tool calls per action, the step's wall-clock
bound, `ToolEnv.interrupt`, and an agent's attempts to hold a step past its bound, each with its control.

Real bubblewrap sandboxes. Every command that should be cut writes a marker after a sleep much longer than the
bound: the marker's absence when the step returns says the step did not wait for it, with no timing in the
assertion. The bounds here are a few seconds, the sleeps 30 s or more.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from typing import Any

import gymnasium
import pytest

import gym_swe  # noqa: F401
from gym_swe.errors import ConfigError
from gym_swe.tasks.functions import load_function_tasks
from tests.conftest import require_bwrap

TASK = "GymSwe/1"
BOUND = 4.0
"""Seconds of the attacked steps: far below their sleeps, well above what their quick calls need."""
MARKERS = "/workspace/markers"


def bash(command: str, **arguments: Any) -> str:
    call = {"name": "bash", "arguments": {"command": command, **arguments}}
    return "<tool_call>" + json.dumps(call) + "</tool_call>"


def mark(name: str) -> str:
    """A command that appends ``name`` to the markers file."""
    return f"echo {name} >> {MARKERS}"


def markers(env: Any) -> list[str]:
    try:
        return env.sandbox.read_file(MARKERS).decode().split()
    except FileNotFoundError:
        return []


@pytest.fixture
def make() -> Iterator[Any]:
    """Makes CodeDebug-v0 envs with the given kwargs, reset on TASK; closes them at the end."""
    require_bwrap()
    made: list[Any] = []

    def made_env(**kwargs: Any) -> Any:
        environment = gymnasium.make("CodeDebug-v0", **kwargs)
        made.append(environment)
        environment.reset(options={"task_id": TASK})
        return environment.unwrapped

    yield made_env
    for environment in made:
        environment.close()


# -- the kwargs ---------------------------------------------------------------------------------------------
def test_the_defaults_bound_every_step() -> None:
    env = gymnasium.make("CodeDebug-v0").unwrapped
    assert env.max_tool_calls == 32 and env.max_step_seconds == 600.0
    env.close()


@pytest.mark.parametrize("env_id", ["CodeDebug-v0", "SWEGym-v0"])
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_tool_calls": 0}, "max_tool_calls must be an int >= 1"),
        ({"max_tool_calls": 2.5}, "max_tool_calls must be an int >= 1"),
        ({"max_tool_calls": True}, "max_tool_calls must be an int >= 1"),
        ({"max_step_seconds": 0}, "max_step_seconds must be a finite number of seconds > 0"),
        ({"max_step_seconds": -3.0}, "max_step_seconds must be a finite number of seconds > 0"),
        ({"max_step_seconds": float("inf")}, "max_step_seconds must be a finite number of seconds > 0"),
        ({"max_step_seconds": "60"}, "max_step_seconds must be a finite number of seconds > 0"),
        ({"max_step_second": 60}, "Did you mean 'max_step_seconds'?"),
    ],
)
def test_a_wrong_bound_fails_at_make_naming_what_is_allowed(
    env_id: str, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        gymnasium.make(env_id, **kwargs)
    assert message in str(raised.value) and "\n" not in str(raised.value)


# -- the cap on calls ---------------------------------------------------------------------------------------
def test_calls_past_the_cap_are_not_run_and_the_agent_hears_so(make: Any) -> None:
    env = make(max_tool_calls=3)
    action = "".join(bash(mark(f"m{index}")) for index in range(5))
    observation, _, terminated, truncated, info = env.step(action)
    assert markers(env) == ["m0", "m1", "m2"]
    assert info["step_limit"] == "max_tool_calls" and not (terminated or truncated)
    assert "2 tool call(s) past the limit of 3 per turn were not run" in observation
    tool_messages = [m["content"] for m in info["messages"] if m["role"] == "tool"]
    assert tool_messages[3:] == ["(not run: past the limit of 3 tool calls per turn)"] * 2
    assert "past the limit of 3" in info["messages"][-1]["content"]  # the chat says it too, as a user note
    # The episode goes on, and the next turn has the whole cap again.
    env.step(bash(mark("next")))
    assert markers(env)[-1] == "next"


def test_control_calls_within_the_cap_all_run(make: Any) -> None:
    env = make(max_tool_calls=5)
    _, _, _, _, info = env.step("".join(bash(mark(f"m{index}")) for index in range(5)))
    assert markers(env) == [f"m{index}" for index in range(5)] and "step_limit" not in info


def test_submit_past_the_cap_is_not_run(make: Any) -> None:
    env = make(max_tool_calls=1)
    submit = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'
    _, _, terminated, _, info = env.step(bash("true") + submit)
    assert not terminated and info["step_limit"] == "max_tool_calls" and not env.done


# -- the step's time ----------------------------------------------------------------------------------------
def test_when_the_steps_time_runs_out_the_running_command_stops_and_the_rest_is_not_run(make: Any) -> None:
    env = make(max_step_seconds=BOUND)
    action = bash(mark("first")) + bash(f"sleep 30 && {mark('slept')}") + bash(mark("after"))
    observation, _, terminated, truncated, info = env.step(action)
    assert markers(env) == ["first"]
    assert info["step_limit"] == "max_step_seconds" and not (terminated or truncated)
    assert f"may take {BOUND:g} s together, so call 2 was stopped and the 1 call(s) after it" in observation
    assert "[the command was interrupted]" in observation  # the step stopped it, not a timeout it asked for
    tool_messages = [m["content"] for m in info["messages"] if m["role"] == "tool"]
    assert tool_messages[2] == "(not run: this turn was cut short before this call)"
    assert env.history[-1].step_limit == "max_step_seconds" and env.history[-1].to_dict()["step_limit"]
    # A cut step does not end the episode: the next turn has its whole time again.
    _, _, _, _, info = env.step(bash(f"sleep 1 && {mark('next')}"))
    assert markers(env)[-1] == "next" and "step_limit" not in info


def test_control_calls_within_the_steps_time_all_run(make: Any) -> None:
    env = make(max_step_seconds=120)
    _, _, _, _, info = env.step("".join(bash(f"sleep 0.2 && {mark(f'm{i}')}") for i in range(3)))
    assert markers(env) == ["m0", "m1", "m2"] and "step_limit" not in info


def test_a_step_cut_on_the_last_turn_is_graded_as_any_end(make: Any) -> None:
    env = make(max_step_seconds=BOUND, max_turns=1)
    (task,) = [t for t in load_function_tasks("bundled") if t.task_id == TASK]
    encoded = base64.b64encode(task.fixed_code.encode()).decode()
    fix = bash(f"echo {encoded} | base64 -d > solution.py")
    _, reward, terminated, truncated, info = env.step(fix + bash("sleep 30"))
    assert info["step_limit"] == "max_step_seconds"
    assert truncated and not terminated and info["end_reason"] == "max_turns"
    assert info["grade"]["resolved"] is True and reward == 1.0


def test_interrupt_stops_a_running_step_from_another_thread_and_the_episode_goes_on(make: Any) -> None:
    env = make()
    assert env.interrupt() is False  # no step running: nothing to stop
    started = threading.Event()
    outcome: dict[str, Any] = {}

    def play() -> None:
        started.set()
        outcome["step"] = env.step(bash(f"sleep 60 && {mark('slept')}") + bash(mark("after")))

    player = threading.Thread(target=play)
    player.start()
    started.wait()
    while player.is_alive():  # until the step has its command running (a stop before that stops it too)
        env.interrupt()
        player.join(0.5)
    observation, _, terminated, truncated, info = outcome["step"]
    assert info["step_limit"] == "interrupted" and markers(env) == []
    assert "This turn was interrupted" in observation and not (terminated or truncated)
    env.step(bash(mark("next")))
    assert markers(env) == ["next"]


# -- an agent trying to hold a step past its bound ------------------------------------------------------------
ATTACKS = {
    # Ignores SIGTERM, SIGINT and SIGHUP: the bound's kill is SIGKILL, to the whole process group.
    "ignores signals": ("trap '' TERM INT HUP; sleep {long}; {mark}", {}),
    # Asks for the longest timeout bash allows: the step's time left clips it.
    "asks a long timeout": ("sleep {long}; {mark}", {"timeout": 600}),
    # Leaves the process group (a session of its own) and makes the shell wait for it: the shell is killed,
    # and the step does not wait for what it left behind.
    "setsid and wait": ("setsid -w bash -c 'sleep {long}; {mark}'", {}),
    # Stops its own shell: a stopped process is still killed.
    "stops itself": ("kill -STOP $$; sleep {long}; {mark}", {}),
    # A background process that keeps the output pipes open and writing: the call ends with its shell.
    "background writer": ("(while true; do echo x; sleep 0.1; done) & sleep {long}; {mark}", {}),
    # Many calls, each within any per-command timeout, that together would take minutes.
    "many calls": ("sleep {short}; {mark}", {"repeat": 20}),
}


def _attack(name: str, long: float, short: float) -> str:
    template, arguments = ATTACKS[name]
    arguments = dict(arguments)
    repeat = arguments.pop("repeat", 1)
    command = template.format(long=long, short=short, mark=mark(name.replace(" ", "-")))
    return "".join(bash(command, **arguments) for _ in range(repeat))


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_an_agent_cannot_hold_a_step_past_its_bound(make: Any, attack: str) -> None:
    env = make(max_step_seconds=BOUND)
    _, _, terminated, truncated, info = env.step(_attack(attack, long=60, short=20))
    assert info["step_limit"] == "max_step_seconds", info
    assert attack.replace(" ", "-") not in markers(env)  # returned long before any sleep ended
    assert not (terminated or truncated)
    _, _, _, _, info = env.step(bash("echo alive"))  # the sandbox still works, the next turn runs
    assert info["messages"][-1]["content"] == "alive"


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_control_each_attack_runs_to_its_end_within_a_large_bound(make: Any, attack: str) -> None:
    """The same commands with short sleeps and a bound they stay within: they do what they say (the trap, the
    setsid, the stop, the background writer work here), so the bound is what cut them above."""
    env = make(max_step_seconds=120, max_tool_calls=64)
    action = _attack(attack, long=0.3, short=0.1)
    if attack == "stops itself":  # a stopped shell is continued from outside here, as no agent can do
        action = bash(f"(sleep 0.5; kill -CONT $$) & kill -STOP $$; {mark('stops-itself')}")
    _, _, _, _, info = env.step(action)
    assert "step_limit" not in info
    assert attack.replace(" ", "-") in markers(env)
