"""trainers/grpo.py at start-up, as a user meets it: a wrong flag, a model that is not there and a run name
used before are one line and exit 2, before the model loads; --overwrite starts a used run name afresh."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.trainers.runs import TOY_FLAGS, TRAINER, metrics, refused, train

OFFLINE = {
    "HF_HUB_OFFLINE": "1"
}  # the hub is out of reach here: say so at once, not after a minute of retries
NO_MODEL = "nobody/no-such-model"  # looks like a hub id, so it is tried: it would fail to load


@pytest.mark.parametrize(("flags", "said"), [
    (["--model", NO_MODEL, "--stepz", "3"], "grpo.py: error: Unknown flag '--stepz'. Did you mean '--steps'?"),
    (["--model", "/no/such/model"], "grpo.py: error: --model '/no/such/model': no such directory; give a local"),
    (["--model", NO_MODEL], f"grpo.py: error: --model '{NO_MODEL}' could not be loaded: "),
    (["--model", NO_MODEL, "--group-size", "1"], "grpo.py: error: --group_size must be >= 2"),  # either spelling
    (["--model", NO_MODEL, "--max", "3"], "grpo.py: error: Unknown flag '--max'. Did you mean '--max_turns'?"),
])  # fmt: skip
def test_a_wrong_flag_or_model_is_one_line(flags: list[str], said: str, tmp_path: Path) -> None:
    line = refused(*TOY_FLAGS, "--output_dir", str(tmp_path), *flags, env=OFFLINE)
    assert line.startswith(said), line


def test_a_run_name_used_before_is_refused_before_the_model_loads(tmp_path: Path) -> None:
    earlier = tmp_path / "run"
    (earlier / "checkpoints" / "step_2").mkdir(parents=True)
    (earlier / "metrics.jsonl").write_text('{"step": 0}\n')
    line = refused(
        *TOY_FLAGS, "--model", NO_MODEL, "--output_dir", str(tmp_path), "--run_name", "run", env=OFFLINE
    )
    assert line == (
        f"grpo.py: error: {earlier} holds an earlier run: pass --resume {earlier} to continue it or --overwrite "
        "to start it afresh (or another --run_name)"
    )
    assert (earlier / "metrics.jsonl").read_text() == '{"step": 0}\n'  # left as it was


def test_overwrite_starts_a_used_run_name_afresh(tiny_bpe_model: Path, tmp_path: Path) -> None:
    earlier = tmp_path / "run"
    (earlier / "checkpoints" / "step_7").mkdir(parents=True)
    (earlier / "trajectories").mkdir()
    (earlier / "trajectories" / "step_00000.jsonl").write_text("not a trajectory\n")
    (earlier / "metrics.jsonl").write_text('{"step": 0}\n{"step": 1}\n{"step": 2}\n')
    (earlier / "notes.txt").write_text("mine")
    train(*TOY_FLAGS, "--model", str(tiny_bpe_model), "--steps", "1", "--tasks_per_step", "1", "--group_size", "2",
          "--output_dir", str(tmp_path), "--run_name", "run", "--overwrite")  # fmt: skip
    assert [row["step"] for row in metrics(earlier)] == [0]
    assert sorted(path.name for path in (earlier / "checkpoints").iterdir()) == ["step_1"]
    assert "not a trajectory" not in (earlier / "trajectories" / "step_00000.jsonl").read_text()
    assert (earlier / "notes.txt").read_text() == "mine"  # what the run did not write stays


def test_help_as_a_user_runs_it() -> None:
    done = subprocess.run([sys.executable, str(TRAINER), "--help"], cwd=REPO_ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("usage: grpo.py [--config FILE]")
    assert "GRPO:" in done.stdout and "--loss {dapo,grpo,dr_grpo,gspo,cispo}" in done.stdout
