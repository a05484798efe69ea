"""The envs gym_swe registers with Gymnasium, as one flat list with string entry points, so importing
gym_swe loads no env code (only ``gymnasium.make`` does)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

from gymnasium.envs.registration import register, registry

from gym_swe.errors import ConfigError, unknown_name


class EnvRegistration(TypedDict):
    """The arguments of one ``gymnasium.register`` call."""

    id: str
    entry_point: str
    max_episode_steps: int
    kwargs: dict[str, Any]


ENVS: list[EnvRegistration] = [
    {
        "id": "CodeDebug-v0",
        "entry_point": "gym_swe.envs.codedebug:CodeDebugEnv",
        "max_episode_steps": 30,
        "kwargs": {},
    },
    {
        "id": "SWEGym-v0",
        "entry_point": "gym_swe.envs.swegym:SWEGymEnv",
        "max_episode_steps": 50,
        "kwargs": {},
    },
]


def check_env_id(env_id: str) -> str:
    """``env_id`` if it is one of gym_swe's envs; else a `ConfigError` (a ValueError) naming the nearest."""
    known = [registration["id"] for registration in ENVS]
    if env_id not in known:
        raise ConfigError(unknown_name("gym_swe env", env_id, known))
    return env_id


def register_envs() -> None:
    """Register every env of ``ENVS`` not yet in Gymnasium's registry (importing twice is harmless)."""
    for spec in ENVS:
        if spec["id"] not in registry:
            register(**spec)


def _codedebug_sources() -> dict[str, str]:
    from gym_swe.tasks.functions import load_function_tasks

    return {"bundled": str(len(load_function_tasks("bundled"))), "humanevalpack": "164 (from the Hub)"}


def _swegym_sources() -> dict[str, str]:
    from gym_swe.tasks.swe import HUB_SOURCES, load_swe_tasks

    counts = {"bundled": str(len(load_swe_tasks("bundled")))}
    counts.update({name: f"from the Hub ({repo})" for name, (repo, _, _) in HUB_SOURCES.items()})
    return counts


# For `gym-swe envs`: each env's task sources and how many tasks they hold.
TASK_SOURCES: dict[str, Callable[[], dict[str, str]]] = {
    "CodeDebug-v0": _codedebug_sources,
    "SWEGym-v0": _swegym_sources,
}
