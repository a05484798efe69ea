"""The server: any registered gym_swe env behind the OpenEnv protocol, on OpenEnv's own server library.

`make_app` builds the FastAPI app with OpenEnv's ``create_fastapi_app``, which gives every route OpenEnv
clients know: ``/ws`` (WebSocket sessions: reset, step, state, close, and ``mcp`` frames), ``/mcp``
(JSON-RPC: ``tools/list``, ``tools/call``, ``openenv/session/create|close``), ``/health``, ``/metadata``,
``/schema``, the task API (``/list_environments``, ``/{env}/splits``, ``/{env}/tasks``, ``/{env}/num_tasks``,
``/{env}/task``, ``/{env}/task_range``) and, in simulation mode, the stateless ``/reset``, ``/step`` and
``/state``. Each WebSocket (or MCP) session has its own env and its own sandbox (`ServedEnvironment`);
``max_sessions`` caps them (one more is refused at once: "at capacity", never queued) and a session idle
for ``idle_timeout_s`` is reaped (its env closed, its sandbox with it).

On top of OpenEnv's app, gym_swe adds what a server facing untrusted clients needs: a bearer token on every
route but ``/health`` (optional; `serve` binds to loopback by default and refuses any other address without
one), a cap on request bodies (413), refusals that are the client's fault answered as 4xx, never 500, and
a WebSocket client that goes away mid-step noticed at once (`gym_swe.serve.connection`): its step is stopped
and its session closed, sandbox and slot with it, within seconds rather than when the step would have ended.
"""

from __future__ import annotations

import functools

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from openenv.core.env_server import create_fastapi_app
from openenv.core.env_server.types import ConcurrencyConfig

from gym_swe.errors import ConfigError, TaskError
from gym_swe.serve.catalog import Catalog
from gym_swe.serve.connection import WatchClient
from gym_swe.serve.environment import Refused, ServedEnvironment, SweAction, SweObservation, SweState
from gym_swe.serve.guard import MAX_MESSAGE_BYTES, Guard, check_binding


def make_app(
    catalog: Catalog,
    idle_timeout_s: float = 1800.0,
    token: str | None = None,
    mode: str = "simulation",
) -> FastAPI:
    """The served env's app: OpenEnv's, its sessions made from ``catalog``, guarded (module docstring)."""
    if not idle_timeout_s > 0:
        raise ConfigError(f"idle_timeout_s must be > 0 seconds, got {idle_timeout_s!r}")
    if mode not in ("simulation", "production"):
        raise ConfigError(f"mode must be 'simulation' or 'production', got {mode!r}")
    app: FastAPI = create_fastapi_app(
        # A partial of the class: OpenEnv reads SUPPORTS_CONCURRENT_SESSIONS from what it wraps.
        functools.partial(ServedEnvironment, catalog),
        SweAction,
        SweObservation,
        concurrency_config=ConcurrencyConfig(
            max_concurrent_envs=catalog.max_sessions, session_timeout=idle_timeout_s
        ),
        env_name=catalog.env_id,
        state_cls=SweState,
        mode=mode,
    )
    app.title = f"gym_swe {catalog.env_id} (OpenEnv)"

    async def refused(request: Request, error: Exception) -> JSONResponse:
        """A refusal that is the client's doing, with its status (a Refused's own; 400 a wrong argument)."""
        if isinstance(error, Refused):
            return JSONResponse({"detail": str(error)}, status_code=error.status)
        return JSONResponse({"detail": f"{type(error).__name__}: {error}"}, status_code=400)

    for kind in (Refused, ConfigError, TaskError):
        app.add_exception_handler(kind, refused)

    async def close_sessions() -> None:
        """At shutdown: every session's env and sandbox closed, the catalog's env too."""
        catalog.close()

    app.router.on_shutdown.append(close_sessions)
    app.add_middleware(WatchClient)  # inside the guard: only a client it let in is read ahead
    app.add_middleware(Guard, token=token, max_body=MAX_MESSAGE_BYTES)
    return app


def serve(
    catalog: Catalog,
    host: str = "127.0.0.1",
    port: int = 8000,
    idle_timeout_s: float = 1800.0,
    token: str | None = None,
    mode: str = "simulation",
) -> None:
    """Run the server until it is stopped (Ctrl-C, SIGTERM); every session's sandbox is closed on the way out.
    An address other than loopback needs a token: the sandboxes run whatever their clients send."""
    import uvicorn

    check_binding(host, token)
    app = make_app(catalog, idle_timeout_s=idle_timeout_s, token=token, mode=mode)
    uvicorn.run(
        app,
        host=host,
        port=port,
        ws_max_size=MAX_MESSAGE_BYTES,
        limit_concurrency=catalog.max_sessions + 64,  # sessions, and room for health checks and task reads
        log_level="warning",
        timeout_graceful_shutdown=30,
    )
