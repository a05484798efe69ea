"""`gym-swe serve`: a registered env served as an OpenEnv environment (`gym_swe.serve`), until Ctrl-C.

    gym-swe serve CodeDebug-v0 max_turns=10 sandbox=docker --port 8000 --max-sessions 16

The words after the env id are its make kwargs, ``KEY=VALUE`` each; a value is read as JSON where it is
JSON (``max_turns=10``, ``tool_options={"bash": {"timeout": 60}}``), else as a string (``tasks=bundled``).
A wrong kwarg fails here, naming the allowed ones, before the server starts. The bearer token comes from a
file (``--token-file``) or the environment (``GYM_SWE_SERVE_TOKEN``), never from the command line, which
other users of the machine can read.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from gym_swe.cli.options import ENV_HELP, command
from gym_swe.errors import ConfigError, MissingDependencyError, missing_dependency, unknown_name
from gym_swe.serve.guard import TOKEN_VARIABLE, check_binding


def add_to(commands: Any) -> None:
    parser = command(
        commands,
        "serve",
        "serve an env as an OpenEnv environment: WebSocket sessions, MCP tools, task listing",
        [
            "gym-swe serve CodeDebug-v0",
            "gym-swe serve SWEGym-v0 sandbox=docker max_turns=40 --max-sessions 16",
            "GYM_SWE_SERVE_TOKEN=$(cat token) gym-swe serve CodeDebug-v0 --host 0.0.0.0 --port 8000",
        ],
    )
    parser.add_argument("env", help=ENV_HELP + ", or module:EnvId for an env your own package registers")
    parser.add_argument(
        "kwargs", nargs="*", metavar="KEY=VALUE", help="make kwargs of the env (value: JSON, else text)"
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (other than loopback: needs a token)"
    )
    parser.add_argument("--port", type=int, default=8000, help="port to listen on")
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=8,
        help="sessions at once, each with its sandbox; one more is refused",
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=1800.0,
        help="seconds a session may sit idle before it is reaped",
    )
    parser.add_argument(
        "--token-file", help=f"a file holding the bearer token clients must send (or set {TOKEN_VARIABLE})"
    )
    parser.add_argument(
        "--mode",
        default="simulation",
        choices=["simulation", "production"],
        help="OpenEnv's mode: production drops the stateless HTTP /reset, /step and /state",
    )
    parser.set_defaults(run=run)


def parse_kwargs(words: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` words as make kwargs (see the module docstring); a word without ``=`` or a key given
    twice is a `ConfigError`."""
    kwargs: dict[str, Any] = {}
    for word in words:
        key, equals, value = word.partition("=")
        if not equals or not key.isidentifier():
            raise ConfigError(f"make kwargs are KEY=VALUE words (max_turns=10, sandbox=docker), got {word!r}")
        if key in kwargs:
            raise ConfigError(f"make kwarg {key!r} is given twice")
        try:
            kwargs[key] = json.loads(value)
        except ValueError:
            kwargs[key] = value
    return kwargs


def check_served_env(env_id: str) -> None:
    """A registered env id, or ``module:EnvId`` (Gymnasium imports the module, which registers it)."""
    import gymnasium

    if ":" in env_id or env_id in gymnasium.registry:
        return
    from gym_swe.registration import ENVS

    raise ConfigError(unknown_name("env", env_id, [str(spec["id"]) for spec in ENVS]))


def read_token(token_file: str | None) -> str | None:
    if token_file is not None:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
        except OSError as error:
            raise ConfigError(f"--token-file {token_file}: {error.strerror}") from None
        if not token:
            raise ConfigError(f"--token-file {token_file} is empty")
        return token
    return os.environ.get(TOKEN_VARIABLE) or None


def run(args: argparse.Namespace) -> int:
    check_served_env(args.env)  # before anything loads
    kwargs = parse_kwargs(args.kwargs)
    if not 0 < args.port < 65536:
        raise ConfigError(f"--port must be 1..65535, got {args.port}")
    if args.max_sessions < 1:
        raise ConfigError(f"--max-sessions must be >= 1, got {args.max_sessions}")
    if not args.idle_timeout > 0:
        raise ConfigError(f"--idle-timeout must be > 0 seconds, got {args.idle_timeout}")
    token = read_token(args.token_file)
    check_binding(args.host, token)
    from gym_swe.serve.catalog import Catalog

    # The env first (a wrong kwarg fails here, in a second), OpenEnv after (its import takes seconds).
    catalog = Catalog(args.env, kwargs, max_sessions=args.max_sessions)
    try:
        import openenv.core.env_server  # noqa: F401
    except ImportError:
        catalog.close()
        error = missing_dependency("openenv", "serve", feature="gym-swe serve")
        raise MissingDependencyError(
            f"{error} (in an environment of its own: OpenEnv pins mcp<2, which the mini-swe-agent extra's "
            "litellm cannot import; `make serve-env` makes one at .venv-serve)"
        ) from None
    from gym_swe.serve.app import serve

    where = f"http://{args.host}:{args.port}"
    print(
        f"serving {args.env} ({len(catalog.task_ids)} tasks, up to {args.max_sessions} sessions) at {where} "
        f"(WebSocket {where.replace('http', 'ws', 1)}/ws, MCP {where}/mcp)"
        + (", bearer token required" if token else ""),
        flush=True,
    )
    try:
        serve(catalog, host=args.host, port=args.port, idle_timeout_s=args.idle_timeout, token=token,
              mode=args.mode)  # fmt: skip
    finally:
        catalog.close()
    return 0
