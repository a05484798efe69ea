"""Agent harnesses, unmodified, as gym_swe players: installed by gym_swe, run inside the episode's sandbox,
talking to the interception proxy in their own wire dialect, graded by gym_swe.

Use one::

    gym-swe harnesses install pi                        # npm packages and Node, into gym_swe's cache
    gym-swe eval --env CodeDebug-v0 --generator hf --model M --harness pi
    python trainers/grpo.py --env CodeDebug-v0 --model M --harness pi

or from Python: `collect_with_harness` (the collector's surface, ``harness="pi"``), or one episode with
`run_episode(env, proxy, "pi", task_id)` on a `ProxyServer` serving a unix socket.

The modules:

- `base`: the contract. A `Harness` has a ``name``, the proxy ``dialect`` it speaks, the npm ``packages``
  it is installed from, ``launch(run)`` (given a `HarnessRun`: the files, command line and environment of a
  run, a `Launch`) and ``end(exit)`` (given a `HarnessExit`: submitted, stopped or failed, a `HarnessEnd`).
- `registry`: the harnesses by name (`HARNESSES`, `harness_named`; a wrong name names the nearest).
- `install`: npm packages at pinned versions (lockfiles in ``locks/NAME/``) and the Node they run on, into a
  folder gym_swe owns (`harness_root`), with npm's tarball cache beside it so reinstalls work offline.
- `runner`: one episode inside the sandbox (local jail or docker), the same for every harness: the installed
  files and the proxy's socket bound in, a forwarder on the sandbox's loopback, the graded end.
- `collector`: many episodes in threads (`collect_with_harness`, `collector_for`), as `gym-swe eval` and the
  trainer call them; Stop and Ctrl-C end them all.
- `image`: ``gym-swe images build --harness NAME``, the base image with the harness copied in, offline.
- one module per harness: `pi`, `opencode`, `codex`, `claude_code`, `gemini_cli`.

Add a harness: a module here whose object satisfies `Harness` (see
`pi` for the shape: a frozen dataclass whose ``launch`` writes the CLI's config under `HarnessRun.home` and
points it at `HarnessRun.base_url` with `HarnessRun.api_key`), a line in `registry.HARNESSES`, a lockfile
(``python scripts/lock_harness.py NAME``), and tests beside ``tests/integrations/harnesses/test_pi.py``
with the scripted helpers in ``tests/integrations/harnesses/scripted.py``. mini-swe-agent, a Python package,
keeps its own module (`gym_swe.integrations.mini_swe_agent`), and plays on the host by default.
"""

from __future__ import annotations

import importlib
from typing import Any

# Public name -> the module (under this package) that defines it; imported on first use.
_NAMES = {
    "Harness": "base",
    "HarnessEnd": "base",
    "HarnessExit": "base",
    "HarnessRun": "base",
    "Launch": "base",
    "NpmPackage": "base",
    "end_of_exit": "base",
    "HARNESSES": "registry",
    "HARNESS_NAMES": "registry",
    "harness_named": "registry",
    "harness_root": "install",
    "install_harness": "install",
    "installation": "install",
    "require_installed": "install",
    "harness_sandbox_options": "runner",
    "run_episode": "runner",
    "end_episode": "runner",
    "collect_with_harness": "collector",
    "collector_for": "collector",
    "run_episodes": "collector",
    "build_harness_image": "image",
}

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        return getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
    raise AttributeError(name)
