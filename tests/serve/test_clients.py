"""Driving a served env: OpenEnv's own clients, unchanged; gym_swe's `ServedEnv` stepping as the env in this
process does; the collector's trajectories token for token the same as in-process; a server killed
mid-episode becoming failed trajectories with the reason."""

from __future__ import annotations

import json
import signal
import subprocess
from typing import Any

import gymnasium
import pytest

from gym_swe.rollout.collector import collect
from gym_swe.rollout.generators.base import SamplingParams
from gym_swe.serve.client import ServedEnv, ServerGone
from tests.conftest import REPO_ROOT, require_bwrap
from tests.rollout.conftest import MODELS
from tests.rollout.scripted import ScriptedGenerator
from tests.serve.conftest import MAX_TURNS, TASK, honest_fix, tool_call
from tests.serve.server import EnvServer, serve_python

TURNS = [
    tool_call("bash", command="ls # step 0"),
    "I look at the file first. # step 1\n" + tool_call("bash", command="cat solution.py"),
    "no tool call at all # step 2",
    tool_call("submit"),
]
TASKS = ["GymSwe/0", "GymSwe/1"]


@pytest.fixture(scope="module")
def tokenizer():  # type: ignore[no-untyped-def]
    transformers = pytest.importorskip("transformers")
    from gym_swe.rollout.tiny import make_tiny_bpe_tokenizer

    path = make_tiny_bpe_tokenizer(MODELS)
    return transformers.AutoTokenizer.from_pretrained(str(path))


def without_durations(value: Any) -> Any:
    """``value`` without the grade's wall-clock ``duration`` (the one thing two gradings never share)."""
    if isinstance(value, dict):
        return {key: without_durations(item) for key, item in value.items() if key != "duration"}
    if isinstance(value, (list, tuple)):
        return [without_durations(item) for item in value]
    return value


def test_openenvs_own_clients_work_against_it_unchanged(server: EnvServer) -> None:
    """GenericEnvClient (sync), gym_swe's EnvClient subclass (async) and MCPToolClient (an HTTP MCP session),
    in the serve environment where OpenEnv is installed."""
    script = REPO_ROOT / "tests" / "serve" / "openenv_clients.py"
    done = subprocess.run([serve_python(), str(script), server.url, TASK, honest_fix()], capture_output=True,
                          text=True, timeout=300, cwd=REPO_ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    generic = report["generic"]
    assert generic["opening_roles"] == ["system", "user"] and generic["ls"] == "solution.py\ntest_solution.py"
    assert generic["grade_before_end"] is None
    assert generic["reward"] == 1.0 and generic["done"] is True and generic["resolved"] is True
    assert generic["state"]["running"] is False and generic["state"]["grade"]["resolved"] is True
    typed = report["typed"]
    assert typed["observation_type"] == "SweObservation" and typed["state_type"] == "SweState"
    assert (
        typed["tools"] == ["bash", "str_replace_editor", "submit"]
        and typed["ls"] == "solution.py\ntest_solution.py"
    )
    assert typed["end_reason"] == "budget" and typed["truncated"] is True and typed["state_running"] is False
    mcp = report["mcp"]
    assert mcp["tools"] == ["bash", "str_replace_editor", "submit"]
    assert mcp["ls"] == "solution.py\ntest_solution.py" and "Submitted" in mcp["submitted"]


def test_a_served_env_is_an_episode_env_that_steps_as_the_local_env_does(server: EnvServer) -> None:
    from tests.rollout.test_episode_env import assert_is_episode_env

    local = gymnasium.make("CodeDebug-v0", max_turns=MAX_TURNS, max_episode_steps=MAX_TURNS)
    with ServedEnv(server.url) as served:
        assert_is_episode_env(served)
        assert served.spec is not None and served.spec.id == "CodeDebug-v0" and served.max_turns == MAX_TURNS
        assert served.done and served.messages == []
        assert served.task_ids() == local.unwrapped.tasks.ids
        assert local.reset(options={"task_id": TASK}) == served.reset(options={"task_id": TASK})
        assert_is_episode_env(served)
        assert not served.done and served.messages == local.unwrapped.messages
        message = {"role": "assistant", "content": "let me see",
                   "tool_calls": [{"id": "x1", "type": "function",
                                   "function": {"name": "bash", "arguments": '{"command": "head -3 solution.py"}'}}]}  # fmt: skip
        for action in [TURNS[0], message, TURNS[2], tool_call("nope", x=1)]:
            here, there = local.step(action), served.step(action)
            assert there == here
            assert there[4]["messages"] == served.messages == local.unwrapped.messages
            assert not served.done
        ended_here, ended_there = local.unwrapped.truncate("budget"), served.truncate("budget")
        assert without_durations(ended_there) == without_durations(ended_here)
        assert ended_there.keys() == ended_here.keys() and served.done
        with pytest.raises(Exception, match="truncate\\(\\) after the episode ended"):
            served.truncate("again")
        # A new episode in the same session: its sandbox is new, the chat starts again.
        assert served.reset(options={"task_id": TASKS[0]})[1]["task_id"] == TASKS[0]
        assert len(served.messages) == 2
    local.close()


def test_the_collector_plays_served_envs_token_for_token_as_in_process(server: EnvServer, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    sampling = SamplingParams(max_tokens=256)
    local_envs = [
        gymnasium.make("CodeDebug-v0", max_turns=MAX_TURNS, max_episode_steps=MAX_TURNS) for _ in range(2)
    ]
    served_envs = [ServedEnv(server.url) for _ in range(2)]
    try:
        here = collect(
            local_envs, ScriptedGenerator(tokenizer, TURNS), TASKS, samples_per_task=2, sampling=sampling
        )
        there = collect(
            served_envs, ScriptedGenerator(tokenizer, TURNS), TASKS, samples_per_task=2, sampling=sampling
        )
    finally:
        for env in [*local_envs, *served_envs]:
            env.close()
    assert len(there) == len(here) == 4
    for local, served in zip(here, there):
        assert not served.failed, served.error
        assert served.env_id == local.env_id == "CodeDebug-v0"
        assert served.token_ids == local.token_ids and served.loss_mask == local.loss_mask
        assert served.logprobs == local.logprobs
        assert served.messages == local.messages and served.tools == local.tools
        assert served.reward == local.reward and served.end_reason == local.end_reason == "submitted"
        assert without_durations(served.grade) == without_durations(local.grade)
        assert served.rerender_matches and len(served.turns) == 4


class KillingGenerator(ScriptedGenerator):
    """Kills the env server (SIGKILL, as a crash or a lost machine would) as it is asked for the second turn:
    every episode is mid-way."""

    def __init__(self, tokenizer, victim: EnvServer) -> None:  # type: ignore[no-untyped-def]
        super().__init__(tokenizer, TURNS)
        self.victim = victim

    def generate(self, prompts, params):  # type: ignore[no-untyped-def]
        if self.calls == 1:
            self.victim.stop(signal.SIGKILL)
        return super().generate(prompts, params)


def test_a_server_killed_mid_episode_makes_failed_trajectories_with_the_reason(tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    with EnvServer("CodeDebug-v0", [f"max_turns={MAX_TURNS}"], ["--max-sessions", "2"]) as victim:
        envs = [ServedEnv(victim.url) for _ in range(2)]
        trajectories = collect(envs, KillingGenerator(tokenizer, victim), TASKS, samples_per_task=1,
                               sampling=SamplingParams(max_tokens=256))  # fmt: skip
        for trajectory in trajectories:
            assert trajectory.failed and trajectory.end_reason == "env_error"
            assert "ServerGone" in trajectory.error and victim.url in trajectory.error
            first, second = trajectory.turns  # the first turn was played; the second's step found no server
            assert first.observation and not second.observation
        assert all(env.done for env in envs)
        # With the server still gone, the next episodes cannot start: failed at reset, with the reason.
        again = collect(
            envs, ScriptedGenerator(tokenizer, TURNS), TASKS[:1], sampling=SamplingParams(max_tokens=256)
        )
        assert (
            again[0].failed
            and "reset failed: ServerGone" in again[0].error
            and "could not be reached" in again[0].error
        )
        for env in envs:
            env.close()
    with pytest.raises(ServerGone, match="could not be reached"):
        ServedEnv(victim.url)
