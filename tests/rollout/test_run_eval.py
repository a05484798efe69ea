"""The parts of `gym-swe eval` around the collector: the progress bar, the failure summary, and a run that is
stopped (Ctrl-C, SIGTERM, a crash): what ended is saved, every sandbox closed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium
import pytest

import gym_swe  # noqa: F401
from gym_swe.rollout.collector import collect
from gym_swe.rollout.evaluation import failure_reasons
from gym_swe.rollout.run_eval import Progress, TurnCallback
from gym_swe.rollout.trajectory import Trajectory, load_jsonl
from gym_swe.sandbox.cgroups import prune_cgroups
from gym_swe.sandbox.local import prune_workspaces
from tests.conftest import require_bwrap, require_docker
from tests.redteam.test_soak import leftovers
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


def test_an_unknown_task_id_is_one_line_before_the_model_loads(tmp_path: Path) -> None:
    """As `gym-swe play` does. The model looks like a hub id that cannot be fetched (offline): were it loaded
    first, the line would be about the model."""
    command = [sys.executable, "-m", "gym_swe.cli", "eval", "--env", "CodeDebug-v0", "--generator", "hf",
               "--model", "nobody/no-such-model", "--task-id", "GymSwe/1", "--task-id", "GymSwe/99",
               "--out", str(tmp_path / "t.jsonl")]  # fmt: skip
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"}
    )
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr[-3000:]
    assert done.stderr.startswith(
        "gym-swe: error: Unknown task id in 'bundled': 'GymSwe/99'. Did you mean 'GymSwe/9'?"
    )
    assert not (tmp_path / "t.jsonl").exists()


# -- a run that is stopped: Ctrl-C, SIGTERM, a crash --------------------------------------------------------------
EPISODES = 30


def eval_until_saved(model: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    """`gym-swe eval` on ``EPISODES`` tasks one at a time, returned once at least one trajectory is in ``out``:
    from then on an episode is in flight (or about to start) until the run ends, far later."""
    command = [sys.executable, "-m", "gym_swe.cli", "eval", "--env", "CodeDebug-v0", "--generator", "hf",
               "--model", str(model), "--parallel", "1", "--limit", str(EPISODES), "--max-turns", "2",
               "--max-tokens", "16", "--out", str(out), *extra]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not (out.exists() and out.read_text(encoding="utf-8").count("\n")):
            if process.poll() is not None:
                raise AssertionError(f"eval ended before any episode did: {process.communicate()[1][-3000:]}")
            time.sleep(0.05)
    except BaseException:  # the test failed waiting (or timed out): the run must not outlive it
        process.kill()
        process.communicate()
        raise
    return process


def ended_episodes(out: Path) -> list[Trajectory]:
    """The trajectories in ``out``, each checked to be an episode that ended (graded, not cut by the stop)."""
    trajectories = load_jsonl(out)  # every line whole: each was written at once, and flushed
    for trajectory in trajectories:
        assert trajectory.grade is not None and trajectory.end_reason == "max_turns", trajectory.end_reason
        assert trajectory.error is None and len(trajectory.turns) == 2
    return trajectories


def test_eval_appends_each_trajectory_as_it_ends_so_a_crash_loses_only_episodes_in_flight(
    tiny_model: Path, tmp_path: Path
) -> None:
    """SIGKILL, which nothing can catch: what ended before is in the file, whole."""
    require_bwrap()
    out = tmp_path / "trajectories.jsonl"
    process = eval_until_saved(tiny_model, out)
    process.kill()
    process.communicate()
    try:
        saved = ended_episodes(out)
        assert 1 <= len(saved) < EPISODES
        assert [t.task_id for t in saved] == [f"GymSwe/{i}" for i in range(len(saved))]
    finally:  # a killed run leaves its sandbox behind: what `gym-swe sandbox prune` is for
        prune_workspaces()
        prune_cgroups()


@pytest.mark.parametrize(("signal_name", "backend"), [("SIGINT", "local"), ("SIGTERM", "local"),
                                                      ("SIGTERM", "docker")])  # fmt: skip
def test_ctrl_c_or_sigterm_stops_eval_closes_every_sandbox_and_keeps_what_ended(
    tiny_model: Path, tmp_path: Path, signal_name: str, backend: str
) -> None:
    (require_docker if backend == "docker" else require_bwrap)()
    out = tmp_path / "trajectories.jsonl"
    process = eval_until_saved(tiny_model, out, "--sandbox", backend)
    process.send_signal(getattr(signal, signal_name))
    _, stderr = process.communicate()
    assert process.returncode == 128 + getattr(signal, signal_name), stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    said = [line for line in stderr.splitlines() if line.startswith("gym-swe:")]
    saved = ended_episodes(out)
    assert said == [stderr.strip().splitlines()[-1]], stderr[-3000:]  # one line, the last
    assert said[0].startswith(f"gym-swe: interrupted by {signal_name}: {len(saved)} of {EPISODES} episodes ")
    assert 1 <= len(saved) < EPISODES
    assert leftovers(process.pid) == {}  # no workspace, jail cgroup, process or container of the run
