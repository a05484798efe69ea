"""gym_swe envs in verifiers (0.4, ``verifiers.v1``) and so in prime-rl: a taskset, an env and a harness.

verifiers finds a taskset by a package name that exports it (``vf-eval gym-swe-verifiers``: the package
`gym_swe_verifiers` re-exports this module's three classes), and plays each of its tasks through its env's
``run(task, agents)``. Here that env is the gym_swe env, played host-side as the run's user (verifiers'
pattern for game engines such as TextArena): the agent's first reply answers the env's opening chat (its
system and user messages are the task's ``system_prompt`` and ``prompt``); each reply is one ``step`` of the
gym_swe env (its tool-call parser, its tools in its sandbox, a sandbox per rollout); what the env answers goes
back as the next user turn; the episode ends when gym_swe says so (``submit``, its turn limit), and its
reward, the grade from a fresh sandbox, is the trace's reward ``gym_swe``. If verifiers ends the exchange
first (its own limits), the gym_swe episode is truncated and graded as at its turn limit.

The agent's harness defaults to `GymSweHarness`, verifiers' chat program with no tools of its own: every
tool the model has is gym_swe's, described in the env's system message and called in the text
(``<tool_call>{...}</tool_call>`` or any format gym_swe's parser reads), so nothing the model runs reaches
verifiers' runtime. Settings (``--env.taskset.<name>``): ``env_id``, ``tasks``, ``sandbox``, ``max_turns``,
``task_ids``.

    vf-eval gym-swe-verifiers --model NAME --client.base-url http://127.0.0.1:8000/v1 \\
        --env.taskset.env-id CodeDebug-v0 --num-tasks 4 --num-rollouts 2
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import gymnasium

import gym_swe  # noqa: F401  (registers the envs)
from gym_swe.envs.step_bound import DEFAULT_MAX_STEP_SECONDS, DEFAULT_MAX_TOOL_CALLS
from gym_swe.errors import missing_dependency, unknown_name
from gym_swe.registration import check_env_id
from gym_swe.rollout.episode_env import as_episode_env
from gym_swe.sandbox import check_backend

try:
    import verifiers.v1 as vf
    from pydantic import Field, field_validator
    from verifiers.v1.harnesses.null.harness import NullHarness
except ImportError:
    raise missing_dependency("verifiers", "verifiers", feature="The verifiers taskset") from None

STOPPED_BY_VERIFIERS = "verifiers_stop"
"""The ``end_reason`` of a gym_swe episode that verifiers ended before gym_swe did."""


class GymSweData(vf.TaskData):  # type: ignore[misc]  # verifiers is typed in its own environment only
    """One task: the gym_swe env and task it is, and the make kwargs of the env that plays it."""

    env_id: str
    task_id: str
    make_kwargs: dict[str, Any]


class GymSweTask(vf.Task[GymSweData]):  # type: ignore[misc]
    """Scored by the env's run (the gym_swe grade), so no reward methods of its own."""

    @property
    def key(self) -> str:
        return f"{self.data.env_id}/{self.data.task_id}"


class GymSweTasksetConfig(vf.TasksetConfig):  # type: ignore[misc]
    env_id: str = "CodeDebug-v0"
    """The gym_swe env: CodeDebug-v0 or SWEGym-v0."""
    tasks: str = "bundled"
    """The env's task source: 'bundled', a dataset name, or a .jsonl/.parquet path."""
    sandbox: str = "local"
    """Where each rollout's episode runs: 'local' (bubblewrap) or 'docker'."""
    max_turns: int = Field(10, ge=1)
    """The gym_swe episode's turn limit."""
    max_tool_calls: int = Field(DEFAULT_MAX_TOOL_CALLS, ge=1)
    """Tool calls run per action (the rest are not run)."""
    max_step_seconds: float = Field(DEFAULT_MAX_STEP_SECONDS, gt=0)
    """Wall time of one action's tool calls together (each command's timeout clipped to what is left)."""
    task_ids: list[str] | None = None
    """The tasks to play (default: every task of the source)."""

    @field_validator("env_id")
    @classmethod
    def _known_env(cls, env_id: str) -> str:
        return check_env_id(env_id)

    @field_validator("sandbox")
    @classmethod
    def _known_sandbox(cls, sandbox: str) -> str:
        return check_backend(sandbox)


class GymSweTaskset(vf.Taskset[GymSweTask, GymSweTasksetConfig]):  # type: ignore[misc]
    """The tasks of a gym_swe env, each with the env's opening chat as its prompt."""

    def load(self) -> Iterator[GymSweTask]:
        from gym_swe.envs.unwrapped import tool_env

        config: GymSweTasksetConfig = self.config
        make_kwargs = make_kwargs_of(config)
        env = tool_env(gymnasium.make(config.env_id, **make_kwargs))
        try:
            known = [task.task_id for task in env.tasks]
            for task_id in config.task_ids or ():
                if task_id not in known:
                    raise ValueError(unknown_name("task", task_id, known))
            chosen = list(config.task_ids or known)
            openings = [env.opening_messages(task_id) for task_id in chosen]
        finally:
            env.close()
        for task_id, opening in zip(chosen, openings):
            system = [m["content"] for m in opening if m["role"] == "system"]
            user = [m["content"] for m in opening if m["role"] == "user"]
            yield GymSweTask(
                GymSweData(
                    id=task_id,
                    name=f"{config.env_id}/{task_id}",
                    env_id=config.env_id,
                    task_id=task_id,
                    make_kwargs=make_kwargs,
                    system_prompt="\n\n".join(system) or None,
                    prompt="\n\n".join(user),
                ),
                config.task,
            )


class GymSweEnvConfig(vf.EnvConfig):  # type: ignore[misc]
    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())
    """The one seat: the policy under evaluation or training (``--env.agent.*``). Its harness runs in a
    local subprocess by default (verifiers' default is a remote Prime sandbox): it is verifiers' chat
    program, which runs no tools (the agent's commands run in gym_swe's sandbox)."""


class GymSweEnv(vf.Env[GymSweEnvConfig]):  # type: ignore[misc]
    """One rollout is one gym_swe episode, stepped host-side with the agent's replies (see the module). The
    gym_swe envs are kept between rollouts (a task source is loaded once, not per rollout), one per rollout
    in flight; each ``reset`` starts a fresh sandbox."""

    def __init__(self, config: GymSweEnvConfig) -> None:
        super().__init__(config)
        self._idle: dict[str, list[gymnasium.Env[Any, Any]]] = {}
        self._idle_lock = threading.Lock()

    async def stop(self) -> None:
        with self._idle_lock:
            envs = [env for idle in self._idle.values() for env in idle]
            self._idle.clear()
        for env in envs:
            await asyncio.to_thread(env.close)

    async def run(self, task: GymSweTask, agents: Any) -> None:
        data = task.data
        key = json.dumps([data.env_id, data.make_kwargs], sort_keys=True)
        gym_env = await asyncio.to_thread(self._take, key, data)
        env = as_episode_env(gym_env)
        try:
            await asyncio.to_thread(env.reset, options={"task_id": data.task_id})
            episode_return, last = 0.0, None
            async with agents.agent.interaction(task) as interaction:
                segment = await interaction.turn()
                while not segment.terminated:
                    observation, reward, terminated, truncated, info = await asyncio.to_thread(
                        env.step, action_of(segment)
                    )
                    episode_return += float(reward)
                    if terminated or truncated:
                        last = info
                        break
                    segment = await interaction.turn(str(observation) or "[no output]")
                if last is None:  # verifiers ended the exchange first: graded as at gym_swe's turn limit
                    last = await asyncio.to_thread(env.truncate, STOPPED_BY_VERIFIERS)
                    episode_return += float(last.get("reward_grade", 0.0))
                # Recorded before the exchange closes, so that verifiers' scoring and logs see it.
                record(interaction.trace, data.task_id, episode_return, last)
        except BaseException:
            await asyncio.to_thread(gym_env.close)  # whatever it held (a running episode) goes with it
            raise
        with self._idle_lock:
            self._idle.setdefault(key, []).append(gym_env)

    def _take(self, key: str, data: GymSweData) -> gymnasium.Env[Any, Any]:
        with self._idle_lock:
            idle = self._idle.get(key)
            if idle:
                return idle.pop()
        steps = {"max_episode_steps": data.make_kwargs["max_turns"]}
        return gymnasium.make(data.env_id, **steps, **data.make_kwargs)


class GymSweHarness(NullHarness):  # type: ignore[misc]
    """verifiers' chat program with no tools of its own (its ``null`` harness): the taskset's default, so
    that the model's only tools are gym_swe's, run in gym_swe's sandbox."""


def record(trace: Any, task_id: str, episode_return: float, last: dict[str, Any]) -> None:
    """The episode's return as the trace's reward ``gym_swe``, and how it ended in ``trace.info``."""
    trace.record_reward("gym_swe", episode_return)
    grade = last.get("grade") or {}
    trace.info["gym_swe"] = {
        "task_id": task_id, "end_reason": last.get("end_reason"), "resolved": bool(grade.get("resolved")),
        "tests_passed": grade.get("passed"), "tests": grade.get("total"), "error": last.get("error"),
    }  # fmt: skip


def make_kwargs_of(config: GymSweTasksetConfig) -> dict[str, Any]:
    return {
        "tasks": config.tasks,
        "sandbox": config.sandbox,
        "max_turns": config.max_turns,
        "max_tool_calls": config.max_tool_calls,
        "max_step_seconds": config.max_step_seconds,
    }


def action_of(segment: Any) -> str | dict[str, Any]:
    """The agent's reply as a gym_swe action: its text, or, where the server parsed tool calls out of it,
    the assistant message with them (gym_swe takes either)."""
    for message in reversed(segment.messages):
        if getattr(message, "role", None) != "assistant":
            continue
        if not message.tool_calls:
            return str(message.content or "")
        calls = [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call in message.tool_calls
        ]
        return {"role": "assistant", "content": message.content or "", "tool_calls": calls}
    return segment.last_reply  # type: ignore[no-any-return]


__all__ = ["GymSweEnv", "GymSweHarness", "GymSweTaskset"]
