"""Playing an exported Harbor task folder the way Harbor does, with plain docker: build ``environment/``,
make ``/logs/verifier`` writable by all, run the agent's commands as the task's agent user, remove stale reward
files, put ``tests/`` into ``/tests`` after the agent, run ``bash /tests/test.sh`` as root from the work dir,
read ``/logs/verifier/reward.txt``."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomllib


def docker(*argv: str, check: bool = True, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *argv], capture_output=True, text=True, check=check, timeout=timeout)


BUILT: set[str] = set()
"""The images `build` made in this process, for `remove_images`."""


def remove_images() -> None:
    """Remove the images `build` made (each export's wheel makes a new one: they would pile up)."""
    for tag in sorted(BUILT):
        docker("rmi", "-f", tag, check=False)
    BUILT.clear()


def build(task: Path) -> str:
    digest = hashlib.sha256(
        b"".join(p.read_bytes() for p in sorted((task / "environment").rglob("*")) if p.is_file())
    ).hexdigest()[:12]
    tag = f"gym-swe-export-test:{task.name.lower()}-{digest}"
    if docker("image", "inspect", tag, check=False).returncode != 0:
        docker("build", "-q", "--network", "none", "-t", tag, str(task / "environment"))
    BUILT.add(tag)
    return tag


@dataclass
class Played:
    reward: float
    grade: dict[str, Any]
    files: list[str]
    """What /logs/verifier held after the verifier."""
    before: str = ""
    """What ``probe`` printed, run as root after the agent's commands and before the tests were uploaded."""


def play(
    task: Path,
    commands: list[str] = (),  # type: ignore[assignment]
    solve: bool = False,
    probe: str = "true",
) -> Played:
    """Run ``commands`` (bash, as the agent user, from the work dir; ``solve``: solution/solve.sh), then the
    verifier; the reward it wrote and the grade gym_swe wrote beside it."""
    config = tomllib.loads((task / "task.toml").read_text())
    user, workdir = config["agent"]["user"], config["environment"]["workdir"]
    container = docker("run", "-d", "--network", "none", build(task), "sleep", "infinity").stdout.strip()
    try:
        # as Harbor does: the verifier's log dir there from the start, writable by all
        docker("exec", container, "bash", "-c", "mkdir -p /logs/verifier && chmod 777 /logs/verifier")
        if solve:
            docker("cp", str(task / "solution"), f"{container}:/solution")
            commands = [*commands, "bash /solution/solve.sh"]
        for command in commands:
            docker("exec", "-u", user, "-w", workdir, container, "bash", "-c", command)
        docker("exec", container, "rm", "-f", "/logs/verifier/reward.txt", "/logs/verifier/reward.json")
        before = docker("exec", container, "bash", "-c", probe).stdout
        docker("cp", f"{task / 'tests'}/.", f"{container}:/tests")
        docker("exec", "-w", workdir, container, "bash", "/tests/test.sh")
        files = docker("exec", container, "ls", "-A", "/logs/verifier").stdout.split()
        reward = float(docker("exec", container, "cat", "/logs/verifier/reward.txt").stdout)
        grade = json.loads(docker("exec", container, "cat", "/logs/verifier/grade.json").stdout)
        return Played(reward, grade, files, before)
    finally:
        docker("rm", "-f", container, check=False)


CODEDEBUG_ID = "GymSwe/0"
SWE_ID = "gymswe__semverkit-1"


def export(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``gym-swe tasks export ARGV`` run from ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "gym_swe.cli", "tasks", "export", *argv], capture_output=True, text=True,
        cwd=cwd, timeout=900,
    )  # fmt: skip


def export_examples(out: Path, *flags: str) -> Path:
    """One bundled CodeDebug task and one bundled SWE task (its image built first, if it is not) under
    ``out``, as ``GymSwe__0`` and ``gymswe__semverkit-1``; ``flags``: more of the export's (``--build``)."""
    from gym_swe.tasks.images import build_task_image
    from gym_swe.tasks.repos import RepoSource
    from gym_swe.tasks.swe import load_swe_tasks

    build_task_image(load_swe_tasks("bundled").get(SWE_ID), RepoSource(None), log=lambda _: None)
    for env_id, task_id in (("CodeDebug-v0", CODEDEBUG_ID), ("SWEGym-v0", SWE_ID)):
        done = export(
            out, "--format", "harbor", "--env", env_id, "--out", str(out), "--task-id", task_id, *flags
        )
        assert done.returncode == 0, done.stderr
    return out
