"""Stopping trainers/grpo.py mid-step, as a user (Ctrl-C) or a scheduler (SIGTERM) does: it closes every
sandbox it made, keeps the trajectories of the episodes that ended, says so in one line and exits 130 / 143."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gym_swe.rollout.trajectory import load_jsonl
from tests.conftest import REPO_ROOT, require_bwrap, require_docker
from tests.redteam.test_soak import leftovers
from tests.trainers.hanging_env import HANGING_TASK, QUICK_TASK
from tests.trainers.runs import TRAINER

GROUP = 2


@pytest.mark.parametrize(("signal_name", "backend"), [("SIGINT", "local"), ("SIGTERM", "local"),
                                                      ("SIGTERM", "docker")])  # fmt: skip
def test_ctrl_c_or_sigterm_mid_step_closes_every_sandbox_and_keeps_what_ended(
    tiny_bpe_model: Path, tmp_path: Path, signal_name: str, backend: str
) -> None:
    """A step of two groups: the episodes of one submit at once, those of the other then run a command for
    ten minutes in their sandboxes. Once the first have been written (each as it ended, mid-step), the run is
    stopped while the others are surely running."""
    (require_docker if backend == "docker" else require_bwrap)()
    command = [sys.executable, str(TRAINER), "--log_with", "none", "--env", "hanging_env:HangingDebug-v0",
               "--sandbox", backend, "--model", str(tiny_bpe_model), "--steps", "3", "--tasks_per_step", "2",
               "--group_size", str(GROUP), "--max_turns", "3", "--max_new_tokens", "8", "--eval_every", "0",
               "--train_task_ids", f"{QUICK_TASK},{HANGING_TASK}", "--output_dir", str(tmp_path),
               "--run_name", "stopped"]  # fmt: skip
    paths = f"{REPO_ROOT}:{REPO_ROOT / 'tests' / 'trainers'}"
    environment = {**os.environ, "PYTHONPATH": paths, "TOKENIZERS_PARALLELISM": "false"}
    process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=environment)  # fmt: skip
    step_file = tmp_path / "stopped" / "trajectories" / "step_0.jsonl"
    try:
        while not (step_file.exists() and step_file.read_text(encoding="utf-8").count("\n") == GROUP):
            if process.poll() is not None:
                raise AssertionError(f"the trainer ended first: {process.communicate()[1][-3000:]}")
            time.sleep(0.05)
        process.send_signal(getattr(signal, signal_name))
        _, stderr = process.communicate()
    finally:
        if process.poll() is None:  # the test failed waiting: the trainer must not outlive it
            process.kill()
            process.communicate()
    assert process.returncode == 128 + getattr(signal, signal_name), stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    said = [line for line in stderr.splitlines() if line.startswith("grpo.py:")]
    assert said == [stderr.strip().splitlines()[-1]], stderr[-3000:]  # one line, the last
    assert said[0].startswith(f"grpo.py: interrupted by {signal_name} in step 0: the episodes that ended")
    # The quick group's episodes, whole and graded; none of the stopped ones (they did not end).
    saved = load_jsonl(step_file)
    assert [(t.task_id, t.end_reason, t.error, t.policy_version) for t in saved] == [
        (QUICK_TASK, "submitted", None, 0)
    ] * GROUP
    assert all(t.grade is not None and len(t.turns) == 1 for t in saved)
    assert not (tmp_path / "stopped" / "metrics.jsonl").exists()  # step 0 never finished
    assert leftovers(process.pid) == {}  # no workspace, jail cgroup, process or container of the run
