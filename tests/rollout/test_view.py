"""`gym-swe view`'s page: what it shows of each episode, and which episodes it shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from gym_swe.errors import ConfigError
from gym_swe.rollout.trajectory import Trajectory, Turn, save_jsonl
from gym_swe.rollout.view import load_trajectories, outcome, render_html, select

SYSTEM = "You are a careful engineer. " * 50
DIFF = """diff --git a/solution.py b/solution.py
--- a/solution.py
+++ b/solution.py
@@ -1,2 +1,2 @@
 def f(x):
-    return x - 1
+    return x + 1
"""


def episode(task_id: str, resolved: bool | None, reward: float = 0.0, diff: str = "") -> Trajectory:
    """A two-turn episode; ``resolved=None`` makes it a failed one (an error, no grade)."""
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Fix {task_id}."},
        {"role": "assistant", "content": "let me look", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "bash", "content": "solution.py"},
        {"role": "assistant", "content": "done"},
    ]  # fmt: skip
    trajectory = Trajectory(task_id=task_id, messages=messages, reward=reward, token_ids=list(range(40)),
                            prompt_length=20, end_reason="submitted")  # fmt: skip
    trajectory.turns = [
        Turn(start=20, length=12, text="let me look", finish_reason="stop", bridge_length=3, generate_seconds=0.5),
        Turn(start=35, length=5, text="done", finish_reason="length"),
    ]  # fmt: skip
    if resolved is None:
        trajectory.error = "generator: no answer"
        return trajectory
    trajectory.grade = {
        "resolved": resolved, "passed": 1, "total": 2, "diff": diff,
        "tests": [{"name": "test_a", "outcome": "passed"}, {"name": "test_b", "outcome": "failed"}],
        "groups": {"FAIL_TO_PASS": ["test_b"], "PASS_TO_PASS": ["test_a"]},
    }  # fmt: skip
    return trajectory


def test_the_system_prompt_is_shown_once() -> None:
    page = render_html([episode("a", True), episode("b", False), episode("c", None)])
    assert page.count("You are a careful engineer.") == 50  # one copy of the 50 repeats
    assert 'system prompt #1 <span class="meta">(3 episodes)' in page
    assert page.count("system prompt #1 above") == 3


def test_each_turn_shows_its_tokens_and_finish_reason() -> None:
    page = render_html([episode("a", True)])
    assert "turn 1 · 12 tokens · finish: stop · generate 0.5 s, env 0.0 s" in page
    assert "turn 2 · 5 tokens · finish: length" in page
    assert "40 tokens (20 prompt)" in page


def test_a_hosted_models_episode_says_it_has_no_token_ids() -> None:
    """openai-chat (gym_swe's loop, or a harness in black-box mode): messages, no ids to count."""
    trajectory = episode("a", True)
    trajectory.token_ids, trajectory.prompt_length, trajectory.generator = [], 0, "openai-chat"
    trajectory.has_token_ids = False
    trajectory.turns = [Turn(start=0, length=0, text=t.text, finish_reason="stop") for t in trajectory.turns]
    page = render_html([trajectory])
    assert "messages only, no token ids (openai-chat)" in page
    assert "turn 1 · finish: stop" in page and "tokens" not in page


def test_the_final_diff_and_the_test_groups() -> None:
    page = render_html([episode("a", True, diff=DIFF)])
    assert "final diff" in page
    assert '<span class="add">+    return x + 1</span>' in page
    assert '<span class="del">-    return x - 1</span>' in page
    assert "<td>failed</td><td>FAIL_TO_PASS</td><td>test_b</td>" in page
    assert "final diff" not in render_html([episode("a", True)])  # no diff recorded: no section


def test_filter_by_outcome_and_reward() -> None:
    trajectories = [episode("a", True, reward=1.0), episode("b", False, reward=0.25), episode("c", None)]
    assert [outcome(t) for t in trajectories] == ["resolved", "unresolved", "failed"]
    assert [t.task_id for t in select(trajectories, outcomes=["failed"])] == ["c"]
    assert [t.task_id for t in select(trajectories, outcomes=["resolved", "unresolved"])] == ["a", "b"]
    assert [t.task_id for t in select(trajectories, min_reward=0.2)] == ["a", "b"]
    with pytest.raises(ConfigError, match="Did you mean 'failed'"):
        select(trajectories, outcomes=["faild"])
    page = render_html(trajectories)
    assert 'data-outcome="resolved"' in page and 'data-outcome="failed"' in page
    assert 'value="failed"> failed (1)' in page  # the buttons that show one outcome


def test_load_trajectories_round_trip_and_errors(tmp_path: Path) -> None:
    path = save_jsonl([episode("a", True, diff=DIFF)], tmp_path / "t.jsonl")
    (loaded,) = load_trajectories(path)
    assert loaded.grade["diff"] == DIFF and loaded.turns[0].length == 12
    with pytest.raises(ConfigError, match="no such file"):
        load_trajectories(tmp_path / "missing.jsonl")
    with pytest.raises(ConfigError, match="is a directory"):
        load_trajectories(tmp_path)
    (tmp_path / "bad.jsonl").write_text('{"task_id": "a"}\n{"task_id": \n')
    with pytest.raises(ConfigError, match=r"bad\.jsonl, line 2: not a trajectory"):
        load_trajectories(tmp_path / "bad.jsonl")
