"""The episode env: the contract between the collector and the envs it plays, written down.

The collector (`gym_swe.rollout.collector.collect`) drives an env through these seven members and nothing
else, so that an env in this process (`gym_swe.envs.base.ToolEnv`), an env in a Ray actor
(`gym_swe.integrations.ray.RayEnvHandle`) and any later remote handle are played the same way. It is
Gymnasium's ``reset``, ``step``, ``spec`` and ``close``, and what a rollout needs beyond them: ending an
episode from outside (`EpisodeEnv.truncate`: the token budget is spent, the generator failed), the chat so
far (`EpisodeEnv.messages`: what a chat generator is sent), and whether an episode is running
(`EpisodeEnv.done`: whether a failed turn still has an episode to end).

What ``gymnasium.make`` returns is not an episode env by itself: its wrappers (the order check, a
``TimeLimit``, a user's own) forward ``reset``, ``step`` and ``close`` but no other member of the env they
wrap, since Gymnasium 1.0 forwards no attribute. `as_episode_env` views such a wrapper chain as one
(`WrapperChain`): its steps go through the wrappers, which may change them (a time limit, a progress
callback), and the rest comes from the env at its base, which holds the episode.
"""

from __future__ import annotations

from typing import Any, Protocol, SupportsFloat, cast

import gymnasium
from gymnasium.envs.registration import EnvSpec

from gym_swe.errors import ConfigError


class EpisodeEnv(Protocol):
    """An env the collector can play episodes in: one episode at a time, from `reset` to its end.

    An episode ends with the step that returns ``terminated`` or ``truncated``, or with `truncate`; either way
    it is graded, and the info of that last call says how it ended (``end_reason``), its grade (``grade``:
    the per-test outcomes, or None) and, where something broke rather than the agent failing, ``error``.
    Methods raise only where the env itself broke; a wrong tool call is an observation, not an exception.
    """

    @property
    def spec(self) -> EnvSpec | None:
        """The registration the env was made from (``spec.id`` names the env in trajectories); None for an
        env made without ``gymnasium.make``."""
        ...

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat of the current (or last) episode in OpenAI format, as ``info["messages"]`` of the last
        `reset`, `step` or `truncate` held it: system and user, then per turn the assistant message and
        what the env answered. Read it, never change it: the env may hand out the list it keeps."""
        ...

    @property
    def done(self) -> bool:
        """Whether no episode is running: True before the first `reset`, after the step or `truncate` that
        ended an episode, and where the env could not go on (a reset that failed, a remote env whose
        process died); False from a successful `reset` until then."""
        ...

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start an episode (ending any that was running, ungraded) of the task ``options["task_id"]``, or
        of one picked with ``seed``. Returns the observation and an info with ``task_id``, ``messages``
        (the opening chat) and ``tools`` (the tool schemas, OpenAI function format)."""
        ...

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Play one turn: ``action`` is the model's text or its assistant message (with ``tool_calls``).
        Returns ``(observation, reward, terminated, truncated, info)``; ``info["messages"]`` is the chat
        after the turn (the chat before it, then the assistant message, then what the env answered) and
        ``info["parse_errors"]`` the calls that could not be read. The step that ends the episode grades
        it: its reward includes the grade's, and its info says how it ended."""
        ...

    def truncate(self, reason: str) -> dict[str, Any]:
        """End the running episode from outside, as a truncation with ``end_reason=reason``, graded as at
        the env's turn limit. Returns the info a last step would have had, with ``messages`` and
        ``reward_grade``: the reward that step would have paid, which no step paid, so it is the caller's to
        add. Raises when no episode is running (`done`)."""
        ...

    def close(self) -> None:
        """Release what the env holds (its sandbox). Closing twice does no harm."""
        ...


EPISODE_ENV_MEMBERS = tuple(name for name in vars(EpisodeEnv) if not name.startswith("_"))
"""The members an episode env has, as `EpisodeEnv` declares them."""


class WrapperChain:
    """A Gymnasium wrapper chain (what ``gymnasium.make`` returns) as an episode env: `reset`, `step`,
    `close` and `spec` through the wrappers, `truncate`, `messages` and `done` from the env at its base."""

    def __init__(self, env: gymnasium.Wrapper[Any, Any, Any, Any]) -> None:
        self.env = env

    @property
    def unwrapped(self) -> gymnasium.Env[Any, Any]:
        """The env at the base of the chain, as Gymnasium's wrappers give it (`gym_swe.rollout.stopping`
        reaches the sandbox of an env in this process through it)."""
        return self.env.unwrapped

    @property
    def _base(self) -> EpisodeEnv:
        # Its truncate, messages and done are the chain's (`as_episode_env` checked that it has them).
        return cast(EpisodeEnv, self.env.unwrapped)

    @property
    def spec(self) -> EnvSpec | None:
        return self.env.spec

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self._base.messages

    @property
    def done(self) -> bool:
        return self._base.done

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        return self.env.step(action)

    def truncate(self, reason: str) -> dict[str, Any]:
        return self._base.truncate(reason)

    def close(self) -> None:
        self.env.close()

    def __repr__(self) -> str:
        return f"WrapperChain({self.env})"


def as_episode_env(env: EpisodeEnv | gymnasium.Env[Any, Any]) -> EpisodeEnv:
    """``env`` as an episode env: a Gymnasium wrapper chain as a `WrapperChain`, anything else as it is. An
    env that lacks a member of the contract fails here, in one line naming what it lacks."""
    if isinstance(env, gymnasium.Wrapper):
        base: object = env.unwrapped  # a chain's truncate, messages and done are its base env's
        episode: EpisodeEnv = WrapperChain(env)
    else:
        base, episode = env, cast(EpisodeEnv, env)
    missing = [name for name in EPISODE_ENV_MEMBERS if not hasattr(base, name)]
    if missing:
        raise ConfigError(
            f"{type(base).__name__} is not an episode env: it lacks {', '.join(missing)} "
            f"(the contract is gym_swe.rollout.episode_env.EpisodeEnv)"
        )
    return episode
