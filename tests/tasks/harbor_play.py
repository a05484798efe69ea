"""Playing an exported Harbor task folder the way Harbor does, with plain docker: build ``environment/``,
run the agent's commands as the task's agent user, put ``tests/`` into ``/tests`` after the agent, run
``bash /tests/test.sh`` as root from the work dir, read ``/logs/verifier/reward.txt``."""

from __future__ import annotations

import hashlib
import json
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def docker(*argv: str, check: bool = True, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *argv], capture_output=True, text=True, check=check, timeout=timeout)


def build(task: Path) -> str:
    digest = hashlib.sha256(
        b"".join(p.read_bytes() for p in sorted((task / "environment").rglob("*")) if p.is_file())
    ).hexdigest()[:12]
    tag = f"gym-swe-export-test:{task.name.lower()}-{digest}"
    if docker("image", "inspect", tag, check=False).returncode != 0:
        docker("build", "-q", "--network", "none", "-t", tag, str(task / "environment"))
    return tag


@dataclass
class Played:
    reward: float
    grade: dict[str, Any]
    files: list[str]
    """What /logs/verifier held after the verifier."""


def play(task: Path, commands: list[str] = (), solve: bool = False) -> Played:  # type: ignore[assignment]
    """Run ``commands`` (bash, as the agent user, from the work dir; ``solve``: solution/solve.sh), then the
    verifier; the reward it wrote and the grade gym_swe wrote beside it."""
    config = tomllib.loads((task / "task.toml").read_text())
    user, workdir = config["agent"]["user"], config["environment"]["workdir"]
    container = docker("run", "-d", "--network", "none", build(task), "sleep", "infinity").stdout.strip()
    try:
        if solve:
            docker("cp", str(task / "solution"), f"{container}:/solution")
            commands = [*commands, "bash /solution/solve.sh"]
        for command in commands:
            docker("exec", "-u", user, "-w", workdir, container, "bash", "-c", command)
        docker("cp", f"{task / 'tests'}/.", f"{container}:/tests")
        docker("exec", "-w", workdir, container, "bash", "/tests/test.sh")
        files = docker("exec", container, "ls", "-A", "/logs/verifier").stdout.split()
        reward = float(docker("exec", container, "cat", "/logs/verifier/reward.txt").stdout)
        grade = json.loads(docker("exec", container, "cat", "/logs/verifier/grade.json").stdout)
        return Played(reward, grade, files)
    finally:
        docker("rm", "-f", container, check=False)
