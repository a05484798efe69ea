"""A small env for trying the trainer in a minute: no sandbox, a reward a tiny random model can learn.

``ToySay-v0``: each turn the model "says" something (its whole action is the call's argument); the reward of a
turn is the share of the letters it wrote that are vowels, over ``max_turns`` turns. A random model writes
about a third vowels; a model that learned writes many more. Episodes are multi-turn (the env answers
"Again." between turns), so the trainer's token-exact path (bridges) is exercised.

Make it with ``gymnasium.make("toy_env:ToySay-v0")`` with examples/ on the path (the module registers the
id), or train on it: ``PYTHONPATH=examples python trainers/grpo.py --env toy_env:ToySay-v0 --model PATH``.
`make demo` ends with such a run (examples/train_demo.py); the trainer's tests use it too.

It is also the shape of a user's own env: besides Gymnasium's API, the collector plays it through
``truncate``, ``messages`` and ``done`` (the contract is `gym_swe.rollout.episode_env.EpisodeEnv`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium

from gym_swe.envs.spaces import CodeText

VOWELS = set("aeiouAEIOU")


@dataclass(frozen=True)
class ToyTask:
    task_id: str
    prompt: str


TASKS = [ToyTask(f"toy/{i}", f"Say something, round {i}.") for i in range(8)]


def vowel_share(text: str) -> float:
    letters = [c for c in text if c.isalpha()]
    return sum(c in VOWELS for c in letters) / len(letters) if letters else 0.0


class ToySayEnv(gymnasium.Env[str, str]):
    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, tasks: str = "bundled", sandbox: str = "local", max_turns: int = 2, **_: Any) -> None:
        self.tasks = TASKS
        self.max_turns = max_turns
        self.observation_space = CodeText(100_000)
        self.action_space = CodeText(100_000)
        self.messages: list[dict[str, Any]] = []
        self._done = True
        self._turn = 0
        self._rewards: list[float] = []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
        super().reset(seed=seed)
        task = next(t for t in self.tasks if t.task_id == (options or {}).get("task_id", TASKS[0].task_id))
        self.messages = [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": task.prompt},
        ]
        self._done, self._turn, self._rewards = False, 0, []
        self._task = task
        return task.prompt, {"messages": list(self.messages), "tools": [], "task_id": task.task_id}

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict]:
        text = action if isinstance(action, str) else str(action)
        reward = vowel_share(text) / self.max_turns
        self._rewards.append(reward)
        self._turn += 1
        self.messages.append({"role": "assistant", "content": text})
        terminated = self._turn >= self.max_turns
        info: dict[str, Any] = {"task_id": self._task.task_id, "parse_errors": []}
        if not terminated:
            self.messages.append({"role": "user", "content": "Again."})
        else:
            info.update(self._end("max_turns"))
        info["messages"] = list(self.messages)
        return ("Again." if not terminated else ""), reward, terminated, False, info

    def truncate(self, reason: str) -> dict[str, Any]:
        info = self._end(reason)
        info["messages"] = list(self.messages)
        return info

    @property
    def done(self) -> bool:
        return self._done

    def _end(self, reason: str) -> dict[str, Any]:
        self._done = True
        total = sum(self._rewards)
        grade = {"resolved": total > 0.5, "reward": total, "tests": [], "error": None, "rejection": None}
        return {"end_reason": reason, "grade": grade, "reward_grade": 0.0}


gymnasium.register(id="ToySay-v0", entry_point=ToySayEnv)
