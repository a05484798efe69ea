"""bench/real_gold.py (issue 34's gold / no-change episodes) on a bundled task: one JSON line per integrity asked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import require_bwrap

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "real_gold.py"


def test_gold_earns_one_and_no_change_zero_per_integrity() -> None:
    require_bwrap()
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--tasks", "bundled", "--task-id", "gymswe__semverkit-1",
         "--integrity", "protected", "--integrity", "any"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert run.returncode == 0, run.stdout + run.stderr
    assert [row["integrity"] for row in rows] == ["protected", "any"]
    for row in rows:
        assert row["task"] == "gymswe__semverkit-1" and row["sandbox"] == "local"
        assert (row["gold_reward"], row["none_reward"]) == (1.0, 0.0)
        assert row["gold_error"] is None and row["none_error"] is None
        assert row["gold_integrity"] == "sealed"
