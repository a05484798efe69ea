"""mini-swe-agent, unmodified, through the proxy: a scripted model (real tokenizer, real chat template) drives
the real agent over real HTTP; its commands run in real bubblewrap sandboxes; gym_swe grades."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import gymnasium
import pytest
import torch

pytest.importorskip("minisweagent")
pytest.importorskip("aiohttp")

import gym_swe  # noqa: F401
from gym_swe.integrations.mini_swe_agent import (
    MiniSweAgentConfig,
    collect_with_harness,
    run_episode,
    run_episodes,
)
from gym_swe.rollout.generators.base import SamplingParams
from gym_swe.rollout.proxy import ProxyServer
from gym_swe.rollout.proxy.recorder import sampled_ids
from gym_swe.rollout.tiny import make_tiny_bpe_model
from gym_swe.tasks.functions import load_function_tasks
from gym_swe.tasks.swe import load_swe_tasks
from tests.conftest import require_bwrap
from tests.rollout.conftest import MODELS, TOKENIZERS
from tests.rollout.test_proxy import RecordingGenerator, tokenizer_for

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def bash(command: str, step: int) -> str:
    """A turn as a Hermes-format model writes it (the "step N" mark tells the script where it is)."""
    call = {"name": "bash", "arguments": {"command": f"{command} # step {step}"}}
    return f"I will run a command.\n<tool_call>\n{json.dumps(call)}\n</tool_call>"


def write_file(path: str, text: str, step: int) -> str:
    encoded = base64.b64encode(text.encode()).decode()
    return bash(f"echo {encoded} | base64 -d > {path}", step)


@pytest.fixture(scope="module")
def tokenizer():  # type: ignore[no-untyped-def]
    return tokenizer_for("qwen2.5-instruct" if (TOKENIZERS / "qwen2.5-instruct").is_dir() else "tiny-bpe")


def play(tokenizer, env_id: str, task_id: str, turns: list[str], **make):  # type: ignore[no-untyped-def]
    require_bwrap()
    generator = RecordingGenerator(tokenizer, turns)
    env = gymnasium.make(env_id, **make)
    try:
        with ProxyServer(generator, SamplingParams(max_tokens=4096), max_model_len=32768) as proxy:
            trajectory = run_episode(env, proxy, task_id)
    finally:
        env.close()
    return trajectory, generator


@pytest.mark.parametrize("family", ["tiny-bpe", "qwen2.5-instruct"])
def test_mini_swe_agent_fixes_a_codedebug_task(family: str) -> None:
    """Both tokenizers, whichever the fixture would pick here: a fresh clone has no shared data, so it gets
    the small one, whose chat template puts no newline before a tool call where the model wrote one (the
    re-render check tries the model's own text as the collector's does)."""
    tokenizer = tokenizer_for(family)
    task = load_function_tasks("bundled").get("GymSwe/0")
    turns = [
        bash("python test_solution.py", 0),
        write_file("/workspace/solution.py", task.fixed_code, 1),
        bash(SUBMIT, 2),
    ]
    trajectory, generator = play(tokenizer, "CodeDebug-v0", task.task_id, turns)
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason, trajectory.terminated) == (1.0, "submitted", True)
    assert trajectory.resolved
    # Token-exact: the turns are the generator's ids, and each prompt the trajectory up to its turn.
    assert sampled_ids(trajectory) == generator.sampled
    assert [trajectory.token_ids[: t.start] for t in trajectory.turns] == generator.prompts
    assert (trajectory.forks, trajectory.rerender_matches) == (0, True)
    # The tool results the agent got came from the sandbox: the test file failed there before the fix.
    assert '"returncode": 1' in trajectory.turns[0].observation
    assert trajectory.tools[0]["function"]["name"] == "bash"  # mini-swe-agent's own tool


def test_mini_swe_agent_fixes_a_swe_task(tokenizer) -> None:  # type: ignore[no-untyped-def]
    task = load_swe_tasks("bundled").get("gymswe__semverkit-1")
    encoded = base64.b64encode(task.patch.encode()).decode()
    turns = [
        bash("git status --short && ls", 0),
        bash(f"echo {encoded} | base64 -d | git apply", 1),
        bash(SUBMIT, 2),
    ]
    trajectory, _ = play(tokenizer, "SWEGym-v0", task.instance_id, turns)
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason) == (1.0, "submitted")
    assert "semverkit" in trajectory.turns[0].observation  # ls ran in /testbed


def test_an_agent_that_never_fixes_gets_zero_and_runs_only_in_the_sandbox(tokenizer) -> None:  # type: ignore[no-untyped-def]
    marker = "/workspace/agent-was-here"
    turns = [bash(f"touch {marker} && ls /workspace", 0), bash(SUBMIT, 1)]
    trajectory, _ = play(tokenizer, "CodeDebug-v0", "GymSwe/0", turns)
    assert (trajectory.reward, trajectory.end_reason, trajectory.resolved) == (0.0, "submitted", False)
    assert trajectory.error is None
    assert "solution.py" in trajectory.turns[0].observation
    assert not Path(marker).exists()  # the command ran in the jail, not on the host


def test_the_turn_budget_ends_the_episode_truncated_and_graded(tokenizer) -> None:  # type: ignore[no-untyped-def]
    turns = [bash("ls", i) for i in range(10)]
    trajectory, _ = play(tokenizer, "CodeDebug-v0", "GymSwe/0", turns, max_turns=3, max_episode_steps=3)
    assert (trajectory.truncated, trajectory.end_reason, trajectory.reward) == (True, "max_turns", 0.0)
    assert len(trajectory.turns) == 3 and trajectory.grade is not None
    assert trajectory.error is None  # a budget is not a failure


def test_episodes_in_parallel(tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    task = load_function_tasks("bundled").get("GymSwe/0")
    turns = [write_file("/workspace/solution.py", task.fixed_code, 0), bash(SUBMIT, 1)]
    generator = RecordingGenerator(tokenizer, turns)
    with ProxyServer(generator, SamplingParams(max_tokens=4096), max_model_len=32768) as proxy:
        trajectories = run_episodes(
            lambda: gymnasium.make("CodeDebug-v0"), proxy, ["GymSwe/0"], samples_per_task=3, parallel=3,
            config=MiniSweAgentConfig(command_timeout=30),
        )  # fmt: skip
    assert [(t.task_id, t.sample_index, t.reward) for t in trajectories] == [
        ("GymSwe/0", i, 1.0) for i in range(3)
    ]


def test_eval_progress_counts_the_harness_turns(tokenizer, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    """`gym-swe eval --harness`'s progress bar: the harness steps no env until it submits, so its turns are
    counted as the proxy answers them."""
    require_bwrap()
    from gym_swe.rollout.run_eval import Progress

    task = load_function_tasks("bundled").get("GymSwe/0")
    turns = [bash("ls", 0), write_file("/workspace/solution.py", task.fixed_code, 1), bash(SUBMIT, 2)]
    progress = Progress(total=2)
    trajectories = collect_with_harness(
        lambda: gymnasium.make("CodeDebug-v0"), RecordingGenerator(tokenizer, turns), ["GymSwe/0"],
        samples_per_task=2, sampling=SamplingParams(max_tokens=4096), max_model_len=32768,
        on_trajectory=progress.on_trajectory, on_turn=progress.on_turn,
    )  # fmt: skip
    progress.close()
    assert [len(t.turns) for t in trajectories] == [3, 3] and progress.turns == 6
    assert "6 turns, 2 resolved, 0 failed]" in capsys.readouterr().err


# -- the trainer -------------------------------------------------------------------------------------------------
def test_grpo_trains_through_mini_swe_agent(tmp_path: Path) -> None:
    """A step of trainers/grpo.py with --harness mini-swe-agent on a tiny random model: its noise holds no
    tool call, so mini-swe-agent drops each turn from its history (a format error) and the proxy records a
    fork; the trajectories are the proxy's, with its segments, and the optimizer stepped on them."""
    require_bwrap()
    from gym_swe.rollout.trajectory import load_jsonl
    from tests.trainers.runs import metrics, train, weights

    model = make_tiny_bpe_model(MODELS)
    out = train("--env", "CodeDebug-v0", "--model", str(model), "--harness", "mini-swe-agent", "--steps", "1",
                "--tasks_per_step", "1", "--group_size", "2", "--max_turns", "2", "--max_new_tokens", "16",
                "--eval_every", "0", "--learning_rate", "1e-2", "--weight_decay", "0.1",
                "--output_dir", str(tmp_path), "--run_name", "h")  # fmt: skip
    run = tmp_path / "h"
    assert str(run) in out
    assert metrics(run)[0]["rollout/failed"] == 0.0
    trajectories = load_jsonl(run / "trajectories" / "step_0.jsonl")
    assert len(trajectories) == 2
    for trajectory in trajectories:
        assert trajectory.tools[0]["function"]["name"] == "bash"  # mini-swe-agent's tool, not gym_swe's
        assert (len(trajectory.turns), trajectory.end_reason, trajectory.error) == (2, "max_turns", None)
        assert trajectory.forks == 1 and trajectory.segment_count == 2
    before, after = weights(model), weights(run / "model")
    assert any(not torch.equal(before[name], after[name]) for name in before)


def test_the_trainer_makes_a_row_of_each_segment() -> None:
    import sys

    from gym_swe.rollout.trajectory import Trajectory
    from tests.conftest import REPO_ROOT

    sys.path.insert(0, str(REPO_ROOT / "trainers"))
    import grpo

    trajectory = Trajectory(task_id="t")
    trajectory.add_prompt([1, 2])
    trajectory.add_sampled([3, 4], [-0.1, -0.2], "a", "stop")
    trajectory.add_bridge([5])
    trajectory.start_segment([1, 9])  # the harness rewrote its history
    trajectory.add_sampled([6], [-0.3], "b", "stop")
    rollout = grpo.Rollout([trajectory], torch.tensor([1.0]), version=0)
    rows = grpo.rows_of(rollout, torch.tensor([0.5]))
    assert [row.ids.tolist() for row in rows] == [[1, 2, 3, 4, 5], [1, 9, 6]]
    assert [row.mask.tolist() for row in rows] == [[0, 0, 1, 1, 0], [0, 0, 1]]
    assert [row.advantage for row in rows] == [0.5, 0.5]
    assert rows[1].gen_logps is not None and rows[1].gen_logps[-1].item() == pytest.approx(-0.3)


def test_the_readme_harness_snippet_runs_with_a_tiny_model(tmp_path: Path) -> None:
    """As written, but for the model: a tiny random one. Its replies hold no tool call; the env answers each
    with feedback, the snippet's harness sends that back, and the proxy bridges every turn (no fork)."""
    require_bwrap()
    from tests.test_readme import MODEL_PLACEHOLDER, run, snippet

    code = snippet("Train your own agent harness")
    assert code.count(MODEL_PLACEHOLDER) == 1
    code = code.replace(MODEL_PLACEHOLDER, repr(str(make_tiny_bpe_model(MODELS))))
    turns, forks, reward = run(code, tmp_path).stdout.split()[-3:]
    assert (turns, forks, reward) == ("3", "0", "0.0")


def test_harness_options_that_cannot_work_are_one_clear_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    from gym_swe.errors import ConfigError
    from tests.conftest import REPO_ROOT

    model = str(make_tiny_bpe_model(MODELS))
    cli = [sys.executable, "-m", "gym_swe.cli", "eval", "--env", "CodeDebug-v0", "--model", model,
           "--harness", "mini-swe-agent", "--limit", "1", "--out", str(tmp_path / "t.jsonl")]  # fmt: skip
    for extra, expected in (
        (["--generator", "hf", "--seed", "3"], "a run seed is not supported with a harness"),
    ):
        done = subprocess.run([*cli, *extra], capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert done.returncode == 2, done.stderr[-2000:]
        last = done.stderr.strip().splitlines()[-1]
        assert expected in last and "Traceback" not in done.stderr, done.stderr[-2000:]

    sys.path.insert(0, str(REPO_ROOT / "trainers"))
    import grpo

    with pytest.raises(ConfigError, match="mini-swe-agent"):
        grpo.parse_args(["--model", model, "--harness", "openhands"])
    with pytest.raises(ConfigError, match="--ray_address"):
        grpo.parse_args(["--model", model, "--harness", "mini-swe-agent", "--ray_address", "auto"])


def test_mini_swe_agent_cli_inside_the_jail_reaches_only_the_proxy(tokenizer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """mini-swe-agent's own CLI runs inside the episode's bubblewrap jail (its commands run there by its own
    local environment); the jail has no network, and its one way out is the proxy's unix socket bound in."""
    require_bwrap()
    from gym_swe.integrations.mini_swe_agent import inside_sandbox_options, run_episode_inside

    task = load_function_tasks("bundled").get("GymSwe/0")
    probe = "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 8765))' && cat /proc/net/dev"
    turns = [
        bash(probe, 0),
        write_file("/workspace/solution.py", task.fixed_code, 1),
        bash(SUBMIT, 2),
    ]
    generator = RecordingGenerator(tokenizer, turns)
    socket_dir = tmp_path / "proxy"
    socket_dir.mkdir()
    env = gymnasium.make("CodeDebug-v0", sandbox_options=inside_sandbox_options(str(socket_dir)))
    try:
        with ProxyServer(generator, SamplingParams(max_tokens=4096), max_model_len=32768,
                         unix_socket=str(socket_dir / "proxy.sock")) as proxy:  # fmt: skip
            trajectory = run_episode_inside(env, proxy, task.task_id, timeout=600)
    finally:
        env.close()
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason, len(trajectory.turns)) == (1.0, "submitted", 3)
    assert sampled_ids(trajectory) == generator.sampled and trajectory.forks == 0
    # The forwarder on the jail's loopback took the connection; the jail's only interface is lo.
    result = json.loads(trajectory.turns[0].observation)  # mini-swe-agent's tool result: JSON
    assert result["returncode"] == 0, result
    interfaces = [line.split(":")[0].strip() for line in result["output"].splitlines()[2:]]
    assert interfaces == ["lo"], result["output"]


class BrokenGenerator(RecordingGenerator):
    def generate(self, prompts, params):  # type: ignore[no-untyped-def]
        raise RuntimeError("CUDA error: device-side assert triggered")


def test_a_generator_failure_is_a_failed_trajectory_not_a_crash(tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    env = gymnasium.make("CodeDebug-v0")
    try:
        with ProxyServer(BrokenGenerator(tokenizer, [bash("ls", 0)]), SamplingParams(max_tokens=64)) as proxy:
            trajectory = run_episode(env, proxy, "GymSwe/0")
    finally:
        env.close()
    assert trajectory.failed and "device-side assert" in (trajectory.error or "")
    assert trajectory.error.startswith("generator:") and trajectory.truncated
    assert trajectory.end_reason == "generator_error" and trajectory.grade is not None
