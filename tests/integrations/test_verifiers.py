"""The verifiers adapter against the real verifiers (in its own environment, .venv-verifiers: it pins openai
and mcp versions the project's test environment outgrows): ``vf-eval gym-swe-verifiers`` plays CodeDebug-v0
through verifiers' harness, runtime and interception server, and its rewards are gym_swe's, both for a
scripted policy (whose rewards are known, and equal gym_swe's own eval of the same policy) and for a tiny
model behind a real vLLM server (each sample, replayed through the bare env, earns the trace's reward)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import gymnasium
import pytest

from gym_swe.rollout.collector import collect
from gym_swe.rollout.generators import make_generator
from tests.conftest import REPO_ROOT, require_bwrap
from tests.integrations.scripted_chat import ScriptedChatServer
from tests.test_readme import command

pytestmark = pytest.mark.bwrap
TASKS = ["GymSwe/0", "GymSwe/1"]


@pytest.fixture(scope="module")
def vf_eval() -> Path:
    """verifiers' ``vf-eval`` in its own environment (`make test` makes .venv-verifiers)."""
    # Absolute (not resolved: a venv's python is a link out of it), since vf-eval runs from another directory.
    python = Path(
        os.environ.get("GYM_SWE_VERIFIERS_PYTHON") or REPO_ROOT / ".venv-verifiers" / "bin" / "python"
    ).absolute()
    if not python.exists():
        message = f"verifiers' environment not found at {python} (make test creates .venv-verifiers)"
        if os.environ.get("GYM_SWE_REQUIRE_VERIFIERS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return python.with_name("vf-eval")


def run_vf_eval(vf_eval: Path, base_url: str, model: str, out: Path, *flags: str) -> list[dict]:
    """The README's ``vf-eval gym-swe-verifiers`` command against ``base_url`` (one rollout of each of its
    tasks, TASKS, two turns at most); its episodes, from its traces.jsonl, in task order."""
    readme = command("verifiers / prime-rl")
    assert (
        readme[:2] == ["vf-eval", "gym-swe-verifiers"]
        and json.loads(readme[readme.index("--env.taskset.task-ids") + 1]) == TASKS
    )
    values = {"NAME": model, "http://127.0.0.1:8000/v1": base_url}
    command_line = [str(vf_eval), *(values.get(arg, arg) for arg in readme[1:]), "--num-rollouts", "1",
                    "--no-rich", "--output-dir", str(out), "--env.taskset.max-turns", "2", *flags]  # fmt: skip
    # Its own environment's bin first: verifiers runs its harness program with the `uv` it finds on PATH.
    environment = {
        **os.environ,
        "PATH": f"{vf_eval.parent}:{os.environ['PATH']}",
        "PYTHONPATH": str(REPO_ROOT),
    }
    result = subprocess.run(
        command_line, capture_output=True, text=True, timeout=600, env=environment, cwd=out
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    [traces] = list(out.glob("*/traces.jsonl"))
    episodes = [json.loads(line) for line in traces.read_text().splitlines()]
    assert len(episodes) == len(TASKS), result.stderr[-3000:]
    return sorted(episodes, key=lambda episode: episode["task"]["data"]["task_id"])


def reward_of(episode: dict) -> float:
    [trace] = episode["traces"]
    assert trace["ok"], trace["errors"]
    return float(trace["rewards"]["gym_swe"]["score"])


def replayed_return(task_id: str, episode: dict) -> float:
    """What the bare env pays for the episode's assistant messages (its samples), played again."""
    [trace] = episode["traces"]
    replies = [node["message"] for node in trace["nodes"] if node["sampled"]]
    env = gymnasium.make("CodeDebug-v0", max_turns=2)
    try:
        env.reset(options={"task_id": task_id})
        total = 0.0
        for reply in replies:
            _, reward, terminated, truncated, _ = env.step(as_action(reply))
            total += float(reward)
            if terminated or truncated:
                break
        return total
    finally:
        env.close()


def as_action(reply: dict) -> str | dict:
    """A trace's assistant message as a gym_swe action: its text, or the message with its tool calls."""
    calls = reply.get("tool_calls") or []
    if not calls:
        return str(reply.get("content") or "")
    wire = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls]  # fmt: skip
    return {"role": "assistant", "content": reply.get("content") or "", "tool_calls": wire}


def test_vf_eval_gives_gym_swes_rewards_for_a_scripted_policy(vf_eval: Path, tmp_path: Path) -> None:
    require_bwrap()
    server = ScriptedChatServer(fixes=["GymSwe/0"])  # fixes the first task, submits the second unfixed
    try:
        episodes = run_vf_eval(vf_eval, server.base_url, "scripted", tmp_path)
        ours = collect(lambda: gymnasium.make("CodeDebug-v0", max_turns=2),
                       make_generator("openai-chat", base_url=server.base_url, model="scripted", api_key="x"), TASKS)  # fmt: skip
    finally:
        server.close()
    assert [reward_of(episode) for episode in episodes] == [t.reward for t in ours] == [1.0, 0.0]
    infos = [episode["traces"][0]["info"]["gym_swe"] for episode in episodes]
    assert [info["end_reason"] for info in infos] == ["submitted", "submitted"]
    assert [info["resolved"] for info in infos] == [True, False]
    assert [info["tests_passed"] for info in infos] == [t.grade["passed"] for t in ours]


def test_vf_eval_of_a_tiny_model_is_graded_as_gym_swe_grades_its_samples(
    vf_eval: Path, vllm_server, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    episodes = run_vf_eval(vf_eval, vllm_server.base_url + "/v1", vllm_server.model, tmp_path,
                           "--sampling.max-tokens", "24")  # fmt: skip
    for task_id, episode in zip(TASKS, episodes):
        [trace] = episode["traces"]
        assert [node["message"]["role"] for node in trace["nodes"][:2]] == ["system", "user"]
        assert any(node["sampled"] for node in trace["nodes"])
        assert trace["info"]["gym_swe"]["task_id"] == task_id
        assert reward_of(episode) == replayed_return(task_id, episode)


def test_a_wrong_env_id_is_refused_with_the_nearest_name(vf_eval: Path, tmp_path: Path) -> None:
    command_line = [str(vf_eval), "gym-swe-verifiers", "--model", "m", "--no-push", "--dry-run",
                    "--env.taskset.env-id", "CodeDebug-v9"]  # fmt: skip
    result = subprocess.run(command_line, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                            env={**os.environ, "COLUMNS": "300"})  # fmt: skip
    output = " ".join((result.stdout + result.stderr).split())
    assert result.returncode != 0
    assert "Unknown gym_swe env 'CodeDebug-v9'. Did you mean 'CodeDebug-v0'?" in output
