"""`gym-swe tasks export`: a bad flag, env, source or task id fails in one line, exit status 2, before
anything is written (the folders themselves: tests/integrations/test_harbor_export.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.integrations.harbor_play import export


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--format", "terminal-bench", "--env", "CodeDebug-v0", "--out", "o"], "Unknown value 'terminal-bench'"),
        (["--format", "harbor", "--env", "Harbor-v0", "--out", "o"], "Unknown value 'Harbor-v0'"),
        (["--format", "harbor", "--env", "CodeDebug-v0", "--out", "o", "--task-id", "Nope/1"], "Nope/1"),
        (["--format", "harbor", "--env", "CodeDebug-v0", "--out", "o", "--wheels", "none"], "--wheels none"),
        (["--format", "harbor", "--env", "CodeDebug-v0", "--out", "o", "--tasks", "x.jsonl"], "x.jsonl"),
        (["--format", "harbor", "--env", "CodeDebug-v0"], "--out"),
    ],
)  # fmt: skip
def test_bad_flags_fail_in_one_line_before_writing(tmp_path: Path, argv: list[str], says: str) -> None:
    done = export(tmp_path, *argv)
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_out_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "o").write_text("")
    done = export(tmp_path, "--format", "harbor", "--env", "CodeDebug-v0", "--out", "o")
    assert done.returncode == 2 and done.stderr.strip() == "gym-swe: error: --out o: not a directory"


def test_a_task_whose_image_is_missing_fails_before_anything_is_written(tmp_path: Path) -> None:
    """A SWE-bench record whose official image is neither here nor pullable: one line, no folder."""
    import json

    from tests.conftest import require_docker

    require_docker()
    record = json.loads((REPO_ROOT / "gym_swe/tasks/data/swe/tasks.jsonl").read_text().splitlines()[0])
    record["image"] = "swebench/sweb.eval.x86_64.gym-swe-no-such-task:latest"
    (tmp_path / "records.jsonl").write_text(json.dumps(record) + "\n")
    done = export(
        tmp_path, "--format", "harbor", "--env", "SWEGym-v0", "--tasks", "records.jsonl", "--out", "o"
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "gym-swe-no-such-task" in done.stderr and not (tmp_path / "o").exists()
