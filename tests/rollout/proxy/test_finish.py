"""A rollout's end: its trajectory carries the env's grade and reward when the harness finishes it with the
env's graded end of the episode (`RolloutHandle.finish`); the README's "any other harness" snippet, run as
written but for the model, earns the env's 1.0 for a fixed task, on its trajectory."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium
import pytest

import gym_swe  # noqa: F401
from tests.conftest import REPO_ROOT, require_bwrap
from tests.rollout.proxy.harness import default_tokenizer, serving
from tests.test_readme import run, snippet

pytest.importorskip("openai")

MODEL_LINE = 'generator = make_generator("hf", model="path/to/model")\n'
SCRIPTED = """import sys
sys.path.insert(0, {root!r})
from transformers import AutoTokenizer
from tests.rollout.scripted import ScriptedGenerator
generator = ScriptedGenerator(AutoTokenizer.from_pretrained({tokenizer!r}), {turns!r})
"""


def hermes_call(name: str, arguments: dict[str, str]) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


# The fix of GymSwe/0 (the last run is never appended), short enough for the snippet's max_tokens=64; the
# "step 0" mark tells the scripted model it has written it.
FIX = hermes_call(
    "bash", {"command": "sed -i '$i\\    out.append(prev + str(count))' /workspace/solution.py # step 0"}
)
SUBMIT = hermes_call("submit", {})


def test_the_readme_harness_snippet_puts_the_envs_grade_and_reward_on_the_trajectory(tmp_path: Path) -> None:
    require_bwrap()
    code = snippet("Train your own agent harness")
    assert code.startswith("import gymnasium\nimport gym_swe") and code.count(MODEL_LINE) == 1
    tokenizer = default_tokenizer()
    scripted = SCRIPTED.format(root=str(REPO_ROOT), tokenizer=tokenizer.name_or_path, turns=[FIX, SUBMIT])
    code = code.replace(MODEL_LINE, scripted) + "print(trajectory.resolved, trajectory.end_reason)\n"
    *_, printed, graded = run(code, tmp_path).stdout.splitlines()
    assert printed == "2 0 1.0"  # turns, forks, the trajectory's reward
    assert graded == "True submitted"


def test_finishing_with_a_truncation_carries_its_grade() -> None:
    """A harness stopped before it submitted (the unfixed control): the env grades the workspace as it is
    (0.0), and the trajectory says so; finished without the env's end, it has no grade at all."""
    require_bwrap()
    openai = pytest.importorskip("openai")
    env = gymnasium.make("CodeDebug-v0", max_turns=3)
    try:
        with serving(default_tokenizer(), [hermes_call("bash", {"command": "ls # step 0"})]) as (proxy, _):
            _, info = env.reset(options={"task_id": "GymSwe/0"})
            rollout = proxy.open_rollout("GymSwe/0")
            client = openai.OpenAI(base_url=rollout.base_url, api_key=rollout.secret, max_retries=0)
            client.chat.completions.create(model="any", messages=info["messages"], tools=info["tools"])
            end = env.unwrapped.truncate("harness_stopped")
            trajectory = rollout.finish(info=end, truncated=True)
            ungraded = proxy.open_rollout("GymSwe/0").finish()
    finally:
        env.close()
    assert trajectory.grade == end["grade"] and trajectory.grade is not None and not trajectory.resolved
    assert (trajectory.reward, trajectory.end_reason, trajectory.truncated) == (0.0, "harness_stopped", True)
    assert len(trajectory.turns) == 1
    assert (ungraded.grade, ungraded.reward, ungraded.end_reason) == (None, 0.0, "finished")
