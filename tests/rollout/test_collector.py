"""The collector (gym_swe/rollout/collector.py) against real CodeDebug-v0 envs with local sandboxes, a scripted
model standing in for the generator. What it plays the envs through is the episode-env contract; the
token-exact trajectories it assembles are tests/rollout/test_trajectories.py's, seeds test_seeds.py's, a Ray
pool's envs tests/integrations/test_ray.py's."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import gymnasium
import pytest

import gym_swe  # noqa: F401
from gym_swe.errors import ConfigError
from gym_swe.rollout.collector import collect
from gym_swe.rollout.generators.base import Sample, SamplingParams
from gym_swe.rollout.generators.openai_chat import ChatSample
from tests.conftest import require_bwrap
from tests.rollout.scripted import ScriptedGenerator
from tests.rollout.test_trajectories import load

SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'
TURNS = ['<tool_call>{"name": "bash", "arguments": {"command": "echo hi # step 0"}}</tool_call>', SUBMIT]
SAMPLING = SamplingParams(max_tokens=256)


@pytest.fixture(scope="module")
def scripted() -> ScriptedGenerator:
    return ScriptedGenerator(load("tiny-bpe"), TURNS)


class SubmitAtOnce(gymnasium.Wrapper):
    """Submits whatever the model wrote, and raises on a step of ``failing`` tasks: a user's own wrapper,
    which the collector must step through. Counts its closes."""

    def __init__(self, env: gymnasium.Env, failing: Sequence[str] = ()) -> None:
        super().__init__(env)
        self.failing, self.task_id, self.closes = tuple(failing), "", 0

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(**kwargs)
        self.task_id = info["task_id"]
        return observation, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        if self.task_id in self.failing:
            raise RuntimeError(f"the wrapper of {self.task_id} broke")
        return self.env.step(SUBMIT)

    def close(self) -> None:
        self.closes += 1
        super().close()


def test_a_list_of_envs_plays_every_sample_in_task_order(scripted: ScriptedGenerator) -> None:
    require_bwrap()
    envs = [gymnasium.make("CodeDebug-v0") for _ in range(2)]
    try:
        trajectories = collect(
            envs, scripted, ["GymSwe/0", "GymSwe/1"], samples_per_task=2, sampling=SAMPLING
        )
    finally:
        for env in envs:
            env.close()
    assert [(t.task_id, t.sample_index) for t in trajectories] == [
        ("GymSwe/0", 0), ("GymSwe/0", 1), ("GymSwe/1", 0), ("GymSwe/1", 1)
    ]  # fmt: skip
    for trajectory in trajectories:
        assert not trajectory.failed and trajectory.end_reason == "submitted" and trajectory.terminated
        assert trajectory.env_id == "CodeDebug-v0" and trajectory.grade is not None
        assert [m["role"] for m in trajectory.messages] == ["system", "user", *["assistant", "tool"] * 2]
    assert all(env.unwrapped.done for env in envs)


def test_steps_go_through_the_envs_wrappers_and_a_factorys_envs_are_closed(
    scripted: ScriptedGenerator,
) -> None:
    """The model's first turn is a bash call; the wrapper submits instead, so each episode ends at once."""
    require_bwrap()
    made: list[SubmitAtOnce] = []

    def factory() -> SubmitAtOnce:
        made.append(SubmitAtOnce(gymnasium.make("CodeDebug-v0")))
        return made[-1]

    tasks = ["GymSwe/0", "GymSwe/1", "GymSwe/3"]  # (GymSwe/2's bug is an endless loop: its grading is slow)
    trajectories = collect(factory, scripted, tasks, parallel=2, sampling=SAMPLING)
    assert [t.end_reason for t in trajectories] == ["submitted"] * 3
    assert all(len(t.turns) == 1 for t in trajectories)
    assert len(made) == 2 and [env.closes for env in made] == [1, 1]


def test_a_failing_step_fails_only_its_episode_which_is_ended(scripted: ScriptedGenerator) -> None:
    """The collector truncates the broken episode (so its sandbox goes), and the other episode goes on."""
    require_bwrap()
    envs = [SubmitAtOnce(gymnasium.make("CodeDebug-v0"), failing=["GymSwe/1"]) for _ in range(2)]
    try:
        ok, broken = collect(envs, scripted, ["GymSwe/0", "GymSwe/1"], sampling=SAMPLING)
        assert not ok.failed and ok.end_reason == "submitted"
        assert broken.failed and broken.end_reason == "env_error"
        assert broken.error == "RuntimeError: the wrapper of GymSwe/1 broke"
        assert all(env.unwrapped.done and env.unwrapped.sandbox is None for env in envs)
    finally:
        for env in envs:
            env.close()
    assert [env.closes for env in envs] == [1, 1]  # the caller's envs are the caller's to close


class FailingOnSecondCall(ScriptedGenerator):
    def generate(self, prompts: Any, params: SamplingParams) -> list[Sample]:
        if self.calls == 1:
            self.calls += 1
            return [Sample.failed("no answer from the server") for _ in prompts]
        return super().generate(prompts, params)


def test_a_generator_failure_ends_the_episode_truncated_and_graded() -> None:
    require_bwrap()
    generator = FailingOnSecondCall(load("tiny-bpe"), TURNS)
    (trajectory,) = collect(
        lambda: gymnasium.make("CodeDebug-v0"), generator, ["GymSwe/0"], sampling=SAMPLING
    )
    assert trajectory.failed and trajectory.error == "generator: no answer from the server"
    assert trajectory.truncated and trajectory.end_reason == "generator_error"
    assert trajectory.grade is not None and len(trajectory.turns) == 1


class ScriptedChat:
    """A chat model (as openai-chat is): it is sent each episode's messages, and answers with an assistant
    message calling bash first, then submit. Keeps what it was sent."""

    name, chat, concurrent, tokenizer = "scripted-chat", True, True, None

    def __init__(self) -> None:
        self.sent: list[list[dict[str, Any]]] = []

    def generate_chat(self, conversations: Any, tools: Any, params: SamplingParams) -> list[ChatSample]:
        samples = []
        for messages in conversations:
            self.sent.append([dict(m) for m in messages])
            name, arguments = ("bash", {"command": "echo hi"}) if len(messages) == 2 else ("submit", {})
            call = {"id": "call0", "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)}}  # fmt: skip
            message = {"role": "assistant", "content": "", "tool_calls": [call]}
            samples.append(ChatSample(message=message, text="", finish_reason="stop"))
        return samples


def test_a_chat_generator_is_sent_each_envs_chat_so_far() -> None:
    require_bwrap()
    generator = ScriptedChat()
    (trajectory,) = collect(
        lambda: gymnasium.make("CodeDebug-v0"), generator, ["GymSwe/0"], sampling=SAMPLING
    )
    assert not trajectory.failed and trajectory.end_reason == "submitted"
    assert (trajectory.has_token_ids, trajectory.token_ids) == (False, [])  # messages are what it carries
    opening, second = generator.sent
    assert [m["role"] for m in opening] == ["system", "user"] and opening == trajectory.messages[:2]
    assert second == trajectory.messages[:4] and second[3]["content"] == "hi"


def test_an_env_that_is_not_an_episode_env_fails_before_any_episode(scripted: ScriptedGenerator) -> None:
    env = gymnasium.make("CartPole-v1")
    for envs in ([env], lambda: env):
        with pytest.raises(ConfigError, match="CartPoleEnv is not an episode env: it lacks messages, done"):
            collect(envs, scripted, ["GymSwe/0"], sampling=SAMPLING)


def test_a_turn_keeps_its_tool_call_errors_and_format_penalty() -> None:
    """What `gym-swe view` shows per turn: the calls the env could not read and what it took off for them."""
    require_bwrap()
    broken = ScriptedGenerator(
        load("tiny-bpe"), ['step 0 <tool_call>{"name": "bash", "arguments": {', SUBMIT]
    )
    (trajectory,) = collect(lambda: gymnasium.make("CodeDebug-v0", format_penalty=0.1), broken, ["GymSwe/0"],
                            sampling=SAMPLING)  # fmt: skip
    first, last = trajectory.turns
    assert (first.tool_errors, first.format_penalty, first.reward) == (1, 0.1, pytest.approx(-0.1))
    assert (last.tool_errors, last.format_penalty) == (0, 0.0)


def test_a_turn_keeps_the_step_bound_that_cut_it() -> None:
    require_bwrap()
    calls = "".join(
        '<tool_call>{"name": "bash", "arguments": {"command": "true"}}</tool_call>' for _ in range(3)
    )
    many = ScriptedGenerator(load("tiny-bpe"), [f"step 0 {calls}", SUBMIT])
    (trajectory,) = collect(lambda: gymnasium.make("CodeDebug-v0", max_tool_calls=2), many, ["GymSwe/0"],
                            sampling=SAMPLING)  # fmt: skip
    first, last = trajectory.turns
    assert (first.step_limit, last.step_limit) == ("max_tool_calls", None)
    assert type(trajectory).from_dict(trajectory.to_dict()).turns[0].step_limit == "max_tool_calls"


def test_an_episode_a_wrapper_cut_is_graded(scripted: ScriptedGenerator) -> None:
    """A step limit of the user's own, added after gymnasium.make, ends the episode outside the env: the
    collector grades it through the env's truncate, so the trajectory has a grade and a reason."""
    require_bwrap()
    make = lambda: gymnasium.wrappers.TimeLimit(gymnasium.make("CodeDebug-v0"), 1)  # noqa: E731
    [trajectory] = collect(make, scripted, ["GymSwe/1"], sampling=SAMPLING)
    assert trajectory.truncated and trajectory.end_reason == "time_limit" and not trajectory.failed
    assert trajectory.grade is not None and trajectory.grade["total"] > 0 and len(trajectory.turns) == 1


def test_a_progress_bar_shows_episodes_and_turns_when_asked_or_on_a_terminal(
    scripted: ScriptedGenerator, capsys: pytest.CaptureFixture[str]
) -> None:
    """A collection takes minutes: with progress=True (the default on a terminal) a bar on stderr moves as
    episodes end and counts the turns; off a terminal (here, captured) the default shows none."""
    require_bwrap()
    collect(lambda: gymnasium.make("CodeDebug-v0"), scripted, ["GymSwe/0", "GymSwe/1"], sampling=SAMPLING,
            progress=True)  # fmt: skip
    bar = capsys.readouterr().err
    assert bar.index("collect:") < bar.index("1/2 episodes") < bar.index("2/2 episodes")
    assert "4 turns, 0 resolved, 0 failed]" in bar
    collect(lambda: gymnasium.make("CodeDebug-v0"), scripted, ["GymSwe/0"], sampling=SAMPLING)
    assert capsys.readouterr().err == ""
