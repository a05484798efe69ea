"""`ServedEnv`: an env served by ``gym-swe serve`` on another machine, as an episode env.

It is `gym_swe.rollout.episode_env.EpisodeEnv`, so the collector and ``trainers/grpo.py --env_url`` play a
served env exactly as one in this process: the same observations, the same info (the chat, the parse
errors, the grade at the end), the same token ids in the trajectory. One client holds one session (one
WebSocket, one env and one sandbox on the server); open as many as episodes should run at once::

    from gym_swe.serve.client import ServedEnv
    from gym_swe.rollout.collector import collect

    envs = [ServedEnv("http://envs.example:8000", token=token) for _ in range(16)]
    trajectories = collect(envs, generator, envs[0].task_ids(), samples_per_task=8)

It speaks OpenEnv's WebSocket protocol (``{"type": "reset" | "step" | "state", "data": ...}``) with a plain
synchronous socket: no event loop, no thread, a step costs a round trip. The server sends only the messages
the chat gained, and the client keeps the chat. A server that dies, or a connection that drops, ends the
running episode as `ServerGone` with the reason (the collector records a failed trajectory, never a crash);
the next `reset` connects again.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import TYPE_CHECKING, Any, SupportsFloat

from gymnasium.envs.registration import EnvSpec

from gym_swe.errors import ConfigError, GymSweError, TaskError, missing_dependency
from gym_swe.serve.guard import TOKEN_VARIABLE

if TYPE_CHECKING:
    from gym_swe.serve.wire import ObservationFields

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""Largest answer the client reads (an observation with its grade, or a listing of many tasks)."""


SESSION_ENDING_CODES = ("CAPACITY_REACHED", "FACTORY_ERROR", "SESSION_ERROR")
"""Error codes after which an OpenEnv server closes the WebSocket (the session never was, or is no more)."""


class ServerGone(GymSweError):
    """The env server closed the connection or could not be reached: the session and its episode are lost."""


class ServerRefused(GymSweError):
    """The env server refused a request (at capacity, a wrong argument, no episode running)."""


# What a refusal named "<Kind>: <message>" raises here: the server's own kinds as their gym_swe errors.
_KINDS: dict[str, type[GymSweError]] = {"ConfigError": ConfigError, "TaskError": TaskError}


class ServedEnv:
    """A session of a served env (see the module docstring).

    Args:
        url: the server, ``http://host:port`` (or ``ws://``; a path after the port is kept).
        token: the server's bearer token (``gym-swe serve --token-file``), sent on every connection; None:
            the ``GYM_SWE_SERVE_TOKEN`` environment variable's, if it is set.
        connect_timeout_s: how long to wait for the server to answer a connection.
        call_timeout_s: how long one reset or step may take (None: as long as the server works on it; the
            connection's keepalive pings still find a server that is gone).
    """

    def __init__(
        self,
        url: str,
        token: str | None = None,
        connect_timeout_s: float = 30.0,
        call_timeout_s: float | None = None,
    ) -> None:
        try:
            import pydantic  # noqa: F401  (the wire models)
            from websockets.sync.client import connect
        except ImportError:
            raise missing_dependency("websockets", "serve-client", feature="ServedEnv") from None
        self._connect_ws = connect
        self.url = _http_root(url)
        self.token = token if token is not None else (os.environ.get(TOKEN_VARIABLE) or None)
        self.connect_timeout_s, self.call_timeout_s = connect_timeout_s, call_timeout_s
        self._socket: Any = None
        self._stack: contextlib.ExitStack | None = None
        self._messages: list[dict[str, Any]] = []
        self._done = True
        from gym_swe.serve.wire import StateFields

        state = StateFields.model_validate(self._call({"type": "state"}))
        if not state.env_id:
            raise ConfigError(f"{self.url} is not a gym_swe env server: its state names no env")
        self.env_id, self.max_turns, self.tools = state.env_id, state.max_turns, state.tools
        self._spec = EnvSpec(id=state.env_id, max_episode_steps=state.max_turns)

    # -- the episode env -----------------------------------------------------------------------------------
    @property
    def spec(self) -> EnvSpec | None:
        return self._spec

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self._messages

    @property
    def done(self) -> bool:
        return self._done

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        data: dict[str, Any] = dict(options or {})
        if seed is not None:
            data["seed"] = seed
        self._done = True  # until the episode has started
        fields = self._observation(self._call({"type": "reset", "data": data}))
        self._messages = list(fields.messages)
        self._done = False
        return fields.text, fields.info(list(self._messages))

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        if isinstance(action, str):
            data: dict[str, Any] = {"text": action}
        elif isinstance(action, dict):
            data = {"message": action}
        else:
            kind = type(action).__name__
            raise ConfigError(
                f"the action must be the model's text (str) or an assistant message (dict), got {kind}"
            )
        answer = self._call({"type": "step", "data": data}, episode=True)
        fields = self._observation(answer)
        self._messages = self._messages + fields.messages  # a new list: the caller may hold the last one
        self._done = fields.terminated or fields.truncated
        reward = float(answer.get("reward") or 0.0)
        return fields.text, reward, fields.terminated, fields.truncated, fields.info(list(self._messages))

    def truncate(self, reason: str) -> dict[str, Any]:
        if self._done:
            raise GymSweError("truncate() after the episode ended: call reset() first")
        fields = self._observation(self._call({"type": "step", "data": {"truncate": reason}}, episode=True))
        self._messages = self._messages + fields.messages
        self._done = True
        return fields.info(list(self._messages))

    def close(self) -> None:
        """End the session (the server closes its env and sandbox). Closing twice does no harm."""
        socket = self._socket
        self._done = True
        if socket is not None:
            try:
                socket.send(json.dumps({"type": "close"}))
            except Exception:
                pass  # a server that is gone has closed the session already
        self._drop()

    def __enter__(self) -> ServedEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ServedEnv({self.url!r}, env_id={getattr(self, 'env_id', None)!r})"

    # -- what the server serves ----------------------------------------------------------------------------
    def task_ids(self) -> list[str]:
        """The ids of the tasks the server serves, in order (its task API)."""
        return [str(task["id"]) for task in self.tasks()]

    def tasks(self) -> list[dict[str, Any]]:
        """The served tasks: id, index and the opening prompt (system and user messages) of each."""
        import httpx

        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        try:
            answer = httpx.post(f"{self.url}/{self.env_id}/tasks", json={"split": "default"}, headers=headers,
                                timeout=self.connect_timeout_s)  # fmt: skip
        except httpx.TransportError as error:
            raise ServerGone(f"the env server at {self.url} could not be reached: {error}") from None
        if answer.status_code != 200:
            raise ServerRefused(
                f"{self.url} answered the task listing with {answer.status_code}: {answer.text[:300]}"
            )
        tasks: list[dict[str, Any]] = answer.json()["tasks"]
        return tasks

    # -- the wire ------------------------------------------------------------------------------------------
    def _connect(self) -> Any:
        if self._socket is not None:
            return self._socket
        from websockets.exceptions import InvalidStatus

        headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
        ws_url = "ws" + self.url.removeprefix("http") + "/ws"
        stack = contextlib.ExitStack()
        try:
            # No compression: the messages are small text, and deflate costs more than it saves on a LAN.
            self._socket = stack.enter_context(
                self._connect_ws(
                    ws_url,
                    additional_headers=headers,
                    open_timeout=self.connect_timeout_s,
                    max_size=MAX_MESSAGE_BYTES,
                    compression=None,
                    proxy=None,
                )
            )
        except InvalidStatus as error:
            status = error.response.status_code
            why = "the server wants its bearer token (token=)" if status == 403 else f"HTTP {status}"
            raise ServerRefused(f"the env server at {self.url} refused the session: {why}") from None
        except (OSError, TimeoutError) as error:
            raise ServerGone(f"the env server at {self.url} could not be reached: {error}") from None
        self._stack = stack
        return self._socket

    def _drop(self) -> None:
        """Forget the connection (closing it, if it is not closed already): the next call opens another."""
        stack, self._stack, self._socket = self._stack, None, None
        if stack is not None:
            try:
                stack.close()
            except Exception:
                pass

    def _call(self, message: dict[str, Any], episode: bool = False) -> dict[str, Any]:
        """Send one message and read its answer's data; a refusal raises, a lost connection raises
        `ServerGone` (and, ``episode``: ends the episode here too)."""
        from websockets.exceptions import ConnectionClosed

        socket = self._connect()
        try:
            try:
                socket.send(json.dumps(message))
            except ConnectionClosed:
                pass  # a refused session is an error frame, then a close: the frame is still to be read
            raw = socket.recv(timeout=self.call_timeout_s)
        except (ConnectionClosed, OSError, TimeoutError) as error:
            self._drop()
            if episode:
                self._done = True
            raise ServerGone(f"the env server at {self.url} is gone: {_why(error)}") from None
        answer = json.loads(raw)
        if answer.get("type") == "error":
            data = answer.get("data") or {}
            said = str(data.get("message", ""))
            if said.startswith("SessionClosed"):  # reaped while idle: the session and its episode are gone
                self._drop()
                if episode:
                    self._done = True
                raise ServerGone(f"the env server at {self.url} closed this session: {said}")
            if data.get("code") in SESSION_ENDING_CODES:
                self._drop()
            raise _refusal(data, self.url)
        result: dict[str, Any] = answer.get("data") or {}
        return result

    def _observation(self, data: dict[str, Any]) -> ObservationFields:
        from gym_swe.serve.wire import ObservationFields

        return ObservationFields.model_validate(data.get("observation") or {})


def _refusal(data: dict[str, Any], url: str) -> GymSweError:
    message = str(data.get("message", "unknown error"))
    code = data.get("code")
    if code == "CAPACITY_REACHED":
        return ServerRefused(f"the env server at {url} is at capacity: {message}")
    kind, _, text = message.partition(": ")
    if kind in _KINDS:
        return _KINDS[kind](text)
    return ServerRefused(f"{url}: {message} ({code})")


def _why(error: BaseException) -> str:
    from websockets.exceptions import ConnectionClosed

    if isinstance(error, ConnectionClosed):
        frame = error.rcvd or error.sent
        if frame is None:
            return "the connection dropped without a close frame (the server process died, or the network)"
        return f"the connection closed with code {frame.code}" + (
            f" ({frame.reason})" if frame.reason else ""
        )
    if isinstance(error, TimeoutError):
        return "no answer within call_timeout_s"
    return f"{type(error).__name__}: {error}"


def _http_root(url: str) -> str:
    if not isinstance(url, str) or "://" not in url:
        raise ConfigError(f"the env server's url is http://host:port, got {url!r}")
    scheme, _, rest = url.partition("://")
    scheme = {"ws": "http", "wss": "https"}.get(scheme, scheme)
    if scheme not in ("http", "https"):
        raise ConfigError(f"the env server's url is http(s):// or ws(s)://, got {url!r}")
    return f"{scheme}://{rest.rstrip('/').removesuffix('/ws')}"
