"""The shared runner and collector, with a real harness (Pi, the quickest to start) in a real jail: how an
episode ends when the harness does not end on its own (killed, hung, out of turns, stopped), many episodes
at once with a socket per env, ``gym-swe eval --harness`` and the trainer's ``--harness``, and the errors a
setting that cannot work gets before anything runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import gymnasium
import pytest
import torch

from gym_swe.errors import ConfigError, HarnessNotInstalledError
from gym_swe.integrations.harnesses.base import Harness
from gym_swe.integrations.harnesses.collector import collect_with_harness
from gym_swe.integrations.harnesses.registry import harness_named
from gym_swe.integrations.harnesses.runner import harness_sandbox_options, run_episode
from gym_swe.rollout.generators.base import SamplingParams
from gym_swe.rollout.stopping import Stop, Stopped
from gym_swe.tasks.functions import load_function_tasks
from tests.conftest import REPO_ROOT, require_bwrap
from tests.integrations.harnesses.scripted import (
    MAX_MODEL_LEN,
    MAX_TOKENS,
    assert_token_exact,
    final_turn,
    play_episode,
    tool_turn,
)
from tests.rollout.test_proxy import RecordingGenerator

FIXED = load_function_tasks("bundled").get("GymSwe/0").fixed_code


@pytest.fixture(scope="module")
def pi(installed: Callable[[str], Harness]) -> Harness:
    require_bwrap()
    return installed("pi")


def bash(command: str, step: int) -> str:
    return tool_turn("bash", {"command": command}, step)


# -- how an episode ends ---------------------------------------------------------------------------------------
def test_a_harness_that_dies_ends_the_episode_failed_with_the_reason(pi: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """The agent's command kills Pi (its parent process): the run ends early, graded as a truncation, the
    trajectory failed with Pi's exit status (an early exit is not the agent's answer)."""
    turns = [bash("kill -9 $PPID", 0), final_turn(1)]
    trajectory, _ = play_episode("pi", "CodeDebug-v0", "GymSwe/0", turns, tokenizer)
    assert (trajectory.end_reason, trajectory.truncated, trajectory.reward) == ("harness_failed", True, 0.0)
    assert trajectory.error is not None and "pi exited with status 137" in trajectory.error
    assert trajectory.grade is not None and len(trajectory.turns) == 1


def test_a_harness_that_hangs_is_cut_at_its_timeout_and_graded(pi: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """A command that never returns (the agent's doing) holds Pi until the run's timeout: the run and all
    it started are killed, and the work done so far is graded (here: the fix, written before)."""
    turns = [
        tool_turn("write", {"path": "/workspace/solution.py", "content": FIXED}, 0),
        bash("sleep 600", 1),
        final_turn(2),
    ]
    trajectory, _ = play_episode("pi", "CodeDebug-v0", "GymSwe/0", turns, tokenizer, timeout=20)
    assert (trajectory.end_reason, trajectory.truncated, trajectory.error) == ("harness_timeout", True, None)
    assert trajectory.reward == 1.0 and len(trajectory.turns) == 2


def test_the_turn_budget_ends_the_episode_truncated_and_graded(pi: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """Past max_turns the proxy refuses Pi's request (403); Pi exits 1 on it, which is the budget's doing,
    not a failure."""
    turns = [bash(f"echo {i}", i) for i in range(6)]
    trajectory, generator = play_episode(
        "pi", "CodeDebug-v0", "GymSwe/0", turns, tokenizer, max_turns=2, max_episode_steps=2
    )
    assert (trajectory.end_reason, trajectory.truncated, trajectory.error) == ("max_turns", True, None)
    assert len(trajectory.turns) == 2 and trajectory.grade is not None and trajectory.reward == 0.0
    assert_token_exact(trajectory, generator)


# -- many episodes ---------------------------------------------------------------------------------------------
def test_collect_with_harness_plays_episodes_at_once_each_env_with_its_socket(pi: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    turns = [tool_turn("write", {"path": "/workspace/solution.py", "content": FIXED}, 0), final_turn(1)]
    generator = RecordingGenerator(tokenizer, turns)
    envs = [gymnasium.make("CodeDebug-v0") for _ in range(2)]
    counted: list[int] = []
    try:
        trajectories = collect_with_harness(
            envs, generator, ["GymSwe/0", "GymSwe/1"], samples_per_task=2,
            sampling=SamplingParams(max_tokens=MAX_TOKENS), max_model_len=MAX_MODEL_LEN,
            on_turn=lambda: counted.append(1), harness="pi",
        )  # fmt: skip
    finally:
        for env in envs:
            env.close()
    # GymSwe/1's bug is another: the fix of GymSwe/0 written over it fails its tests.
    assert [(t.task_id, t.sample_index, t.reward) for t in trajectories] == [
        ("GymSwe/0", 0, 1.0), ("GymSwe/0", 1, 1.0), ("GymSwe/1", 0, 0.0), ("GymSwe/1", 1, 0.0)
    ]  # fmt: skip
    assert all(t.end_reason == "submitted" and t.error is None for t in trajectories)
    assert len(counted) == 8 == sum(len(t.turns) for t in trajectories)


def test_a_stop_ends_the_running_harness_ungraded(pi: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """Stop set after the model's first turn (a `sleep` Pi now runs): the command is interrupted, the
    rollout ended, the episode not graded, and the collection raises Stopped."""
    stop = Stop()
    generator = RecordingGenerator(tokenizer, [bash("sleep 600", 0), final_turn(1)])
    with pytest.raises(Stopped, match="stopped with 0 of 1 ended"):
        collect_with_harness(
            lambda: gymnasium.make("CodeDebug-v0"), generator, ["GymSwe/0"],
            sampling=SamplingParams(max_tokens=MAX_TOKENS), max_model_len=MAX_MODEL_LEN,
            on_turn=stop.set, stop=stop, harness="pi",
        )  # fmt: skip
    assert generator.calls == 1


# -- the command line and the trainer --------------------------------------------------------------------------
def test_gym_swe_eval_plays_with_the_harness(pi: Harness, tiny_model: Path, tmp_path: Path) -> None:
    """``gym-swe eval --harness pi`` with a tiny random model: its noise holds no tool call, so Pi takes it
    as the final answer and ends after one turn: submitted, graded 0."""
    out = tmp_path / "t.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "gym_swe.cli", "eval", "--env", "CodeDebug-v0", "--generator", "hf",
         "--model", str(tiny_model), "--harness", "pi", "--limit", "2", "--max-tokens", "16",
         "--out", str(out)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env=this_checkout(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(row["task_id"], row["end_reason"], row["reward"]) for row in rows] == [
        ("GymSwe/0", "submitted", 0.0), ("GymSwe/1", "submitted", 0.0)
    ]  # fmt: skip
    assert all("write" in [tool["function"]["name"] for tool in row["tools"]] for row in rows)  # Pi's


def test_grpo_trains_through_pi(pi: Harness, tiny_model: Path, tmp_path: Path) -> None:
    """A step of trainers/grpo.py with --harness pi: the trajectories are the proxy's (Pi's tools in
    them), and the optimizer stepped on them (both score 0: no advantage, so weight decay moves them)."""
    from gym_swe.rollout.trajectory import load_jsonl
    from tests.trainers.runs import metrics, train, weights

    train("--env", "CodeDebug-v0", "--model", str(tiny_model), "--harness", "pi", "--steps", "1",
          "--tasks_per_step", "1", "--group_size", "2", "--max_turns", "2", "--max_new_tokens", "16",
          "--eval_every", "0", "--learning_rate", "1e-2", "--weight_decay", "0.1", "--output_dir", str(tmp_path),
          "--run_name", "p")  # fmt: skip
    run = tmp_path / "p"
    assert metrics(run)[0]["rollout/failed"] == 0.0
    trajectories = load_jsonl(run / "trajectories" / "step_0.jsonl")
    assert len(trajectories) == 2
    for trajectory in trajectories:
        assert "write" in [tool["function"]["name"] for tool in trajectory.tools]
        assert (trajectory.end_reason, trajectory.error, len(trajectory.turns)) == ("submitted", None, 1)
        assert trajectory.forks == 0  # Pi's compaction fits the trainer's 4096-token window: none here
    before, after = weights(tiny_model), weights(run / "model")
    assert any(not torch.equal(before[name], after[name]) for name in before)


def test_settings_that_cannot_work_are_one_clear_error(pi: Harness, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Did you mean 'pi'"):
        harness_named("pii")
    with pytest.raises(ConfigError, match="files='image' is for sandbox='docker'"):
        harness_sandbox_options(pi, "local", str(tmp_path), files="image")
    env = gymnasium.make("CodeDebug-v0")
    try:
        from gym_swe.rollout.proxy import ProxyServer

        generator = RecordingGenerator(tiny_tokenizer(), [final_turn(0)])
        with ProxyServer(generator) as proxy, pytest.raises(ConfigError, match="unix socket"):
            run_episode(env, proxy, pi, "GymSwe/0")  # a TCP proxy: nothing in the sandbox could reach it
    finally:
        env.close()
    # Not installed: one line with the command that installs it, before any model loads (exit 2).
    empty = {"GYM_SWE_HARNESS_DIR": str(tmp_path / "none")}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GYM_SWE_HARNESS_DIR", empty["GYM_SWE_HARNESS_DIR"])
        with pytest.raises(HarnessNotInstalledError, match="install it with: gym-swe harnesses install pi"):
            harness_sandbox_options(pi, "local", str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-m", "gym_swe.cli", "eval", "--env", "CodeDebug-v0", "--generator", "hf",
         "--model", "no-such-model", "--harness", "pi"],
        capture_output=True, text=True, timeout=300, env={**this_checkout(), **empty},
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1].endswith("install it with: gym-swe harnesses install pi")
    from tests.trainers.runs import refused

    said = refused("--model", "x", "--harness", "pi", env=empty)
    assert said.endswith("install it with: gym-swe harnesses install pi")
    assert "Did you mean 'pi'" in refused("--model", "x", "--harness", "pii")


def this_checkout() -> dict[str, str]:
    """The environment for a subprocess that runs this checkout's gym_swe (whatever is installed)."""
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT)}


def tiny_tokenizer():  # type: ignore[no-untyped-def]
    from tests.rollout.test_proxy import tokenizer_for

    return tokenizer_for("tiny-bpe")


def test_the_readme_harness_snippet_runs_with_a_tiny_model(
    pi: Harness, tiny_model: Path, tmp_path: Path
) -> None:
    """As written, but for the model: a tiny random one. Its reply holds no tool call, so Pi takes it as its
    final answer: one turn, submitted, graded 0."""
    import re

    from tests.test_readme import MODEL_PLACEHOLDER

    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Train your own agent harness\n", 1)[1].split("\n## ", 1)[0]
    blocks = [b for b in re.findall(r"```python\n(.*?)```", section, re.S) if "harnesses import" in b]
    assert len(blocks) == 1 and blocks[0].count(MODEL_PLACEHOLDER) == 1
    script = tmp_path / "snippet.py"
    script.write_text(blocks[0].replace(MODEL_PLACEHOLDER, repr(str(tiny_model))), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, env=this_checkout())  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-3:] == ["1", "submitted", "0.0"]
