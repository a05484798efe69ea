"""One limit per episode (gym_swe/envs/limits.py): through ``gymnasium.make``, with and without
``max_episode_steps``, for every registered env, the episode lasts the env's ``max_turns`` and its end is
graded; a ``max_episode_steps`` that disagrees with ``max_turns`` is refused naming both."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import gymnasium
import pytest

import gym_swe  # noqa: F401
from gym_swe.envs.unwrapped import tool_env
from gym_swe.errors import ConfigError
from gym_swe.registration import ENVS
from tests.conftest import require_bwrap

ENV_IDS = [str(spec["id"]) for spec in ENVS]  # a future env is checked too
DEFAULT_TURNS = {"CodeDebug-v0": 30, "SWEGym-v0": 50, "Harbor-v0": 50}
# What an env needs to be made on the local sandbox without docker (Harbor's bundled tasks bring images).
MAKE_KWARGS = {
    "Harbor-v0": {"tasks": str(Path(__file__).resolve().parents[1] / "data" / "harbor" / "square")}
}
TRUE = '<tool_call>{"name": "bash", "arguments": {"command": "true"}}</tool_call>'


def time_limits(env: gymnasium.Env[Any, Any]) -> list[int]:
    """The step limits of the TimeLimit wrappers in ``env``'s chain."""
    limits = []
    while isinstance(env, gymnasium.Wrapper):
        if isinstance(env, gymnasium.wrappers.TimeLimit):
            limits.append(env.spec.max_episode_steps)
        env = env.env
    return limits


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize(("kwargs", "turns"), [
    ({}, None),  # the env's own
    ({"max_turns": 40}, 40),  # longer than the env's default: no registered TimeLimit cuts it
    ({"max_turns": 3}, 3),
    ({"max_episode_steps": 3}, 3),  # gymnasium's name alone: the env's own, graded, limit
    ({"max_turns": 40, "max_episode_steps": 40}, 40),
    ({"max_episode_steps": -1}, None),  # no TimeLimit: the env's own
    ({"max_turns": 5, "max_episode_steps": -1}, 5),
])  # fmt: skip
def test_max_turns_is_the_episode_length_whatever_gymnasium_make_wraps(
    env_id: str, kwargs: dict[str, int], turns: int | None
) -> None:
    env = gymnasium.make(env_id, **MAKE_KWARGS.get(env_id, {}), **kwargs)
    try:
        length = turns or DEFAULT_TURNS[env_id]
        assert tool_env(env).max_turns == length
        assert env.spec is not None and env.spec.max_episode_steps == length  # what libraries read
        assert all(limit == length for limit in time_limits(env))  # none cuts before the env's end
        again = gymnasium.make(env.spec)  # made again from its spec: the same limit
        assert (tool_env(again).max_turns, again.spec.max_episode_steps) == (length, length)
        again.close()
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_max_turns_and_max_episode_steps_that_disagree_are_refused_naming_both(env_id: str) -> None:
    with pytest.raises(
        ConfigError, match=r"^max_turns=40 and max_episode_steps=30 disagree: an episode has one"
    ):
        gymnasium.make(env_id, **MAKE_KWARGS.get(env_id, {}), max_turns=40, max_episode_steps=30)


def test_make_vec_sub_envs_get_the_same_limit() -> None:
    vector = gymnasium.make_vec("CodeDebug-v0", num_envs=2, vectorization_mode="sync", max_episode_steps=7)
    try:
        assert [tool_env(env).max_turns for env in vector.envs] == [7, 7]  # type: ignore[attr-defined]
    finally:
        vector.close()


@pytest.mark.parametrize(
    "kwargs", [{"max_turns": 2}, {"max_episode_steps": 2}, {"max_turns": 2, "max_episode_steps": 2}]
)
def test_the_last_step_is_graded_with_its_reason(kwargs: dict[str, int]) -> None:
    """A real episode through make's whole chain: the step that reaches the limit carries the grade."""
    require_bwrap()
    env = gymnasium.make("CodeDebug-v0", **kwargs)
    try:
        env.reset(options={"task_id": "GymSwe/1"})
        *_, truncated, info = env.step(TRUE)
        assert not truncated and "grade" not in info
        *_, terminated, truncated, info = env.step(TRUE)
        assert truncated and not terminated
        assert info["end_reason"] == "max_turns" and info["grade"]["total"] > 0
    finally:
        env.close()


def test_a_swegym_episode_at_max_episode_steps_is_graded() -> None:
    require_bwrap()
    env = gymnasium.make("SWEGym-v0", max_episode_steps=1)
    try:
        env.reset(options={"task_id": "gymswe__semverkit-1"})
        *_, truncated, info = env.step(TRUE)
        assert truncated and info["end_reason"] == "max_turns" and info["grade"]["total"] > 0
    finally:
        env.close()


def test_an_episode_left_ungraded_is_warned_about_at_the_next_reset() -> None:
    require_bwrap()
    env = gymnasium.wrappers.TimeLimit(gymnasium.make("CodeDebug-v0"), 1)
    try:
        env.reset(options={"task_id": "GymSwe/1"})
        *_, truncated, info = env.step(TRUE)
        assert truncated and "grade" not in info  # the user's wrapper, outside the env
        with pytest.warns(UserWarning, match=r"left after 1 step\(s\), before max_turns=30, without a grade"):
            env.reset(options={"task_id": "GymSwe/1"})
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            tool_env(env).truncate("done here")  # graded: the next reset says nothing
            env.reset(options={"task_id": "GymSwe/1"})
    finally:
        env.close()
