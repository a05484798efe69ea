"""Prepared environments for SWE tasks in local sandboxes: a virtual environment and a prepared checkout.

``prepare_environment`` builds them once (network allowed, here only), in a jail:

- the interpreter ``environment.python`` names (`interpreters.find_interpreter`); one installed outside
  ``/usr`` has its prefix bound read-only into every jail of the task: here, in episodes and in grading;
- a venv made from it *without* the system's site-packages, holding exactly the task's requirements and a
  pinned pytest (`Environment.pytest_requirement`); pip's downloads are cached under the gym_swe cache
  (``GYM_SWE_PIP_CACHE`` to put them elsewhere), so a second environment costs no download;
- the task's install commands, run in a copy of the pristine checkout that is kept: what they build
  (setuptools_scm's ``_version.py``, ``*.egg-info``, in-place extensions) is part of the *prepared
  checkout*, which episodes and grading use as their copy-on-write lower layer. The agent's changes are
  taken against that same tree, so generated files are never the agent's changes (and ``*.egg-info`` stays a
  protected path). Git is told to ignore the generated files (``.git/info/exclude``) so ``git status`` in an
  episode shows the agent's work only.

Tasks without install commands share one venv per environment key and use their pristine checkout as it is;
with install commands, what is built depends on the commit, so each task gets its own. Episodes bind the venv
read-only at the same path and put its ``bin`` first on PATH, so reset never copies it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_swe.errors import TaskError
from gym_swe.sandbox.local import DEFAULT_PATH, LocalSandbox
from gym_swe.tasks.interpreters import Interpreter, find_interpreter
from gym_swe.tasks.repos import RepoSource, cache_root, checkout, file_lock, git, safe_name
from gym_swe.tasks.swe import SWETask

logger = logging.getLogger("gym_swe")
PREPARE_TIMEOUT = 3600
METADATA = "environment.json"


@dataclass(frozen=True)
class PreparedEnvironment:
    """What a local sandbox of a task needs: see `sandbox_options`."""

    path: Path
    venv: Path
    checkout: Path
    """The tree episodes and grading start from: the pristine checkout plus what the install built."""
    binds: dict[str, str]
    """Read-only binds (host path: jail path): the venv and, when outside ``/usr``, the interpreter."""
    variables: dict[str, str]
    """Environment variables for every command: the spec's ``env``, PATH and VIRTUAL_ENV."""
    python: str
    """The interpreter's version, e.g. ``"3.9.18"``."""

    def sandbox_options(self) -> dict[str, Any]:
        return {"source": self.checkout, "ro_binds": dict(self.binds), "env": dict(self.variables)}


def environment_dir(task: SWETask) -> Path:
    spec = task.environment
    # What install commands build depends on the commit; without them the environment key decides.
    commit = task.base_commit if spec.install else ""
    recipe = json.dumps([task.environment_key, spec.__dict__, commit], sort_keys=True, default=list)
    digest = hashlib.sha256(recipe.encode()).hexdigest()[:12]
    return cache_root() / "envs" / f"{safe_name(task.repo)}-{digest}"


def pip_cache_dir() -> Path:
    """Where pip keeps downloaded wheels for every prepared environment."""
    return Path(os.environ.get("GYM_SWE_PIP_CACHE") or cache_root() / "pip")


def is_prepared(task: SWETask) -> bool:
    root = environment_dir(task)
    return _ready(root).exists() and (root / METADATA).is_file()


def _ready(path: Path) -> Path:
    return path.with_name(path.name + ".ready")


def environment_variables(venv: Path, spec_env: dict[str, str] | None = None) -> dict[str, str]:
    """What commands need to use the prepared venv (after the spec's own variables)."""
    return {**(spec_env or {}), "PATH": f"{venv}/bin:{DEFAULT_PATH}", "VIRTUAL_ENV": str(venv)}


def prepare_environment(task: SWETask, source: RepoSource | None = None) -> PreparedEnvironment:
    """The task's prepared environment, built now if it is not there yet."""
    root = environment_dir(task)
    pristine = checkout(task, source)
    if not is_prepared(task):
        with file_lock(root.with_name(root.name + ".lock")):
            if not is_prepared(task):
                try:
                    _build(task, root, pristine)
                except BaseException:
                    shutil.rmtree(root, ignore_errors=True)
                    raise
                _ready(root).write_text(task.environment_key)
    meta = json.loads((root / METADATA).read_text())
    venv = root / "venv"
    binds = {str(venv): str(venv)}
    if meta["prefix"]:
        binds[meta["prefix"]] = meta["prefix"]
    return PreparedEnvironment(
        path=root,
        venv=venv,
        checkout=root / "testbed" if task.environment.install else pristine,
        binds=binds,
        variables=environment_variables(venv, task.environment.variables),
        python=".".join(map(str, meta["version"])),
    )


def _build(task: SWETask, root: Path, pristine: Path) -> None:
    spec = task.environment
    interpreter = find_interpreter(spec.python)
    shutil.rmtree(root, ignore_errors=True)
    venv = root / "venv"
    venv.mkdir(parents=True)
    cache = pip_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    logger.info("preparing the environment of %s (Python %s) in %s", task.instance_id,
                ".".join(map(str, interpreter.version)), root)  # fmt: skip
    requirements = list(spec.packages)
    pin = spec.pytest_requirement(interpreter.version[:2])
    if pin:
        requirements.append(pin)
    pip = f"{venv}/bin/python -m pip install --disable-pip-version-check --no-input --quiet"
    commands = [f"{shlex.quote(interpreter.executable)} -m venv {shlex.quote(str(venv))}",
                f"{pip} {' '.join(shlex.quote(r) for r in requirements)}"]  # fmt: skip
    rw_binds = {str(venv): str(venv), str(cache): str(cache)}
    testbed = root / "testbed"
    if spec.install:
        shutil.copytree(pristine, testbed, symlinks=True)
        rw_binds[str(testbed)] = "/testbed"
        commands += [f"cd /testbed && {command}" for command in spec.install]
    ro_binds = {interpreter.prefix: interpreter.prefix} if interpreter.prefix else {}
    env = {**environment_variables(venv, spec.variables), "PIP_CACHE_DIR": str(cache)}
    jail = LocalSandbox(workdir="/testbed", network=True, ro_binds=ro_binds, rw_binds=rw_binds, env=env)
    with jail:
        for command in commands:
            result = jail.exec(command, timeout=PREPARE_TIMEOUT)
            if not result.ok:
                raise TaskError(
                    f"preparing {task.instance_id} failed at `{command}` (exit {result.exit_code}"
                    f"{', timed out' if result.timed_out else ''}):\n{result.output[-3000:]}"
                )
    if spec.install:
        _ignore_generated(testbed)
    _write_metadata(root, interpreter, requirements)


def _ignore_generated(testbed: Path) -> None:
    """Tell git to ignore what the install added, so an episode's ``git status`` shows only its changes."""
    added = git("ls-files", "--others", "--exclude-standard", "--directory", "-z", cwd=testbed)
    paths = [path for path in added.split("\0") if path]
    if paths:
        exclude = testbed / ".git" / "info" / "exclude"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        lines = "".join(f"/{path}\n" for path in paths)
        with exclude.open("a") as handle:
            handle.write("# built by the task's install commands (gym_swe prepare)\n" + lines)


def _write_metadata(root: Path, interpreter: Interpreter, requirements: list[str]) -> None:
    meta = {
        "python": interpreter.executable,
        "version": list(interpreter.version),
        "prefix": interpreter.prefix,
        "requirements": requirements,
    }
    (root / METADATA).write_text(json.dumps(meta, indent=1))
