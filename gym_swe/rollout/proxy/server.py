"""The proxy's HTTP server: per rollout, an endpoint in each wire dialect, on aiohttp, in a thread of its own.

Routes, under ``/rollout/{id}`` (``{id}`` is a rollout's, its secret the API key, presented as the dialect
presents one):

- ``POST /v1/chat/completions`` (OpenAI chat completions), ``GET /v1/models``;
- ``POST /v1/responses`` (the OpenAI Responses API);
- ``POST /v1/messages`` and ``/v1/messages/count_tokens`` (Anthropic Messages);
- ``POST /v1beta/models/{model}:generateContent``, ``:streamGenerateContent`` and ``:countTokens`` (Google).

A turn: the dialect (`gym_swe.rollout.proxy.dialects`) reads the request into the internal chat
representation; the recorder renders or bridges it (`TokenRecorder`); the trainer's generator samples with
the trainer's sampling parameters; the dialect answers in kind (``stream``: as that API's server-sent
events). The answer's model is the trainer's model name whatever the harness asked for. Over a chat generator
(``openai-chat``, a hosted model) the proxy is in black-box mode (`gym_swe.rollout.proxy.black_box`): the
request's chat goes to the generator as messages, its message comes back, the turns are recorded as messages
(no token ids), and the budgets, errors, registry and bounds are the same.

Errors are in the dialect's own error shape: 401 wrong or missing secret, 404 unknown or ended rollout, 413 a
body over ``max_body_bytes``, 400 malformed JSON or a request the proxy cannot represent (naming the field),
400 ``context_length_exceeded`` and 403 ``max_turns`` when a budget ends the rollout, 502 when the generator
failed, 429 past ``max_connections_per_rollout`` requests of one rollout at once, 408 a body slower than
``idle_timeout``, 415 a compressed body (``Content-Encoding``: it would be inflated past ``max_body_bytes``
before the cap). One rollout's bad request never stops the server or touches another rollout.

Connections are bounded in number (``max_connections``, in all; by default a quarter of the process's
descriptor limit), per rollout, and in time (``idle_timeout`` to send a request): see
`gym_swe.rollout.proxy.connections`. A flood of connections from a sandbox closes the oldest idle ones, never
a request being served, and never takes the descriptors the process needs for anything else.

Typical use, from any thread::

    with ProxyServer(generator, SamplingParams(max_tokens=512), max_model_len=8192) as proxy:
        rollout = proxy.open_rollout("task-1", max_turns=30)
        ...  # point the harness at rollout.base_url_for(its dialect) with api key rollout.secret
        trajectory = rollout.finish(reward=episode_return, info=last_step_info)
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from gym_swe.errors import ConfigError, missing_dependency
from gym_swe.rollout.chat import ChatFormat
from gym_swe.rollout.generators.base import Generator, SamplingParams
from gym_swe.rollout.proxy.batching import GenerationQueue
from gym_swe.rollout.proxy.black_box import (
    COUNT_REFUSAL,
    MessageRecorder,
    chat_answer,
    endpoint_messages,
    is_context_overflow,
)
from gym_swe.rollout.proxy.connections import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_PER_ROLLOUT,
    ConnectionLimiter,
    default_max_connections,
    tcp_listener,
    unix_listener,
)
from gym_swe.rollout.proxy.conversation import Answer, ChatRequest, RequestError, make_answer
from gym_swe.rollout.proxy.dialects import DIALECTS, Dialect, Route
from gym_swe.rollout.proxy.handle import RolloutHandle
from gym_swe.rollout.proxy.recorder import TokenRecorder
from gym_swe.rollout.proxy.registry import RolloutRegistry, RolloutState
from gym_swe.rollout.trajectory import Trajectory

try:
    from aiohttp import web
except ImportError:  # pragma: no cover - the extra is part of every test install
    raise missing_dependency("aiohttp", "proxy") from None

DEFAULT_MAX_BODY = 64 * 1024 * 1024  # a long agent conversation with big tool outputs stays well below


class ProxyServer:
    """See the module docstring. ``host``/``port`` (0: any free port) or ``unix_socket`` (a path: for a
    harness in a sandbox that reaches the host through a socket bound into its jail, and nothing else).
    ``on_turn``: called after each completion the proxy answers, a harness's turn (for progress bars).
    ``generator``: a token generator (hf, vllm, vllm-server: token-exact), or a chat generator
    (``generator.chat``: ``openai-chat``, black-box mode; ``model_name`` defaults to its ``model``).

    Bounds (`gym_swe.rollout.proxy.connections`): ``max_connections`` open at once (None: a quarter of this
    process's descriptor limit, at most 4096; it must exceed the requests served at once, one per running
    rollout), ``max_connections_per_rollout`` requests of one rollout at once, ``idle_timeout`` seconds for a
    connection to send its request (and for a request's body to arrive)."""

    def __init__(
        self,
        generator: Generator,
        sampling: SamplingParams | None = None,
        max_model_len: int = 8192,
        host: str = "127.0.0.1",
        port: int = 0,
        unix_socket: str | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY,
        template_kwargs: Mapping[str, Any] | None = None,
        model_name: str | None = None,
        on_turn: Callable[[], None] | None = None,
        max_connections: int | None = None,
        max_connections_per_rollout: int = DEFAULT_MAX_PER_ROLLOUT,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        self.black_box = bool(getattr(generator, "chat", False))
        if self.black_box and template_kwargs:
            name = getattr(generator, "name", "?")
            raise ConfigError(
                f"template_kwargs would do nothing: generator {name!r} returns chat messages, and no chat "
                "template renders its requests (black-box mode)"
            )
        if not isinstance(max_model_len, int) or max_model_len < 2:
            raise ConfigError(f"max_model_len must be an int >= 2, got {max_model_len!r}")
        if not isinstance(max_body_bytes, int) or max_body_bytes < 1024:
            raise ConfigError(f"max_body_bytes must be an int >= 1024, got {max_body_bytes!r}")
        max_connections = default_max_connections() if max_connections is None else max_connections
        if not isinstance(max_connections, int) or max_connections < 2:
            raise ConfigError(f"max_connections must be an int >= 2, got {max_connections!r}")
        per_rollout = max_connections_per_rollout
        if not isinstance(per_rollout, int) or per_rollout < 1:
            raise ConfigError(f"max_connections_per_rollout must be an int >= 1, got {per_rollout!r}")
        if not isinstance(idle_timeout, (int, float)) or idle_timeout <= 0:
            raise ConfigError(f"idle_timeout must be a positive number of seconds, got {idle_timeout!r}")
        self.generator = generator
        self.sampling = sampling or SamplingParams()
        self.max_model_len = max_model_len
        self.max_body_bytes = max_body_bytes
        self.template_kwargs = dict(template_kwargs or {})
        hosted = getattr(generator, "model", None) if self.black_box else None  # the hosted model's name
        self.model_name = model_name or str(hosted if isinstance(hosted, str) else generator.name)
        self.on_turn = on_turn  # called on the server's thread after each completion it answers (progress)
        self.registry = RolloutRegistry()
        self.connections = ConnectionLimiter(max_connections, max_connections_per_rollout)
        self.idle_timeout = float(idle_timeout)
        self._host, self._port = host, port
        self.unix_socket = unix_socket
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._queue: GenerationQueue | None = None
        self._listeners: list[tuple[socket.socket, asyncio.Task[None]]] = []
        self.url = ""

    # -- lifecycle -------------------------------------------------------------------------------------------
    def start(self) -> ProxyServer:
        if self._thread is not None:
            return self
        ready = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._loop = loop
            try:
                loop.run_until_complete(self._start_site())
            except BaseException as error:
                failure.append(error)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._stop_site())
            loop.close()

        self._thread = threading.Thread(target=serve, name="gym-swe-proxy", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread = None
            raise ConfigError(f"the proxy could not start: {failure[0]}") from failure[0]
        return self

    async def _start_site(self) -> None:
        app = web.Application(client_max_size=self.max_body_bytes)
        for dialect in DIALECTS:
            for route in dialect.routes:
                path = "/rollout/{rollout_id}" + route.path
                app.router.add_route(route.method, path, self._handler(dialect, route))
        # keepalive_timeout: aiohttp closes a connection idle that long, from its opening as after a response.
        self._runner = web.AppRunner(
            app, access_log=None, handle_signals=False, keepalive_timeout=self.idle_timeout
        )
        await self._runner.setup()
        self._queue = GenerationQueue(self.generator)
        # The proxy accepts its connections itself (not through an aiohttp site), to bound them.
        if self.unix_socket:
            self._serve_on(unix_listener(self.unix_socket), self.unix_socket)
            self.url = "http://localhost"
        else:
            listener = tcp_listener(self._host, self._port)
            self._serve_on(listener, "tcp")
            self.url = f"http://{self._host}:{listener.getsockname()[1]}"

    def _serve_on(self, listener: socket.socket, door: str) -> None:
        server = self._runner.server  # type: ignore[union-attr]
        assert server is not None
        accepting = asyncio.get_running_loop().create_task(self.connections.serve(listener, server, door))
        self._listeners.append((listener, accepting))

    def listen(self, path: str) -> str:
        """Serve on one more unix socket, at ``path``, as well (the proxy must be running); returns the path.

        Give each sandbox whose harness reaches the proxy through a socket a socket of its own: a directory
        per sandbox, bound into it by `gym_swe.integrations.mini_swe_agent.inside_sandbox_options`, holding
        ``listen(f"{directory}/proxy.sock")``. A client in one sandbox that opens connections as fast as it
        can then fills only its own socket's backlog, and what the proxy closes to make room is its own (see
        `gym_swe.rollout.proxy.connections`). Any rollout may be reached through any socket: the route and
        secret still say which."""
        if self._thread is None or self._loop is None:
            raise ConfigError("the proxy is not running: call start() (or use it as a context manager) first")

        async def open_socket() -> None:
            self._serve_on(unix_listener(path), path)

        try:
            asyncio.run_coroutine_threadsafe(open_socket(), self._loop).result()
        except OSError as error:
            raise ConfigError(f"the proxy could not listen at {path}: {error}") from error
        return path

    async def _stop_site(self) -> None:
        for listener, accepting in self._listeners:
            accepting.cancel()
            try:
                await accepting
            except (asyncio.CancelledError, Exception):
                pass
            listener.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def close(self) -> None:
        if self._thread is None or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        if self._queue is not None:
            self._queue.close()
        self._thread = None

    def __enter__(self) -> ProxyServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- rollouts --------------------------------------------------------------------------------------------
    def open_rollout(
        self, task_id: str = "", sample_index: int = 0, env_id: str = "", max_turns: int | None = None
    ) -> RolloutHandle:
        """A new rollout with its own route and secret. ``max_turns``: the most completions it gets; the
        next request ends it with a 403."""
        if self._thread is None:
            raise ConfigError("the proxy is not running: call start() (or use it as a context manager) first")
        if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
            raise ConfigError(f"max_turns must be a positive int or None, got {max_turns!r}")
        trajectory = Trajectory(
            task_id=task_id,
            sample_index=sample_index,
            env_id=env_id,
            generator=getattr(self.generator, "name", ""),
        )
        recorder: TokenRecorder | MessageRecorder
        if self.black_box:
            recorder = MessageRecorder(trajectory, self.max_model_len)
        else:
            recorder = TokenRecorder(
                self.generator.tokenizer, trajectory, self.max_model_len, self.template_kwargs
            )
        return RolloutHandle(self, self.registry.add(recorder, max_turns))

    def _end_soon(self, state: RolloutState, reason: str) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(state.end, reason)

    def _finish(self, state: RolloutState, reason: str) -> Trajectory:
        async def end() -> None:
            async with state.lock:  # after a request in flight, before any later one
                state.end(reason)

        assert self._loop is not None
        asyncio.run_coroutine_threadsafe(end(), self._loop).result()
        recorder = state.recorder
        trajectory = recorder.trajectory
        trajectory.end_reason = trajectory.end_reason or state.end_reason
        if trajectory.turns:
            trajectory.rerender_matches = recorder.rerender_matches()
        self.registry.forget(state.rollout_id)
        return trajectory

    # -- handlers --------------------------------------------------------------------------------------------
    def _handler(
        self, dialect: Dialect, route: Route
    ) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        """The handler of one route: the secret checked, then a turn, a token count or the model list; any
        `RequestError` answered in the dialect's error shape."""

        async def handle(request: web.Request) -> web.StreamResponse:
            try:
                rollout_id = request.match_info["rollout_id"]
                given = dialect.secret(request.headers, request.query)
                state = self.registry.authorize(rollout_id, given, dialect.auth_hint)
                if route.kind == "models":
                    assert dialect.models_reply is not None
                    return web.json_response(dialect.models_reply(self.model_name))
                with self.connections.serving(request.protocol, state.rollout_id):
                    if route.kind == "count":
                        return await self._count(request, dialect, route)
                    return await self._serve_turn(request, state, dialect, route)
            except RequestError as error:
                return _error_response(dialect, error)

        return handle

    async def _serve_turn(
        self, request: web.Request, state: RolloutState, dialect: Dialect, route: Route
    ) -> web.StreamResponse:
        body = await self._read_json(request)
        chat = dialect.parse(body, route)
        # stream or not, a retry of the same request gets the same answer
        replay = {k: v for k, v in body.items() if k not in dialect.replay_ignores}
        digest = hashlib.sha256((dialect.name + json.dumps(replay, sort_keys=True)).encode()).hexdigest()
        # Shielded: a client that gives up (an SDK timing out before its retry) does not cut a turn in half;
        # the turn is recorded and its answer kept for the retry.
        answer = await asyncio.shield(self._answer(state, chat, digest))
        if not chat.stream:
            return web.json_response(dialect.reply(answer, chat))
        stream = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await stream.prepare(request)
        for chunk in dialect.events(answer, chat):
            await stream.write(chunk)
        await stream.write_eof()
        return stream

    async def _count(self, request: web.Request, dialect: Dialect, route: Route) -> web.Response:
        """The request's prompt length under the chat template (Anthropic's count_tokens, Google's
        countTokens): rendered, not recorded."""
        chat = dialect.parse(await self._read_json(request), route)
        if self.black_box:
            raise RequestError(400, COUNT_REFUSAL, code="count_unavailable")

        def count() -> int:
            chat_format = ChatFormat(self.generator.tokenizer, chat.tools, self.template_kwargs)
            return len(chat_format.prompt_ids(chat.messages))

        try:
            tokens = await asyncio.get_running_loop().run_in_executor(None, count)
        except ValueError as error:
            raise RequestError(400, f"the chat template cannot render this request: {error}") from None
        assert dialect.count_reply is not None
        return web.json_response(dialect.count_reply(tokens))

    async def _answer(self, state: RolloutState, chat: ChatRequest, digest: str) -> Answer:
        async with state.lock:
            answer = state.answered.get(digest)
            if answer is not None:
                state.retries += 1
                return answer
            answer = await self._complete(state, chat)
            state.answered[digest] = answer
            return answer

    async def _read_json(self, request: web.Request) -> Any:
        encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding != "identity":  # decoded as it arrives, past any cap: a kilobyte becomes a gigabyte
            raise RequestError(
                415,
                f"this proxy takes request bodies uncompressed (Content-Encoding {encoding!r} is refused)",
                code="unsupported_media_type",
            )
        try:
            raw = await asyncio.wait_for(request.read(), self.idle_timeout)
        except asyncio.TimeoutError:
            raise RequestError(
                408,
                f"the request body did not arrive within this proxy's idle_timeout ({self.idle_timeout:g} s)",
                code="request_timeout",
            ) from None
        except web.HTTPRequestEntityTooLarge:
            raise RequestError(
                413,
                f"the request body is larger than this proxy's max_body_bytes ({self.max_body_bytes})",
                code="request_too_large",
            ) from None
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise RequestError(
                400, f"the request body is not valid JSON: {error}", code="invalid_json"
            ) from None
        except RecursionError:
            raise RequestError(400, "the body's JSON is nested too deeply", code="invalid_json") from None

    async def _complete(self, state: RolloutState, chat: ChatRequest) -> Answer:
        """One new turn of ``state``: budgets checked, prompt recorded, sample generated and recorded."""
        if state.ended:
            raise RequestError(
                404,
                f"rollout {state.rollout_id!r} has ended ({state.end_reason})",
                "not_found_error",
                "rollout_ended",
            )
        if state.max_turns is not None and state.turns >= state.max_turns:
            state.end("max_turns")
            raise RequestError(
                403,
                f"this rollout's turn budget (max_turns={state.max_turns}) is spent: it has ended",
                "permission_error",
                "max_turns",
            )
        recorder = state.recorder
        if isinstance(recorder, MessageRecorder):
            answer = await self._chat_turn(state, recorder, chat)
        else:
            answer = await self._token_turn(state, recorder, chat)
        state.turns += 1
        if self.on_turn is not None:
            self.on_turn()
        return answer

    async def _token_turn(self, state: RolloutState, recorder: TokenRecorder, chat: ChatRequest) -> Answer:
        """A turn rendered with the chat template and sampled as token ids, recorded exactly."""

        def prepare() -> tuple[list[int], SamplingParams]:
            prompt = recorder.prompt_for(chat)
            return prompt, self.sampling.with_max_tokens(min(self.sampling.max_tokens, recorder.room()))

        assert self._queue is not None
        try:
            # Rendering a long conversation takes milliseconds: in a thread, so other rollouts are served.
            prompt, sample = await self._queue.generate(prepare)
        except RequestError:
            state.end("max_model_len")
            raise
        except ValueError as error:  # the template cannot render these messages
            raise RequestError(400, f"the chat template cannot render this request: {error}") from None
        if sample.error:
            raise _generator_failed(state, sample.error)
        message, finish = recorder.record(chat, sample)
        return make_answer(
            uuid.uuid4().hex,
            int(time.time()),
            self.model_name,
            message,
            finish,
            sample.text,
            len(prompt),
            len(sample.token_ids),
        )

    async def _chat_turn(self, state: RolloutState, recorder: MessageRecorder, chat: ChatRequest) -> Answer:
        """A black-box turn: the request's chat to the chat generator, its message back (see
        `gym_swe.rollout.proxy.black_box`)."""
        try:
            params = recorder.sampling_for(chat, self.sampling)
        except RequestError:
            state.end("max_model_len")
            raise
        assert self._queue is not None
        sample = await self._queue.generate_chat(endpoint_messages(chat.messages), chat.tools, params)
        if sample.error and is_context_overflow(sample.error):  # the endpoint's own count: a budget
            state.end("max_model_len")
            raise RequestError(400, f"the model's endpoint: {sample.error}", code="context_length_exceeded")
        if sample.error:
            raise _generator_failed(state, sample.error)
        message, finish = recorder.record(chat, sample)
        return chat_answer(uuid.uuid4().hex, int(time.time()), self.model_name, message, finish, sample)


def _generator_failed(state: RolloutState, error: str) -> RequestError:
    """The generator failed: the rollout's error, its end, and the 502 its request gets."""
    state.recorder.trajectory.error = f"generator: {error}"
    state.end("generator_error")
    return RequestError(502, f"the generator failed: {error}", "server_error", "generator_error")


def _error_response(dialect: Dialect, error: RequestError) -> web.Response:
    response = web.json_response(dialect.error_body(error), status=error.status)
    if error.status in (408, 413, 415, 429):  # what is left of the request may still be arriving: not read
        response.force_close()
    return response


__all__ = ["ProxyServer", "RolloutHandle"]
