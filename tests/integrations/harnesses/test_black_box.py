"""Black-box mode with the real harnesses: each fixes a CodeDebug task in its bubblewrap jail against a hosted
model, through the proxy over ``openai-chat``; gym_swe grades. The hosted model is the scripted
OpenAI-compatible endpoint of ``tests/rollout/proxy/hosted.py`` (one for the module), answering with each
harness's own tool calls (the plans of the harness's token-mode tests) as structured ``tool_calls``, as a
server with a tool-call parser does. One episode per dialect: Codex (Responses), Claude Code (Anthropic
Messages), Gemini CLI (Google generateContent), Pi (chat completions, through ``gym-swe eval --harness pi
--generator openai-chat``, end to end), mini-swe-agent (chat completions, not streamed); and Pi's unfixed
control. The trainer refuses the chat generator: no token ids to train on."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import gymnasium
import pytest

import gym_swe  # noqa: F401  (registers the envs)
from gym_swe.integrations.harnesses.base import Harness
from gym_swe.integrations.harnesses.runner import run_episode
from gym_swe.rollout.generators import SamplingParams, make_generator
from gym_swe.rollout.proxy import ProxyServer
from gym_swe.rollout.trajectory import Trajectory, load_jsonl
from gym_swe.tasks.functions import load_function_tasks
from tests.conftest import REPO_ROOT, require_bwrap
from tests.integrations.harnesses.scripted import (
    MAX_MODEL_LEN,
    MAX_TOKENS,
    assert_sandboxed,
    final_turn,
    tool_turn,
)
from tests.rollout.proxy.hosted import HostedModel, Plan

TASK = "GymSwe/0"
FIXED = load_function_tasks("bundled").get(TASK).fixed_code


@pytest.fixture(scope="module")
def hosted() -> Iterator[HostedModel]:
    server = HostedModel()
    yield server
    server.close()


def play_hosted(hosted: HostedModel, harness: str, turns: list[str], name: str) -> Trajectory:
    """One episode of GymSwe/0 played by ``harness`` in a jail against the hosted model serving ``turns`` (as
    the model ``name``), graded by the env."""
    require_bwrap()
    model = hosted.plan(name, Plan(turns))
    generator = make_generator("openai-chat", base_url=hosted.base_url, model=model, api_key="hosted-key")
    socket_dir = tempfile.mkdtemp(prefix="gs-black-box-")  # short: a unix socket's path has 107 bytes at most
    env = gymnasium.make("CodeDebug-v0")
    try:
        with ProxyServer(generator, SamplingParams(max_tokens=MAX_TOKENS), max_model_len=MAX_MODEL_LEN,
                         unix_socket=f"{socket_dir}/proxy.sock") as proxy:  # fmt: skip
            return run_episode(env, proxy, harness, TASK, timeout=600)
    finally:
        env.close()
        generator.close()
        shutil.rmtree(socket_dir, ignore_errors=True)


def assert_fixed_without_token_ids(trajectory: Trajectory, turns: int, forks: int = 0) -> None:
    """Graded 1.0 by gym_swe; the turns are messages, and the trajectory says it has no token ids."""
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason, trajectory.terminated) == (1.0, "submitted", True)
    assert trajectory.resolved and len(trajectory.turns) == turns, [t.text for t in trajectory.turns]
    assert (trajectory.has_token_ids, trajectory.token_ids, trajectory.loss_mask) == (False, [], [])
    assert all(turn.length == 0 for turn in trajectory.turns)
    assert (trajectory.generator, trajectory.forks) == ("openai-chat", forks)
    calls = [m for m in trajectory.messages if m["role"] == "assistant" and m.get("tool_calls")]
    assert len(calls) >= turns - 1 - forks  # the calls since the last fork, with their results after them
    assert any(
        "All tests passed." in str(m.get("content")) for m in trajectory.messages if m["role"] != "assistant"
    )


def test_codex_fixes_a_task_against_a_hosted_model(
    installed: Callable[[str], Harness], hosted: HostedModel
) -> None:
    """The Responses API, streamed (Codex always streams)."""
    from tests.integrations.harnesses.test_codex import codedebug_fix

    installed("codex")
    trajectory = play_hosted(hosted, "codex", codedebug_fix(), "codex-model")
    assert_fixed_without_token_ids(trajectory, turns=4)
    assert {"exec_command", "write_stdin"} <= {tool["function"]["name"] for tool in trajectory.tools}
    assert_sandboxed(trajectory.turns[0].observation)
    assert "key: unset" in trajectory.turns[0].observation  # the rollout's secret stays out of its commands
    sent = hosted.requests_for("codex-model")[-1]
    assert any(
        call["function"]["name"] == "exec_command"
        for m in sent["messages"]
        for call in m.get("tool_calls", [])
    )


def test_claude_code_fixes_a_task_against_a_hosted_model(
    installed: Callable[[str], Harness], hosted: HostedModel
) -> None:
    """Anthropic Messages, streamed. Claude Code sends its Edit call back with the default it filled in: a
    rewritten history, counted as a fork, as in token mode."""
    from tests.integrations.harnesses.test_claude_code import codedebug_fix

    installed("claude-code")
    trajectory = play_hosted(hosted, "claude-code", codedebug_fix(), "claude-model")
    assert_fixed_without_token_ids(trajectory, turns=5, forks=1)
    assert {"Bash", "Read", "Edit", "Write", "Glob", "Grep"} == {
        t["function"]["name"] for t in trajectory.tools
    }
    edit = next(m for m in trajectory.messages if m.get("tool_calls") and "Edit" in str(m["tool_calls"]))
    assert json.loads(edit["tool_calls"][0]["function"]["arguments"])["replace_all"] is False


def test_gemini_cli_fixes_a_task_against_a_hosted_model(
    installed: Callable[[str], Harness], hosted: HostedModel
) -> None:
    """Google generateContent, streamed."""
    from tests.integrations.harnesses.test_gemini_cli import codedebug_fix

    installed("gemini-cli")
    trajectory = play_hosted(hosted, "gemini-cli", codedebug_fix(), "gemini-model")
    assert_fixed_without_token_ids(trajectory, turns=5)
    assert "replace" in {tool["function"]["name"] for tool in trajectory.tools}
    assert_sandboxed(trajectory.turns[0].observation)


def test_pi_that_fixes_nothing_scores_zero(installed: Callable[[str], Harness], hosted: HostedModel) -> None:
    installed("pi")
    turns = [tool_turn("bash", {"command": "ls /workspace"}, 0), final_turn(1)]
    trajectory = play_hosted(hosted, "pi", turns, "pi-control")
    assert (trajectory.reward, trajectory.end_reason, trajectory.resolved) == (0.0, "submitted", False)
    assert trajectory.error is None and trajectory.grade is not None and not trajectory.has_token_ids
    assert "solution.py" in trajectory.turns[0].observation


def test_gym_swe_eval_runs_pi_against_a_hosted_model(
    installed: Callable[[str], Harness], hosted: HostedModel, tmp_path: Path
) -> None:
    """``gym-swe eval --harness pi --generator openai-chat`` end to end: the trajectories file holds the
    graded episode, its messages, and says it has no token ids; the SFT export holds the messages."""
    from tests.integrations.harnesses.test_pi import codedebug_fix

    require_bwrap()
    installed("pi")
    model = hosted.plan("pi-eval", Plan(codedebug_fix()))
    out, sft = tmp_path / "trajectories.jsonl", tmp_path / "sft.jsonl"
    command = [sys.executable, "-m", "gym_swe.cli", "eval", "--env", "CodeDebug-v0", "--task-id", TASK,
               "--harness", "pi", "--generator", "openai-chat", "--base-url", hosted.base_url, "--model", model,
               "--api-key", "hosted-key", "--out", str(out), "--export-sft", str(sft)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert (
        "pass@1 = 1.000" in done.stdout and "messages only: openai-chat returns no token ids" in done.stdout
    )
    [trajectory] = load_jsonl(out)
    assert_fixed_without_token_ids(trajectory, turns=4)
    assert {"read", "bash", "edit", "write"} <= {tool["function"]["name"] for tool in trajectory.tools}
    [row] = [json.loads(line) for line in sft.read_text().splitlines()]
    assert row["messages"] == trajectory.messages[: len(row["messages"])] and row["tools"] == trajectory.tools
    assert row["messages"][-1]["role"] == "assistant"


def test_mini_swe_agent_fixes_a_task_against_a_hosted_model(hosted: HostedModel) -> None:
    """Chat completions, whole answers (litellm does not stream here); the agent runs on the host, its
    commands in the jail."""
    pytest.importorskip("minisweagent")
    from gym_swe.integrations.mini_swe_agent import run_episode as run_mini

    require_bwrap()
    submit = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
    encoded = base64.b64encode(FIXED.encode()).decode()
    turns = [
        tool_turn("bash", {"command": "python test_solution.py"}, 0),
        tool_turn(
            "bash", {"command": f"echo {encoded} | base64 -d > solution.py; python test_solution.py"}, 1
        ),
        tool_turn("bash", {"command": submit}, 2),
    ]
    model = hosted.plan("mini-model", Plan(turns))
    generator = make_generator("openai-chat", base_url=hosted.base_url, model=model, api_key="hosted-key")
    env = gymnasium.make("CodeDebug-v0")
    try:
        with ProxyServer(
            generator, SamplingParams(max_tokens=MAX_TOKENS), max_model_len=MAX_MODEL_LEN
        ) as proxy:
            trajectory = run_mini(env, proxy, TASK)
    finally:
        env.close()
        generator.close()
    assert_fixed_without_token_ids(trajectory, turns=3)
    assert trajectory.tools[0]["function"]["name"] == "bash"  # mini-swe-agent's own tool


def test_the_trainer_refuses_a_chat_generator_in_one_line() -> None:
    command = [sys.executable, str(REPO_ROOT / "trainers" / "grpo.py"), "--model", "m",
               "--generator", "openai-chat", "--harness", "pi"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert "returns chat messages, not token ids: nothing to train on" in last
