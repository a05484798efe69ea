"""The harnesses by name: where each is defined, looked up on first use (importing this loads none of them).

A harness module defines an object that satisfies `gym_swe.integrations.harnesses.base.Harness`; its line
here makes it a name that ``gym-swe eval --harness``, ``trainers/grpo.py --harness``, ``gym-swe harnesses
install`` and ``gym-swe images build --harness`` take. mini-swe-agent is a Python package that plays on the
host by default (`gym_swe.integrations.mini_swe_agent`), so it is named here without a `Harness` object.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from gym_swe.errors import ConfigError, unknown_name

if TYPE_CHECKING:
    from gym_swe.integrations.harnesses.base import Harness

MINI_SWE_AGENT = "mini-swe-agent"
"""The Python harness (the ``mini-swe-agent`` extra), with its own collector."""

HARNESSES: dict[str, str] = {
    "pi": "gym_swe.integrations.harnesses.pi:PI",
    "opencode": "gym_swe.integrations.harnesses.opencode:OPENCODE",
    "codex": "gym_swe.integrations.harnesses.codex:CODEX",
    "claude-code": "gym_swe.integrations.harnesses.claude_code:CLAUDE_CODE",
    "gemini-cli": "gym_swe.integrations.harnesses.gemini_cli:GEMINI_CLI",
}
"""The npm harnesses: name -> ``"module:attribute"`` of its `Harness`."""

HARNESS_NAMES: tuple[str, ...] = (MINI_SWE_AGENT, *HARNESSES)
"""Every harness gym_swe runs unmodified through its proxy, as ``--harness`` takes them."""


def check_harness_name(name: str) -> str:
    """``name`` when it is a harness gym_swe knows; else a ConfigError naming the nearest."""
    if name not in HARNESS_NAMES:
        raise ConfigError(unknown_name("harness", name, HARNESS_NAMES))
    return name


def harness_named(name: str) -> Harness:
    """The npm harness called ``name``. mini-swe-agent has no `Harness` object (see the module docstring):
    asking for it says where it is; an unknown name names the nearest."""
    check_harness_name(name)
    if name == MINI_SWE_AGENT:
        raise ConfigError(
            "mini-swe-agent is a Python harness: play it with gym_swe.integrations.mini_swe_agent "
            "(collect_with_harness, run_episode, run_episode_inside)"
        )
    module, _, attribute = HARNESSES[name].partition(":")
    harness: Harness = getattr(importlib.import_module(module), attribute)
    return harness
