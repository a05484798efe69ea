"""CodeDebug-v0 with scripted actions, for stopping a run at a known point: the episodes of `QUICK_TASK`
submit at once, those of `HANGING_TASK` run a long command in their sandbox from their second turn on. So
when one of the first has ended (its trajectory written), one of the second is surely still running, in a
real sandbox. Imported by trainers/grpo.py as ``--env hanging_env:HangingDebug-v0`` (tests/trainers on
PYTHONPATH)."""

from __future__ import annotations

import json
from typing import Any

import gymnasium

import gym_swe  # noqa: F401  (registers CodeDebug-v0)

QUICK_TASK, HANGING_TASK = "GymSwe/0", "GymSwe/1"
SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'
HANG = (
    "<tool_call>"
    + json.dumps({"name": "bash", "arguments": {"command": "sleep 590", "timeout": 600}})
    + "</tool_call>"
)


class HangingDebug(gymnasium.Wrapper):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(gymnasium.make("CodeDebug-v0", **kwargs))
        self._task_id, self._turn = "", 0

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(**kwargs)
        self._task_id, self._turn = info["task_id"], 0
        return observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self._turn += 1
        if self._task_id == QUICK_TASK:
            action = SUBMIT
        elif self._turn > 1:
            action = HANG
        return self.env.step(action)


gymnasium.register(id="HangingDebug-v0", entry_point=HangingDebug)
