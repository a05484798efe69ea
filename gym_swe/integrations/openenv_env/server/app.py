"""The gym_swe OpenEnv server as the container runs it: `gym_swe.serve.app` configured from the environment.

    GYM_SWE_ENV           the env id (default CodeDebug-v0)
    GYM_SWE_ENV_KWARGS    its make kwargs, as JSON (default {})
    GYM_SWE_MAX_SESSIONS  sessions at once, each with its sandbox (default 8)
    GYM_SWE_IDLE_TIMEOUT  seconds a session may sit idle before it is reaped (default 1800)
    GYM_SWE_SERVE_TOKEN   the bearer token every client sends (required: the server listens beyond loopback)
    HOST, PORT            where to listen (default 0.0.0.0:8000)

``app`` is what ``uvicorn server.app:app`` (openenv.yaml's ``app:``) serves; ``python -m server.app`` runs
``main``, which serves it with gym_swe's limits (message size, connections) and closes every sandbox on exit.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from gym_swe.errors import ConfigError, GymSweError
from gym_swe.serve.app import make_app, serve
from gym_swe.serve.catalog import Catalog
from gym_swe.serve.guard import TOKEN_VARIABLE, check_binding


def settings() -> dict[str, Any]:
    """The server's settings from the environment variables (module docstring); a bad one is a ConfigError."""
    try:
        kwargs = json.loads(os.environ.get("GYM_SWE_ENV_KWARGS") or "{}")
        max_sessions = int(os.environ.get("GYM_SWE_MAX_SESSIONS") or 8)
        idle_timeout = float(os.environ.get("GYM_SWE_IDLE_TIMEOUT") or 1800)
        port = int(os.environ.get("PORT") or 8000)
    except ValueError as error:
        raise ConfigError(f"a GYM_SWE_* setting is malformed: {error}") from None
    if not isinstance(kwargs, dict):
        raise ConfigError("GYM_SWE_ENV_KWARGS must be a JSON object of make kwargs")
    host = os.environ.get("HOST") or "0.0.0.0"
    token = os.environ.get(TOKEN_VARIABLE) or None
    check_binding(host, token)
    env_id = os.environ.get("GYM_SWE_ENV") or "CodeDebug-v0"
    return {"env_id": env_id, "kwargs": kwargs, "host": host, "port": port, "max_sessions": max_sessions,
            "idle_timeout": idle_timeout, "token": token}  # fmt: skip


def main() -> None:
    try:
        given = settings()
        catalog = Catalog(given["env_id"], given["kwargs"], max_sessions=given["max_sessions"])
    except GymSweError as error:
        print(f"gym-swe serve: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    print(f"serving {given['env_id']} at http://{given['host']}:{given['port']}", flush=True)
    serve(catalog, host=given["host"], port=given["port"], idle_timeout_s=given["idle_timeout"],
          token=given["token"])  # fmt: skip


def __getattr__(name: str) -> Any:
    # ``app`` is made when asked for (uvicorn server.app:app), not when main() imports this module.
    if name == "app":
        given = settings()
        catalog = Catalog(given["env_id"], given["kwargs"], max_sessions=given["max_sessions"])
        return make_app(catalog, idle_timeout_s=given["idle_timeout"], token=given["token"])
    raise AttributeError(name)


if __name__ == "__main__":
    main()
