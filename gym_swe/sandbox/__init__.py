"""Sandboxes: where agent commands and tests run. Pick a backend by name with `make_sandbox`."""

from __future__ import annotations

import importlib
from typing import Any

from gym_swe.errors import ConfigError, unknown_name
from gym_swe.sandbox.base import ExecResult, Limits, Sandbox

# Backend name -> "module:Class". Imported on first use, so `import gym_swe` never pulls in the docker SDK.
BACKENDS: dict[str, str] = {
    "local": "gym_swe.sandbox.local:LocalSandbox",
    "docker": "gym_swe.sandbox.docker:DockerSandbox",
}


def check_backend(name: str) -> str:
    """``name`` if it is a sandbox backend; else a `ConfigError` (a ValueError) listing the known ones."""
    if name not in BACKENDS:
        raise ConfigError(unknown_name("sandbox backend", name, BACKENDS))
    return name


def backend_class(name: str) -> type[Sandbox]:
    """The class that implements backend ``name``; an unknown name lists the known ones."""
    module, _, attribute = BACKENDS[check_backend(name)].partition(":")
    backend: type[Sandbox] = getattr(importlib.import_module(module), attribute)
    return backend


def check_limits(backend: str, limits: Limits) -> None:
    """Raise `ConfigError` where ``limits`` do not fit backend ``backend`` beyond what `Limits` checks itself
    (its writable mounts, filled, could take more memory than ``limits.memory_mb``); the envs call this at
    make. A backend with more to check has a ``check_limits(limits)`` classmethod."""
    check = getattr(backend_class(backend), "check_limits", None)
    if check is not None:
        check(limits)


def make_sandbox(backend: str = "local", **kwargs: Any) -> Sandbox:
    """Create a sandbox by backend name: ``make_sandbox("local")``, ``make_sandbox("docker", image=...)``."""
    return backend_class(backend)(**kwargs)


__all__ = ["BACKENDS", "ExecResult", "Limits", "Sandbox", "backend_class", "check_limits", "make_sandbox"]
