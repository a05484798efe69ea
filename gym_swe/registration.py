"""The envs gym_swe registers with Gymnasium, as one flat list with string entry points, so importing
gym_swe loads no env code (only ``gymnasium.make`` does).

No env registers a step limit (``max_episode_steps``): an episode's length is the env's own ``max_turns``,
at whose end the env grades it. Each gets `gym_swe.envs.limits.TurnLimit` as an additional wrapper instead,
which makes a ``max_episode_steps`` given to ``gymnasium.make`` that same limit (see its module); an env
added to `ENVS` gets it too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

from gymnasium.envs.registration import WrapperSpec, register, registry

from gym_swe.errors import ConfigError, unknown_name


class EnvRegistration(TypedDict):
    """The arguments of one ``gymnasium.register`` call."""

    id: str
    entry_point: str
    kwargs: dict[str, Any]


ENVS: list[EnvRegistration] = [
    {
        "id": "CodeDebug-v0",
        "entry_point": "gym_swe.envs.codedebug:CodeDebugEnv",
        "kwargs": {},
    },
    {
        "id": "SWEGym-v0",
        "entry_point": "gym_swe.envs.swegym:SWEGymEnv",
        "kwargs": {},
    },
    {
        "id": "Harbor-v0",
        "entry_point": "gym_swe.envs.harbor:HarborEnv",
        "kwargs": {},
    },
]


def check_env_id(env_id: str) -> str:
    """``env_id`` if it is one of gym_swe's envs; else a `ConfigError` (a ValueError) naming the nearest."""
    known = [registration["id"] for registration in ENVS]
    if env_id not in known:
        raise ConfigError(unknown_name("gym_swe env", env_id, known))
    return env_id


TURN_LIMIT = WrapperSpec(name="TurnLimit", entry_point="gym_swe.envs.limits:TurnLimit", kwargs={})
"""`gym_swe.envs.limits.TurnLimit`, as ``gymnasium.make`` applies it after its TimeLimit."""


def register_envs() -> None:
    """Register every env of ``ENVS`` not yet in Gymnasium's registry (importing twice is harmless), each
    without a step limit of its own and with `TURN_LIMIT`."""
    for spec in ENVS:
        if spec["id"] not in registry:
            register(**spec, additional_wrappers=(TURN_LIMIT,))


def _codedebug_sources() -> dict[str, str]:
    from gym_swe.tasks.functions import load_function_tasks

    return {"bundled": str(len(load_function_tasks("bundled"))), "humanevalpack": "164 (from the Hub)"}


def _swegym_sources() -> dict[str, str]:
    from gym_swe.tasks.swe import HUB_SOURCES, load_swe_tasks

    counts = {"bundled": str(len(load_swe_tasks("bundled")))}
    counts.update({name: f"from the Hub ({repo})" for name, (repo, _, _) in HUB_SOURCES.items()})
    return counts


def _harbor_sources() -> dict[str, str]:
    from gym_swe.tasks.harbor import BUNDLED_DIR

    bundled = [path for path in BUNDLED_DIR.glob("*/task.toml")] if BUNDLED_DIR.is_dir() else []
    return {"bundled": str(len(bundled)), "PATH": "a Harbor task folder, or a folder of them"}


# For `gym-swe envs`: each env's task sources and how many tasks they hold.
TASK_SOURCES: dict[str, Callable[[], dict[str, str]]] = {
    "CodeDebug-v0": _codedebug_sources,
    "SWEGym-v0": _swegym_sources,
    "Harbor-v0": _harbor_sources,
}
