"""What a server knows of the env it serves, read once when it starts: the env id and its make kwargs, the
tasks (their ids and opening prompts), the tool schemas and the turn limit, and the sandbox slots every
session's episode takes one of.

It holds one env made with the server's kwargs and never reset: a wrong kwarg fails when the server starts,
not at the first session, and the task listing and the tool schemas come from it without a sandbox.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from typing import Any

import gymnasium

import gym_swe
from gym_swe.envs.base import ToolEnv
from gym_swe.envs.unwrapped import tool_env
from gym_swe.errors import ConfigError, GymSweError, unknown_name
from gym_swe.rollout.episode_env import EpisodeEnv, as_episode_env

SPLIT = "default"
"""The one task split a served env has: its task set (``tasks=``) in its source's order."""


class AtCapacity(GymSweError):
    """Every sandbox slot of the server is taken: the request is refused, never queued."""


def make_env(env_id: str, make_kwargs: Mapping[str, Any]) -> gymnasium.Env[Any, Any]:
    """``gymnasium.make(env_id, **make_kwargs)``, with the step limit at ``max_turns`` where that is given
    (for an env that registers one: gym_swe's make their ``max_turns`` the one limit, see
    `gym_swe.envs.limits`). A wrong id or kwarg is one `ConfigError`."""
    kwargs = dict(make_kwargs)
    if "max_turns" in kwargs:
        kwargs.setdefault("max_episode_steps", kwargs["max_turns"])
    try:
        return gymnasium.make(env_id, **kwargs)
    except gymnasium.error.Error as error:
        raise ConfigError(f"env {env_id!r}: {error}") from None
    except TypeError as error:  # a kwarg of a wrapper gymnasium.make passes on (max_episode_steps=None)
        raise ConfigError(f"env {env_id!r}: {error}") from None


class Catalog:
    """The served env's facts and its sandbox slots (see the module docstring). Thread-safe."""

    def __init__(self, env_id: str, make_kwargs: Mapping[str, Any], max_sessions: int) -> None:
        if not isinstance(max_sessions, int) or isinstance(max_sessions, bool) or max_sessions < 1:
            raise ConfigError(f"max_sessions must be an int >= 1, got {max_sessions!r}")
        self.env_id, self.make_kwargs = env_id, dict(make_kwargs)
        self.max_sessions = max_sessions
        self._env = make_env(env_id, self.make_kwargs)
        try:
            base: ToolEnv = tool_env(self._env)
        except TypeError as error:
            self._env.close()
            raise ConfigError(f"gym-swe serve serves gym_swe envs (ToolEnv subclasses): {error}") from None
        self._base = base
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_sessions)
        self.sessions: weakref.WeakSet[Any] = weakref.WeakSet()
        """The sessions made on this catalog and not yet collected: `close` closes those still open."""
        self.task_ids: list[str] = base.tasks.ids
        self.tool_schemas: list[dict[str, Any]] = base.toolbox.schemas()
        limits = [base.max_turns, self._env.spec.max_episode_steps if self._env.spec else None]
        self.max_turns: int | None = min((n for n in limits if isinstance(n, int) and n > 0), default=None)

    def new_episode_env(self) -> EpisodeEnv:
        """A fresh env made as the server's (one per session), as the episode env the session plays."""
        return as_episode_env(make_env(self.env_id, self.make_kwargs))

    def opening_messages(self, task_id: str) -> list[dict[str, Any]]:
        """The system and user messages ``task_id``'s episode opens with: what the agent is shown, nothing
        else (no sandbox is made). An unknown id is a `gym_swe.errors.TaskError` naming the nearest."""
        with self._lock:
            return self._base.opening_messages(task_id)

    def task(self, index: int) -> dict[str, Any]:
        """The task spec the task API lists: its id, index and opening prompt."""
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(self.task_ids):
            raise IndexError(
                f"task index {index!r} is out of range: the split has {len(self.task_ids)} tasks"
            )
        task_id = self.task_ids[index]
        return {"id": task_id, "index": index, "prompt": self.opening_messages(task_id)}

    def check_split(self, split: str) -> None:
        if split != SPLIT:
            raise ConfigError(unknown_name("task split", split, [SPLIT]))

    def task_id_of(self, task_id: str | None, split: str | None, index: int | None) -> str | None:
        """The task a reset names: by ``task_id``, or by ``split`` and ``index`` (OpenEnv's task API), or
        none (the env's seeded pick)."""
        if task_id is not None and (split is not None or index is not None):
            raise ConfigError("reset takes task_id, or split and index, not both")
        if task_id is not None:
            if not isinstance(task_id, str):
                raise ConfigError(f"task_id must be a string, got {type(task_id).__name__}")
            return task_id
        if index is None:
            if split is not None:
                raise ConfigError("reset with a split needs an index")
            return None
        self.check_split(SPLIT if split is None else split)
        try:
            return str(self.task(index)["id"])
        except IndexError as error:
            raise ConfigError(str(error)) from None

    def take_slot(self) -> None:
        """Take a sandbox slot for an episode, or refuse: `AtCapacity` (never a wait)."""
        if not self._slots.acquire(blocking=False):
            raise AtCapacity(
                f"the server is at capacity: all {self.max_sessions} sandbox slots are in use "
                "(--max-sessions); try again when a session ends"
            )

    def give_slot(self) -> None:
        self._slots.release()

    def metadata(self) -> dict[str, Any]:
        """The fields of OpenEnv's ``EnvironmentMetadata`` for this env."""
        tools = [schema["function"]["name"] for schema in self.tool_schemas]
        return {
            "name": self.env_id,
            "description": (
                f"gym_swe {self.env_id}: software-engineering tasks in a sandbox, {len(self.task_ids)} "
                f"tasks (tasks={self._base.task_source!r}), tools {', '.join(tools)}, graded by hidden tests "
                "after the episode"
            ),
            "version": gym_swe.__version__,
            "author": "gym_swe",
        }

    def close(self) -> None:
        """Close every session's env (and sandbox), then the catalog's own env."""
        for session in list(self.sessions):
            session.close()
        self._env.close()
