"""`gym-swe eval`, `gym-swe view`, pass@k and the SFT export, as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import gymnasium
import pytest

import gym_swe  # noqa: F401
from gym_swe.rollout.collector import collect
from gym_swe.rollout.evaluation import pass_at_k, summarize
from gym_swe.rollout.export import export_sft
from gym_swe.rollout.trajectory import Trajectory, load_jsonl
from gym_swe.rollout.view import render_html
from gym_swe.tasks.functions import load_function_tasks
from tests.conftest import require_bwrap
from tests.rollout.scripted import ScriptedGenerator
from tests.rollout.test_trajectories import load


@pytest.mark.parametrize(("n", "c", "k", "expected"), [
    (1, 1, 1, 1.0), (1, 0, 1, 0.0), (4, 1, 1, 0.25), (4, 2, 1, 0.5),
    (4, 1, 4, 1.0), (4, 0, 4, 0.0), (5, 2, 2, 1 - 3 / 10), (10, 3, 5, 1 - 21 / 252),
])  # fmt: skip
def test_pass_at_k_is_the_unbiased_estimator(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError, match="at least 5 samples"):
        pass_at_k(4, 1, 5)
    with pytest.raises(ValueError):
        pass_at_k(4, 5, 1)


def trajectory(task: str, resolved: bool, passed: int = 0, total: int = 4) -> Trajectory:
    grade = {"resolved": resolved, "passed": total if resolved else passed, "total": total}
    return Trajectory(task_id=task, grade=grade, reward=float(resolved))


def test_summarize_per_task_and_overall() -> None:
    summary = summarize([trajectory("a", True), trajectory("a", False, 1), trajectory("b", False, 2),
                         trajectory("b", False)], ks=(1, 2))  # fmt: skip
    rows = {row["task_id"]: row for row in summary["tasks"]}
    assert rows["a"]["pass@1"] == 0.5 and rows["a"]["pass@2"] == 1.0 and rows["b"]["pass@2"] == 0.0
    assert rows["a"]["tests_passed"] == (1 + 0.25) / 2 and rows["b"]["tests_passed"] == 0.25
    assert summary["overall"] == {"pass@1": 0.25, "pass@2": 0.5, "mean_reward": 0.25, "tests_passed": 0.4375}
    assert summary["short_of"] == {}


def test_a_task_with_fewer_samples_than_k_is_never_counted_as_zero() -> None:
    """Six samples that all resolved, over tasks of 2 and 4: pass@1 and pass@2 are 1.0; pass@4 is not defined
    for the first task, so there is no overall pass@4 (it once was 0.5, the short task counted as 0)."""
    summary = summarize([trajectory("a", True)] * 2 + [trajectory("b", True)] * 4, ks=(1, 2, 4))
    assert summary["overall"] == {"pass@1": 1.0, "pass@2": 1.0, "mean_reward": 1.0, "tests_passed": 1.0}
    assert summary["short_of"] == {4: ["a"]}
    assert "pass@4" not in summary["tasks"][0] and summary["tasks"][1]["pass@4"] == 1.0


def solving_turns(task_id: str) -> list[str]:
    import base64

    code = base64.b64encode(load_function_tasks("bundled").get(task_id).fixed_code.encode()).decode()
    write = {"name": "bash", "arguments": {"command": f"echo {code} | base64 -d > solution.py # step 0"}}
    return [
        f"<tool_call>\n{json.dumps(write)}\n</tool_call>",
        '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>',
    ]


def test_export_sft_writes_resolved_episodes_as_chat_data(tmp_path: Path) -> None:
    require_bwrap()
    tokenizer = load("qwen2.5-instruct")
    solved = collect(lambda: gymnasium.make("CodeDebug-v0"), ScriptedGenerator(tokenizer, solving_turns("GymSwe/0")),
                     ["GymSwe/0"], samples_per_task=2)  # fmt: skip
    unsolved = collect(lambda: gymnasium.make("CodeDebug-v0"), ScriptedGenerator(tokenizer, solving_turns("GymSwe/0")),
                       ["GymSwe/1"])  # fmt: skip
    assert all(t.resolved for t in solved) and not unsolved[0].resolved
    path = tmp_path / "sft.jsonl"
    assert export_sft(solved + unsolved, path) == 2
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert {row["task_id"] for row in rows} == {"GymSwe/0"}
    for row in rows:
        assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
        assert row["messages"][2]["tool_calls"][0]["function"]["name"] == "bash"
        assert [tool["function"]["name"] for tool in row["tools"]] == ["bash", "str_replace_editor", "submit"]
        tokenizer.apply_chat_template(
            row["messages"], tools=row["tools"], tokenize=False
        )  # renders as chat data
    html = render_html(solved + unsolved)
    assert html.count('class="episode"') == 3 and "GymSwe/0 #1" in html and "resolved" in html


def test_gym_swe_eval_and_view_end_to_end(tiny_model: Path, tmp_path: Path) -> None:
    require_bwrap()
    out = tmp_path / "trajectories.jsonl"
    command = [sys.executable, "-m", "gym_swe.cli", "eval", "--env", "CodeDebug-v0", "--generator", "hf",
               "--model", str(tiny_model), "-n", "2", "--k", "1", "--k", "2", "--task-id", "GymSwe/0",
               "--task-id", "GymSwe/1", "--max-turns", "2", "--max-tokens", "12", "--out", str(out),
               "--export-sft", str(tmp_path / "sft.jsonl")]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "pass@1 = 0.000  pass@2 = 0.000" in result.stdout
    assert "mean reward = 0.000  mean share of tests passed = " in result.stdout
    summary = json.loads((tmp_path / "trajectories.summary.json").read_text())
    assert summary["settings"]["model"] == str(tiny_model) and summary["settings"]["samples"] == 2
    assert summary["episodes"] == 4 and summary["overall"]["pass@2"] == 0.0 and not summary["interrupted"]
    assert "4/4 episodes" in result.stderr  # the progress line
    trajectories = load_jsonl(out)
    assert len(trajectories) == 4 and all(t.generator == "hf" and len(t.turns) == 2 for t in trajectories)
    assert (tmp_path / "sft.jsonl").read_text() == ""
    viewed = subprocess.run(
        [sys.executable, "-m", "gym_swe.cli", "view", str(out)], capture_output=True, text=True
    )
    assert (
        viewed.returncode == 0 and (tmp_path / "trajectories.html").read_text().count('class="episode"') == 4
    )
