"""One limit per episode: the env's own ``max_turns``, whatever step limit ``gymnasium.make`` was given.

``gymnasium.make(id, max_episode_steps=N)`` wraps the env in a ``TimeLimit`` that ends the episode after N
steps from outside: the env never hears of it, so it cannot grade the episode, and the last step's info
holds no grade and no ``end_reason``. gym_swe's envs end their episodes themselves, graded, at
``max_turns``; so they register no step limit of their own, and every env of `gym_swe.registration` gets
`TurnLimit` as an additional wrapper, which ``gymnasium.make`` (and ``make_vec``) apply after its
``TimeLimit``. `TurnLimit` makes the two limits one when the env is made:

- ``max_turns=N`` alone: the episode lasts N turns, graded at the end (no TimeLimit cuts it earlier);
- ``max_episode_steps=N`` alone: the same (it becomes the env's ``max_turns``);
- both, equal: the same; both, different: a `ConfigError` naming both, since an episode has one length;
- neither (or ``max_episode_steps=-1``): the env's own default (30 for CodeDebug-v0, 50 for SWEGym-v0).

``env.spec.max_episode_steps`` then says the episode's length (the env's ``max_turns``), so a library that
reads it, and ``gymnasium.make(env.spec)``, see the limit the env grades at.

A step limit of a wrapper added after ``make`` (``TimeLimit(env, 5)``) is outside the env's knowledge: end
such an episode with ``env.unwrapped.truncate(reason)``, which grades it, as gym_swe's collector does for
any episode a wrapper ended; an episode left ungraded is warned about at the next ``reset``.
"""

from __future__ import annotations

from typing import Any

import gymnasium
from gymnasium.envs.registration import EnvSpec
from gymnasium.utils import RecordConstructorArgs

from gym_swe.envs.base import ToolEnv
from gym_swe.errors import ConfigError


class TurnLimit(gymnasium.Wrapper[Any, Any, Any, Any], RecordConstructorArgs):
    """Reconciles ``gymnasium.make``'s step limit with the env's ``max_turns`` as the env is made (see the
    module docstring); then passes every call through unchanged."""

    def __init__(self, env: gymnasium.Env[Any, Any]) -> None:
        RecordConstructorArgs.__init__(self)
        gymnasium.Wrapper.__init__(self, env)
        base = env.unwrapped
        steps = env.spec.max_episode_steps if env.spec is not None else None  # a TimeLimit beneath says it
        if steps is None or not isinstance(base, ToolEnv):
            return
        given = base.spec.kwargs if base.spec is not None else {}
        if "max_turns" not in given:
            base.max_turns = steps  # max_episode_steps alone: the env's own, graded, limit
        elif given["max_turns"] != steps:
            env.close()
            raise ConfigError(
                f"max_turns={given['max_turns']} and max_episode_steps={steps} disagree: an episode has one "
                "length, max_turns, graded at its end; give max_turns alone (or both equal)"
            )

    @property
    def spec(self) -> EnvSpec | None:  # type: ignore[override]  # read-only in gymnasium's Wrapper too
        """The env's spec, with ``max_episode_steps`` the env's own limit: the episode's length."""
        if self._cached_spec is None:
            spec = super().spec  # a copy, cached: changing it changes no other wrapper's
            base = self.env.unwrapped
            if spec is not None and isinstance(base, ToolEnv):
                spec.max_episode_steps = base.max_turns
        return self._cached_spec
