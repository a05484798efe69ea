"""The README's "Harbor tasks" section, run as written: the snippet on the bundled Go task in its own image, and
each command of its bash block."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import require_docker
from tests.test_readme import run, snippet

SECTION = "Harbor tasks"


def test_the_snippet_plays_the_bundled_go_task_and_prints_what_the_readme_says(tmp_path: Path) -> None:
    require_docker()
    code = snippet(SECTION)
    assert code.startswith("import gymnasium\nimport gym_swe")
    lines = run(code, tmp_path).stdout.splitlines()
    assert lines[-1] == "0.0 sealed", lines[-5:]  # the text around it: visible tests pass, the bug is there
    assert any(line.startswith("ok") for line in lines), lines  # go test's own line: the visible tests pass


def test_each_command_of_the_section_runs_as_written(tmp_path: Path) -> None:
    require_docker()
    block = snippet(SECTION, "bash")
    commands = [shlex.split(line) for line in block.splitlines() if line.strip()]
    assert [argv[:3] for argv in commands] == [
        ["gym-swe", "validate", "--env"],
        ["gym-swe", "tasks", "export"],
    ]
    for argv in commands:
        done = subprocess.run([sys.executable, "-m", "gym_swe.cli", *argv[1:]], cwd=tmp_path,
                              capture_output=True, text=True, timeout=1500)  # fmt: skip
        assert done.returncode == 0, (argv, done.stdout[-2000:], done.stderr[-2000:])
    assert len(list((tmp_path / "harbor-tasks").glob("*/task.toml"))) == 12  # the 12 bundled SWE tasks
