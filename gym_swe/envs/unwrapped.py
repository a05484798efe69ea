"""The gym_swe env under Gymnasium's wrappers, typed.

``gymnasium.make`` returns the env wrapped (order enforcing, the step limit, the checker), and
``env.unwrapped`` is typed as any ``gymnasium.Env``. Code that needs what only a gym_swe env has (its task
set, its tool schemas, its sandbox) asks `tool_env` for it, which checks what it hands back.
"""

from __future__ import annotations

from typing import Any

import gymnasium

from gym_swe.envs.base import ToolEnv


def tool_env(env: gymnasium.Env[Any, Any]) -> ToolEnv:
    """``env.unwrapped``, a gym_swe `ToolEnv`; TypeError, naming the env, for an env that is not one."""
    inner = env.unwrapped
    if not isinstance(inner, ToolEnv):
        name = env.spec.id if env.spec is not None else type(env).__name__
        raise TypeError(f"{name} is not a gym_swe env: its unwrapped env is a {type(inner).__name__}")
    return inner
