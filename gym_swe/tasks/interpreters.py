"""Finding the Python a task's environment is made from: a version (``"3.9"``), a command, or a path.

A version is looked for as ``python3.9`` on the jail's PATH (the system's), then on this process's PATH, then
among pyenv's versions, then among uv's managed Pythons (``uv python find``), then installed by uv (``uv
python install``, which downloads python-build-standalone: it needs the network). A command name (the
default, ``python3``) is looked up the same way, the system's first. An interpreter whose installation is
outside ``/usr`` is invisible in a jail until its prefix is bound into it, so `Interpreter.prefix` says what
to bind.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gym_swe.errors import TaskError

VERSION = re.compile(r"(?:python)?(\d+)\.(\d+)(?:\.(\d+))?")
# What the jail shows of the host anyway (see sandbox/local.py): an interpreter under these needs no bind.
SYSTEM_PREFIXES = ("/usr/",)
PROBE = "import json, sys; print(json.dumps([sys.executable, sys.base_prefix, list(sys.version_info[:3])]))"


@dataclass(frozen=True)
class Interpreter:
    """A Python on this machine, as a jail must see it."""

    executable: str
    """Its real path (links resolved), the same inside the jail."""
    version: tuple[int, int, int]
    prefix: str | None
    """Its installation directory when that must be bound into jails (outside ``/usr``), else None."""


def find_interpreter(wanted: str) -> Interpreter:
    """The interpreter ``wanted`` names (an ``environment.python`` value); fails saying what to do."""
    version = VERSION.fullmatch(wanted)
    if "/" in wanted:
        path = Path(wanted).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise TaskError(
                f"environment.python {wanted!r} is not an executable file; give the path of an existing "
                'interpreter, a command on PATH, or a version such as "3.9"'
            )
        return probe(str(path.absolute()))
    if version is None or wanted.startswith("python"):
        for found in _on_paths(wanted):
            return _checked(probe(found), wanted, version)
        if version is None:
            raise TaskError(
                f'environment.python {wanted!r} is not on PATH; give a version such as "3.9", a command '
                "on PATH or the path of an interpreter"
            )
    assert version is not None
    major_minor = f"{version.group(1)}.{version.group(2)}"
    exact = major_minor + (f".{version.group(3)}" if version.group(3) else "")
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    managed = sorted(map(str, pyenv.glob(f"{exact}*/bin/python{major_minor}")), reverse=True)
    candidates = [*_on_paths(f"python{major_minor}"), *managed]
    for found in candidates:
        try:
            interpreter = probe(found)
        except TaskError:  # a pyenv shim for a version that is not active, say
            continue
        if _matches(interpreter, version):
            return interpreter
    uv = shutil.which("uv")
    tried = [f"no python{major_minor} on PATH or in {pyenv}"]
    if uv is not None:
        for command in (["python", "find", exact], ["python", "install", exact]):
            done = subprocess.run([uv, *command], capture_output=True, text=True, timeout=1800)
            if command[1] == "install" and done.returncode == 0:
                done = subprocess.run(
                    [uv, "python", "find", exact], capture_output=True, text=True, timeout=60
                )
            if done.returncode == 0 and done.stdout.strip():
                return _checked(probe(done.stdout.strip().splitlines()[-1]), wanted, version)
            tried.append(f"`uv {' '.join(command)}` failed: {(done.stderr or done.stdout).strip()[-300:]}")
    else:
        tried.append("uv is not installed (pip install uv), so no managed Python could be found or installed")
    raise TaskError(
        f"Python {exact} is not available here: {'; '.join(tried)}. Install it (uv python install {exact}, "
        f"or your system's python{major_minor} package), or set environment.python to the path of an "
        "interpreter"
    )


def _on_paths(command: str) -> list[str]:
    """``command`` on the system's PATH (what the jail shows), then on this process's."""
    from gym_swe.sandbox.local import DEFAULT_PATH

    found = [shutil.which(command, path=DEFAULT_PATH), shutil.which(command)]
    return list(dict.fromkeys(path for path in found if path))


def probe(executable: str) -> Interpreter:
    """Ask ``executable`` for its version and installation prefix."""
    try:
        done = subprocess.run([executable, "-I", "-c", PROBE], capture_output=True, text=True, timeout=120)
        executable, base_prefix, version = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError) as error:
        raise TaskError(f"{executable} does not run as a Python interpreter: {error}") from None
    real = os.path.realpath(executable)
    prefix = os.path.realpath(base_prefix)
    outside = not (real.startswith(SYSTEM_PREFIXES) and (prefix + "/").startswith(SYSTEM_PREFIXES))
    # The real file, as the interpreter knows itself: a shim, a venv's python or a link on PATH may point
    # where the jail shows nothing.
    return Interpreter(executable=real, version=tuple(version), prefix=prefix if outside else None)


def _matches(interpreter: Interpreter, version: re.Match[str]) -> bool:
    wanted = tuple(int(part) for part in version.groups() if part is not None)
    return interpreter.version[: len(wanted)] == wanted


def _checked(interpreter: Interpreter, wanted: str, version: re.Match[str] | None) -> Interpreter:
    if version is not None and not _matches(interpreter, version):
        found = ".".join(map(str, interpreter.version))
        raise TaskError(
            f"environment.python {wanted!r}: {interpreter.executable} is Python {found}; give the path of a "
            "matching interpreter"
        )
    return interpreter
