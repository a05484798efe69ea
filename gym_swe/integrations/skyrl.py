"""gym_swe envs in SkyRL (``skyrl-gym`` 0.4): a ``BaseTextEnv`` over any registered gym_swe env.

SkyRL's generator plays an env through ``skyrl_gym.make(env_class, env_config=..., extras=...)``, then
``init(prompt)``, ``step(text)`` until ``done``, and ``close()``. `GymSweTextEnv` is that env over a gym_swe
env: ``init`` starts the episode of the row's task and returns the env's own opening chat (system and user),
each ``step`` plays the model's text through the gym_swe env (its tool-call parser, its tools in its sandbox)
and answers with what the env said (the tool results, or why no call could be read), and the step that
ends the episode (``submit``, the turn limit) carries the grade's reward, graded by gym_swe in a fresh
sandbox. ``done`` is gym_swe's ``terminated or truncated``; the reward of each step is the gym_swe env's.

    from gym_swe.integrations.skyrl import register_envs, skyrl_dataset
    register_envs()                       # "CodeDebug-v0" and "SWEGym-v0" in skyrl_gym's registry
    rows = skyrl_dataset("CodeDebug-v0")  # prompt, env_class, task_id: one row per task
    env = skyrl_gym.make("CodeDebug-v0", env_config={"sandbox": "local"}, extras=rows[0])

``env_config`` (SkyRL's ``environment.skyrl_gym.<env_class>`` section) holds the env's make kwargs
(``tasks``, ``sandbox``, ``reward``...); ``extras`` is the dataset row without its prompt: ``task_id`` picks
the task, and ``max_turns`` (which SkyRL's generator sets from its own ``max_turns``) the turn limit.
SkyRL's generator renders the chat without a ``tools=`` list, so the model learns the tools from the env's
system message, which describes them and the ``<tool_call>`` format; the parser reads every format gym_swe
knows. An episode SkyRL cuts short (its ``max_input_length``) is closed ungraded: SkyRL scores it with the
rewards its steps paid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium

import gym_swe  # noqa: F401  (registers the envs)
from gym_swe.errors import ConfigError, GymSweError, missing_dependency
from gym_swe.registration import ENVS, check_env_id
from gym_swe.rollout.episode_env import EpisodeEnv, as_episode_env

try:
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv
except ImportError:
    raise missing_dependency("skyrl_gym", "skyrl", feature="The SkyRL env") from None

ENTRY_POINT = "gym_swe.integrations.skyrl:GymSweTextEnv"
"""What each registration names: SkyRL's workers import it by this string."""


class GymSweTextEnv(BaseTextEnv):  # type: ignore[misc]  # skyrl_gym ships no types
    """A gym_swe env as a SkyRL text env: one episode per instance, as SkyRL makes one per trajectory.

    Args:
        env_config: the env's make kwargs (a dict or SkyRL's ``DictConfig``): ``tasks``, ``sandbox``,
            ``reward``, ``max_turns``...; None for the defaults.
        extras: the dataset row (less its prompt): ``task_id`` (required; or under ``extra_info``) and
            ``max_turns`` (the generator's turn limit, which wins over one in ``env_config``).
        env_id: the gym_swe env; `register_envs` sets it per registered id.
    """

    def __init__(
        self,
        env_config: Mapping[str, Any] | None = None,
        extras: Mapping[str, Any] | None = None,
        env_id: str = "CodeDebug-v0",
    ) -> None:
        super().__init__()
        extras = dict(extras or {})
        extra_info = extras.get("extra_info") or {}
        task_id = extras.get("task_id", extra_info.get("task_id"))
        if not isinstance(task_id, str) or not task_id:
            raise ConfigError(
                f"{env_id} in SkyRL: each row needs a task_id (a column of the dataset, or in extra_info); "
                f"got the fields {sorted(extras)} (gym_swe.integrations.skyrl.skyrl_dataset writes them)"
            )
        make_kwargs = {str(key): value for key, value in dict(env_config or {}).items()}
        if extras.get("max_turns") is not None:
            make_kwargs["max_turns"] = int(extras["max_turns"])
        self.env_id, self.task_id = env_id, task_id
        self.max_turns = int(make_kwargs.get("max_turns") or 0)
        # The registered step limit (a TimeLimit) would cut a longer max_turns short: it follows max_turns.
        steps: dict[str, Any] = {"max_episode_steps": self.max_turns} if self.max_turns else {}
        self.env: EpisodeEnv = as_episode_env(gymnasium.make(env_id, **steps, **make_kwargs))
        self.grade: dict[str, Any] | None = None
        """The episode's grade (per-test outcomes), once it ended."""
        self.end_reason = ""
        self.episode_return = 0.0
        """The rewards of the steps so far, summed: what SkyRL credits the trajectory."""
        self._seen = 0

    def init(
        self, prompt: Sequence[Mapping[str, Any]] | None = None
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Start the task's episode. Returns the env's opening chat (the row's ``prompt`` is not used: the
        model sees what the env says, as in every other gym_swe loop) and ``{"task_id", "tools"}``."""
        _, info = self.env.reset(options={"task_id": self.task_id})
        self.turns, self._seen = 0, len(info["messages"])
        return [dict(message) for message in info["messages"]], {
            "task_id": info["task_id"],
            "tools": info["tools"],
        }

    def step(self, action: str) -> dict[str, Any]:
        """Play the model's text as one turn. Returns SkyRL's step output: the env's answer as new chat
        messages (none once the episode is over), the gym_swe step's reward, ``done`` and a metadata of
        ``parse_errors`` and, on the last step, ``grade`` and ``end_reason``."""
        if self.env.done:
            raise GymSweError(f"{self.env_id}: step() after the episode ended (done was returned)")
        _, reward, terminated, truncated, info = self.env.step(action)
        self.turns += 1
        self.episode_return += float(reward)
        done = bool(terminated or truncated)
        messages = info["messages"]
        answer = [dict(message) for message in messages[self._seen + 1 :]]  # after the assistant message
        self._seen = len(messages)
        metadata: dict[str, Any] = {"parse_errors": list(info.get("parse_errors", ()))}
        if done:
            self.grade, self.end_reason = info.get("grade"), str(info.get("end_reason", ""))
            metadata.update(grade=self.grade, end_reason=self.end_reason, error=info.get("error"))
        return {
            "observations": [] if done else answer,
            "reward": float(reward),
            "done": done,
            "metadata": metadata,
            "postprocessed_action": None,
        }

    def get_metrics(self) -> dict[str, Any]:
        """Per-episode numbers SkyRL averages over a batch: turns, whether it was resolved, tests passed."""
        grade = self.grade or {}
        return {
            "turns": self.turns,
            "resolved": float(bool(grade.get("resolved"))),
            "tests_passed": float(grade.get("passed", 0)),
            "submitted": float(self.end_reason == "submitted"),
        }

    def close(self) -> None:
        self.env.close()


def register_envs(env_ids: Sequence[str] | None = None) -> list[str]:
    """Register gym_swe envs in skyrl_gym's registry under their own ids (default: every gym_swe env), each
    making a `GymSweTextEnv`; ids already registered are left as they are. Returns the ids. SkyRL makes envs
    in its generator's process: call this there (its entry point), before training starts."""
    known = [registration["id"] for registration in ENVS]
    chosen = list(env_ids) if env_ids is not None else known
    for env_id in map(check_env_id, chosen):
        if env_id not in skyrl_gym.registry:
            skyrl_gym.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"env_id": env_id})
    return chosen


def skyrl_dataset(
    env_id: str = "CodeDebug-v0", task_ids: Sequence[str] | None = None, **make_kwargs: Any
) -> list[dict[str, Any]]:
    """The env's tasks as SkyRL dataset rows (write them to parquet for ``data.train_data``): ``prompt`` (the
    env's opening chat), ``env_class`` (``env_id``) and ``task_id``."""
    from gym_swe.envs.unwrapped import tool_env

    env = tool_env(gymnasium.make(env_id, **make_kwargs))
    try:
        ids = list(task_ids) if task_ids is not None else [task.task_id for task in env.tasks]
        return [{"prompt": env.opening_messages(task_id), "env_class": env_id, "task_id": task_id}
                for task_id in ids]  # fmt: skip
    finally:
        env.close()
