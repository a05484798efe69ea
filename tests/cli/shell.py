"""The gym-swe command, run as a user runs it: in a process of its own, its output and exit status read."""

from __future__ import annotations

import subprocess
import sys


def gym_swe(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gym_swe.cli", *args], capture_output=True, text=True,
                          env=env, timeout=timeout)  # fmt: skip


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The one error line of a run that gym_swe refused (exit status 2, no traceback)."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("gym-swe: error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]
