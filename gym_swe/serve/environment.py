"""One session of a served env, as OpenEnv's server library wants it: an ``MCPEnvironment`` (OpenEnv's
environment with MCP tools) around one gym_swe env, made at the session's first reset, with its own sandbox.

The server (`gym_swe.serve.app`) makes one per WebSocket session (and a short-lived one for each stateless
HTTP call). ``reset``, ``step`` and the MCP tools all go to the same gym_swe env, one call at a time, in a
thread of the session's own: a command that runs for a minute in one session's sandbox holds up no other
session. The env's tools are the session's MCP tools (``tools/list``, ``tools/call``): a call is one turn
with that one tool call, exactly as a step with it, and answers with what the model would read. The grading
boundary is the env's: the grade, its reward and the end reason exist once the episode has ended, and
then only in the observation of the call that ended it and in the session's state.

A WebSocket client that goes away while a step (or an MCP tool call) runs does not hold its sandbox until
the step ends: the step is stopped (`gym_swe.envs.base.ToolEnv.interrupt`: the running command killed, no
further call run) within seconds, and the server then closes the session, its sandbox and its slot (see
`gym_swe.serve.connection`).
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools import Tool
from fastmcp.tools.base import ToolResult
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import PrivateAttr

from gym_swe.envs.base import ToolEnv
from gym_swe.errors import ConfigError, GymSweError, TaskError
from gym_swe.rollout.episode_env import EpisodeEnv
from gym_swe.serve.catalog import SPLIT, AtCapacity, Catalog
from gym_swe.serve.connection import client_gone
from gym_swe.serve.wire import (
    ActionFields,
    AssistantMessage,
    ObservationFields,
    StateFields,
    observation_fields,
)


class SweAction(Action, ActionFields):  # type: ignore[misc]  # OpenEnv is untyped here (its own venv)
    """A served gym_swe env's action: the model's ``text``, its assistant ``message``, or ``truncate``."""


class SweObservation(Observation, ObservationFields):  # type: ignore[misc]
    """A served gym_swe env's observation (see `gym_swe.serve.wire.ObservationFields`)."""


class SweState(State, StateFields):  # type: ignore[misc]
    """A served gym_swe env's session state (see `gym_swe.serve.wire.StateFields`)."""


class Refused(GymSweError):
    """A request the session refuses, with the HTTP status that says why (the WebSocket says it in its error
    frame): 400 a wrong argument, 409 no episode to step, 410 a closed session, 503 at capacity."""

    def __init__(self, status: int, error: BaseException) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.status = status


class EpisodeNotRunning(GymSweError):
    """A step or tool call with no episode running in this session."""


class SessionClosed(GymSweError):
    """The session was closed (by its client, or reaped after sitting idle) and its env with it."""


RESET_KEYS = ("seed", "episode_id", "task_id", "split", "index")
STOP_EVERY_S = 1.0
"""How often a step whose client has gone is told again to stop, until it has: a command that was starting
at the first stop escapes that one signal, never the next."""


class ServedEnvironment(MCPEnvironment):  # type: ignore[misc]
    """One session of the served env; see the module docstring. Made by the server with its `Catalog`."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        catalog.sessions.add(self)
        server = FastMCP(f"gym_swe {catalog.env_id}")
        for schema in catalog.tool_schemas:
            server.add_tool(EnvTool.for_schema(schema, self))
        super().__init__(server)
        self._lock = threading.Lock()
        self._worker: ThreadPoolExecutor | None = None
        self._env: EpisodeEnv | None = None
        self._has_slot = False
        self._closed = False
        self._known = 0  # messages of the episode's chat the client has been sent
        self._reward = 0.0
        self._snapshot = SweState(
            env_id=catalog.env_id, max_turns=catalog.max_turns, tools=catalog.tool_schemas
        )

    # -- OpenEnv's Environment ----------------------------------------------------------------------------
    def reset(self, seed: int | None = None, episode_id: str | None = None, **options: Any) -> SweObservation:
        """Start an episode of ``task_id`` (or of the task at ``index`` of ``split``), or of a task picked
        with ``seed``; any episode running in the session ends, ungraded, as in this process."""
        unknown = sorted(set(options) - set(RESET_KEYS))
        if unknown:
            raise Refused(400, ConfigError(f"reset: unknown key(s) {unknown}; allowed: {list(RESET_KEYS)}"))
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
            raise Refused(400, ConfigError(f"reset: seed must be an int >= 0, got {seed!r}"))
        if episode_id is not None and (not isinstance(episode_id, str) or len(episode_id) > 255):
            raise Refused(400, ConfigError("reset: episode_id must be a string of at most 255 characters"))
        with self._lock:
            self._check_open()
            try:
                task_id = self.catalog.task_id_of(
                    options.get("task_id"), options.get("split"), options.get("index")
                )
                if task_id is not None:
                    self.catalog.opening_messages(task_id)  # an unknown id fails here, before a sandbox
                if not self._has_slot:
                    self.catalog.take_slot()
                    self._has_slot = True
                if self._env is None:
                    self._env = self.catalog.new_episode_env()
                text, info = self._env.reset(seed=seed, options={"task_id": task_id} if task_id else None)
            except AtCapacity as error:
                raise Refused(503, error) from None
            except (ConfigError, TaskError) as error:
                raise Refused(400, error) from None
            self._known, self._reward = 0, 0.0
            observation = self._observation(text, None, False, False, info)
            self._snapshot = SweState(
                episode_id=episode_id or uuid.uuid4().hex,
                step_count=0,
                env_id=self.catalog.env_id,
                max_turns=self.catalog.max_turns,
                tools=self.catalog.tool_schemas,
                task_id=info.get("task_id"),
                running=True,
            )
            return observation

    def _step_impl(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> SweObservation:
        if not isinstance(action, SweAction):
            raise Refused(400, ConfigError(f"expected a gym_swe action, got {type(action).__name__}"))
        with self._lock:
            env = self._running_env()
            if action.truncate is not None:
                info = env.truncate(action.truncate)
                return self._after(env, "", float(info.get("reward_grade", 0.0)), False, True, info)
            text, reward, terminated, truncated, info = env.step(action.env_action())
            return self._after(env, text, float(reward), terminated, truncated, info)

    async def step_async(
        self, action: Action, timeout_s: float | None = None, **kwargs: Any
    ) -> SweObservation:
        return await self._step_in_thread(action)

    @property
    def state(self) -> SweState:
        # Read in the server's event loop, so never behind the lock a running step holds: the last snapshot.
        return self._snapshot

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(**self.catalog.metadata())

    def close(self) -> None:
        with self._lock:
            self._closed = True
            env, self._env = self._env, None
            try:
                if env is not None:
                    env.close()
            finally:
                if self._has_slot:
                    self._has_slot = False
                    self.catalog.give_slot()
        if self._worker is not None:
            self._worker.shutdown(wait=False)
        super().close()

    # -- OpenEnv's task API (read by the server's /{env}/splits, /tasks, /num_tasks, /task, /task_range) --
    def list_splits(self) -> list[dict[str, Any]]:
        return [{"name": SPLIT, "type": "train", "num_tasks": len(self.catalog.task_ids)}]

    def list_tasks(self, split: str) -> list[dict[str, Any]]:
        self.catalog.check_split(split)
        return [self.catalog.task(index) for index in range(len(self.catalog.task_ids))]

    def num_tasks(self, split: str) -> int:
        self.catalog.check_split(split)
        return len(self.catalog.task_ids)

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        self.catalog.check_split(split)
        return self.catalog.task(index)

    def get_task_range(
        self, split: str, start: int | None = None, stop: int | None = None
    ) -> list[dict[str, Any]]:
        self.catalog.check_split(split)
        return [self.catalog.task(index) for index in range(len(self.catalog.task_ids))[start:stop]]

    # -- the MCP tools -------------------------------------------------------------------------------------
    async def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one tool call as one turn of the session's episode (in the session's thread); what the model
        would read. No episode running, or a closed session: an MCP tool error."""
        encoded = json.dumps(arguments, ensure_ascii=False)
        call = {"id": "call0", "type": "function", "function": {"name": name, "arguments": encoded}}
        action = SweAction(message=AssistantMessage(role="assistant", content="", tool_calls=[call]))
        try:
            observation = await self._step_in_thread(action)
        except Refused as refused:
            raise ToolError(str(refused)) from None
        return observation.text

    # -- the parts -----------------------------------------------------------------------------------------
    async def _step_in_thread(self, action: Action) -> SweObservation:
        """The step in the session's thread; stopped, should the connection's client go meanwhile."""
        loop = asyncio.get_running_loop()
        played = loop.run_in_executor(self._thread(), self._step_impl, action)
        gone = client_gone()
        if gone is None:
            return await played
        watching: asyncio.Future[Any] = asyncio.ensure_future(gone.wait())
        either: set[asyncio.Future[Any]] = {played, watching}
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watching.cancel()
        while not played.done():  # the client has gone: nobody reads what the step still does
            self._stop_step()
            await asyncio.wait({played}, timeout=STOP_EVERY_S)
        return await played

    def _stop_step(self) -> None:
        """Stop the step the session's thread runs (from the event loop: no lock, the step holds it)."""
        base = getattr(self._env, "unwrapped", self._env)
        if isinstance(base, ToolEnv):
            base.interrupt()

    def _thread(self) -> ThreadPoolExecutor:
        """The session's thread: its calls run one at a time, and none waits on another session's."""
        if self._closed:
            raise Refused(410, SessionClosed("this session is closed"))
        if self._worker is None:
            self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gym_swe-session")
        return self._worker

    def _check_open(self) -> None:
        if self._closed:
            raise Refused(
                410, SessionClosed("this session is closed (by its client, or reaped after sitting idle)")
            )

    def _running_env(self) -> EpisodeEnv:
        self._check_open()
        if self._env is None or self._env.done:
            why = "no episode has started" if self._env is None else "the episode has ended"
            raise Refused(409, EpisodeNotRunning(f"{why} in this session: reset it to start one"))
        return self._env

    def _after(
        self,
        env: EpisodeEnv,
        text: str,
        reward: float,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
    ) -> SweObservation:
        self._reward += reward
        observation = self._observation(text, reward, terminated, truncated, info)
        ended = env.done
        self._snapshot = self._snapshot.model_copy(
            update={
                "step_count": self._snapshot.step_count + 1,
                "running": not ended,
                "end_reason": info.get("end_reason") if ended else None,
                "reward": self._reward if ended else None,
                "grade": info.get("grade") if ended else None,
            }
        )
        return observation

    def _observation(
        self, text: str, reward: float | None, terminated: bool, truncated: bool, info: dict[str, Any]
    ) -> SweObservation:
        fields = observation_fields(info, self._known)
        fields["extra_info"] = _jsonable(fields["extra_info"])
        self._known = len(info["messages"])
        return SweObservation(
            text=text,
            reward=reward,
            done=terminated or truncated,
            terminated=terminated,
            truncated=truncated,
            **fields,
        )


TEXT_RESULT = {
    "type": "object",
    "properties": {"result": {"type": "string", "description": "What the model reads."}},
    "required": ["result"],
    "x-fastmcp-wrap-result": True,
}
"""A tool's result: the text the model would read, also as structured content (which MCP clients, OpenEnv's
``MCPToolClient`` among them, unwrap into the call's value)."""


class EnvTool(Tool):  # type: ignore[misc]
    """One of the env's tools as an MCP tool: its own name, description and parameter schema (the env's,
    exactly), run as one turn of its session's episode."""

    _session: ServedEnvironment = PrivateAttr()

    @classmethod
    def for_schema(cls, schema: dict[str, Any], session: ServedEnvironment) -> EnvTool:
        function = schema["function"]
        tool = cls(
            name=function["name"],
            description=function.get("description", ""),
            parameters=function.get("parameters") or {"type": "object", "properties": {}},
            output_schema=TEXT_RESULT,
        )
        tool._session = session
        return tool

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        text = await self._session.call_tool(self.name, dict(arguments or {}))
        return ToolResult(content=text, structured_content={"result": text})


def _jsonable(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` as JSON can carry it: what is not JSON (an object a user's env put in its info) as its
    repr, so that one odd info value cannot break the session's answer."""
    loaded: dict[str, Any] = json.loads(json.dumps(value, default=repr, ensure_ascii=False))
    return loaded
