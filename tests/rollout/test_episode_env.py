"""The episode-env contract (gym_swe/rollout/episode_env.py): what it declares, how a Gymnasium wrapper chain
is seen as one, and a check that an env implements it, used for each implementation in its own tests."""

from __future__ import annotations

import inspect
from typing import Any

import gymnasium
import pytest
from gymnasium.envs.registration import EnvSpec

import gym_swe  # noqa: F401
from gym_swe.errors import ConfigError
from gym_swe.rollout import EpisodeEnv, as_episode_env
from gym_swe.rollout.episode_env import EPISODE_ENV_MEMBERS, WrapperChain
from tests.conftest import require_bwrap

SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'
ECHO = '<tool_call>{"name": "bash", "arguments": {"command": "echo hi"}}</tool_call>'

# The type of the value each property of the contract reads as.
PROPERTY_TYPES: dict[str, tuple[type, ...]] = {
    "spec": (EnvSpec, type(None)),
    "messages": (list,),
    "done": (bool,),
}


def parameters(function: Any) -> list[tuple[str, Any, bool]]:
    """(name, kind, has a default) of each parameter a bound method takes."""
    return [
        (p.name, p.kind, p.default is not p.empty) for p in inspect.signature(function).parameters.values()
    ]


def assert_is_episode_env(env: Any) -> None:
    """``env`` implements `EpisodeEnv` structurally: each method takes exactly the contract's parameters, and
    each property reads as a value of the contract's type (not as a method)."""
    properties = {
        n for n in EPISODE_ENV_MEMBERS if isinstance(inspect.getattr_static(EpisodeEnv, n), property)
    }
    assert properties == set(PROPERTY_TYPES)
    for name in EPISODE_ENV_MEMBERS:
        value = getattr(env, name)
        if name in properties:
            assert isinstance(value, PROPERTY_TYPES[name]), (name, value)
        else:
            declared = getattr(EpisodeEnv, name).__get__(env)  # bound, so that self is left out of both
            assert parameters(value) == parameters(declared), name


def test_the_contract_is_the_seven_members_the_collector_uses() -> None:
    assert sorted(EPISODE_ENV_MEMBERS) == ["close", "done", "messages", "reset", "spec", "step", "truncate"]


def test_an_env_that_is_not_one_fails_in_one_line_naming_what_it_lacks() -> None:
    with pytest.raises(ConfigError, match=r"^CartPoleEnv is not an episode env: it lacks messages, done, "
                                          r"truncate \(the contract is gym_swe\.rollout\.episode_env"):  # fmt: skip
        as_episode_env(gymnasium.make("CartPole-v1"))


def test_a_gym_swe_env_is_one_bare_and_through_its_wrappers() -> None:
    chain = gymnasium.make("CodeDebug-v0")
    try:
        assert as_episode_env(chain.unwrapped) is chain.unwrapped  # the env at the base: taken as it is
        episode = as_episode_env(chain)
        assert isinstance(episode, WrapperChain) and episode.unwrapped is chain.unwrapped
        assert_is_episode_env(episode)
        assert_is_episode_env(chain.unwrapped)
    finally:
        chain.close()


def test_a_wrapper_chain_steps_through_its_wrappers_and_ends_at_its_base() -> None:
    """A TimeLimit added after gymnasium.make ends the episode for the caller after one step; the base env's
    episode is still running (done is False) until the chain's truncate grades it."""
    require_bwrap()
    episode = as_episode_env(gymnasium.wrappers.TimeLimit(gymnasium.make("CodeDebug-v0"), 1))
    try:
        assert episode.done
        _, info = episode.reset(options={"task_id": "GymSwe/0"})
        assert not episode.done and episode.messages == info["messages"]
        *_, terminated, truncated, info = episode.step(ECHO)
        assert truncated and not terminated and "grade" not in info  # the wrapper's cut, not the env's end
        assert not episode.done and episode.messages == info["messages"] and len(episode.messages) == 4
        ended = episode.truncate("budget")
        assert episode.done and ended["end_reason"] == "budget" and ended["grade"] is not None
        assert episode.spec is not None and episode.spec.id == "CodeDebug-v0"
    finally:
        episode.close()
