"""The parts of `gym-swe eval` around the collector: the progress bar and the failure summary."""

from __future__ import annotations

import gymnasium
import pytest

import gym_swe  # noqa: F401
from gym_swe.rollout.collector import collect
from gym_swe.rollout.evaluation import failure_reasons
from gym_swe.rollout.run_eval import Progress, TurnCallback
from gym_swe.rollout.trajectory import Trajectory
from tests.conftest import require_bwrap
from tests.rollout.scripted import ScriptedGenerator
from tests.rollout.test_trajectories import load

TURNS = [
    '<tool_call>\n{"name": "bash", "arguments": {"command": "echo step 0"}}\n</tool_call>',
    '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>',
]


def test_the_progress_bar_counts_turns_and_moves_as_episodes_end(capsys: pytest.CaptureFixture[str]) -> None:
    require_bwrap()
    generator = ScriptedGenerator(load("qwen2.5-instruct"), TURNS)
    progress = Progress(total=2)
    trajectories = collect(lambda: TurnCallback(gymnasium.make("CodeDebug-v0"), progress.on_turn), generator,
                           ["GymSwe/0", "GymSwe/1"], on_trajectory=progress.on_trajectory)  # fmt: skip
    progress.close()
    assert [len(t.turns) for t in trajectories] == [2, 2] and progress.turns == 4
    bar = capsys.readouterr().err
    assert bar.index("0/2 episodes [00:00<?, 0 turns, 0 resolved, 0 failed]") < bar.index("1/2 episodes")
    assert bar.index("1/2 episodes") < bar.index("2/2 episodes")
    assert "4 turns, 0 resolved, 0 failed]" in bar


def test_failure_reasons_come_grouped_on_one_line_each() -> None:
    trajectories = [
        Trajectory("a", error="generator: no answer from http://x after 4 tries:\n  refused"),
        Trajectory("b", error="generator: no answer from http://x after 4 tries:\n  refused"),
        Trajectory("c"),
        Trajectory("d", error="reset failed: SandboxError: " + "x" * 500),
    ]
    reasons = failure_reasons(trajectories)
    assert reasons[0] == ("generator: no answer from http://x after 4 tries: refused", 2)
    assert reasons[1][1] == 1 and len(reasons[1][0]) == 300 and reasons[1][0].endswith("...")
    assert failure_reasons(trajectories, limit=1) == reasons[:1]
