"""Installing harnesses into a folder gym_swe owns, from npm's cache: the real npm, the real packages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from gym_swe.integrations.harnesses.base import Harness
from gym_swe.integrations.harnesses.install import MARKER, installation
from tests.conftest import REPO_ROOT


def test_a_second_install_works_offline_from_npms_cache(
    installed: Callable[[str], Harness], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once ``gym-swe harnesses install pi`` has run (here: the fixture), npm's cache in gym_swe's cache holds
    every tarball: an install into a new folder with npm offline (its ``offline`` setting) succeeds, runs
    its Node, and lays the folders out as the runner expects (lockfile installed, marker written last)."""
    pi = installed("pi")
    root = tmp_path / "harnesses"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "GYM_SWE_HARNESS_DIR": str(root),
           "npm_config_offline": "true"}  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "gym_swe.cli", "harnesses", "install", "pi"],
                          capture_output=True, text=True, timeout=900, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "npm ci, from its lockfile" in done.stdout
    monkeypatch.setenv("GYM_SWE_HARNESS_DIR", str(root))
    found = installation(pi)
    assert found is not None and found.harness_dir.parent == root
    assert json.loads((found.harness_dir / MARKER).read_text())["packages"] == [p.spec for p in pi.packages]
    version = subprocess.run([str(found.node), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("v22.")
    cli = found.harness_dir / "node_modules" / "@mariozechner" / "pi-coding-agent" / "dist" / "cli.js"
    said = subprocess.run([str(found.node), str(cli), "--version"], capture_output=True, text=True)
    assert said.returncode == 0 and "0.73.1" in said.stdout + said.stderr
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == sorted(
        [found.node_dir.name, found.harness_dir.name]
    )  # nothing half-installed beside them
    again = subprocess.run([sys.executable, "-m", "gym_swe.cli", "harnesses", "install", "pi"],
                           capture_output=True, text=True, timeout=300, env=env)  # fmt: skip
    assert again.returncode == 0 and f"{found.harness_dir.name} is installed" in again.stdout


def test_harnesses_list_says_where_each_is_or_how_to_install_it(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "GYM_SWE_HARNESS_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "gym_swe.cli", "harnesses", "list"],
                          capture_output=True, text=True, timeout=120, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "mini-swe-agent: a Python package, plays on the host; installed"
    assert lines[1].startswith(
        "pi: @mariozechner/pi-coding-agent@0.73.1, speaks chat_completions; not installed"
    )
    assert "(gym-swe harnesses install opencode)" in lines[2]
    refused = subprocess.run([sys.executable, "-m", "gym_swe.cli", "harnesses", "install", "opncode"],
                             capture_output=True, text=True, timeout=120, env=env)  # fmt: skip
    assert refused.returncode == 2 and "Did you mean 'opencode'?" in refused.stderr
