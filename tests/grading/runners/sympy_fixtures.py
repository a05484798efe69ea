"""Real sympy releases for the sympy runner's tests: the sdist from PyPI, a Python 3.9 with mpmath (what
SWE-bench runs sympy with), and a small git repository made of the release's own files.

Downloads and the environment are cached under ``~/.cache/gym_swe/fixtures`` (``GYM_SWE_FIXTURES`` moves it)
and built once, under a lock (the suite's xdist workers may build at once); where a download fails or no Python
3.9 is installed, the test that needs it skips and says why.

sympy's sdists ship its runner (``sympy/testing/runtests.py``, ``sympy/utilities/runtests.py`` before 1.6) but not
``bin/test``, the script SWE-bench calls, which only parses its options and calls ``sympy.test``: the
repository gets a stand-in for it here (`BIN_TEST`), with the same options SWE-bench passes and the same
``get_sympy.path_hack`` by which it puts the repository first on ``sys.path``.
"""

from __future__ import annotations

import fcntl
import glob
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

import pytest

CACHE = Path(os.environ.get("GYM_SWE_FIXTURES") or Path.home() / ".cache" / "gym_swe" / "fixtures")
MPMATH = "1.3.0"

BIN_TEST = '''\
#!/usr/bin/env python
"""A stand-in for sympy's bin/test (its sdists do not ship it): its options, then sympy.test."""
import os
import sys
from optparse import OptionParser

from get_sympy import path_hack

path_hack()
parser = OptionParser()
parser.add_option("-v", "--verbose", action="store_true", dest="verbose", default=False)
parser.add_option("-C", "--no-cache", dest="cache", action="store_false", default=True)
parser.add_option("--slow", action="store_true", dest="slow", default=False)
options, args = parser.parse_args()
if not options.cache:
    os.environ["SYMPY_USE_CACHE"] = "no"

import sympy

ok = sympy.test(*args, verbose=options.verbose, slow=options.slow)
sys.exit(0 if ok else 1)
'''
GET_SYMPY = """\
import os
import sys


def path_hack():
    sympy_dir = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.path.insert(0, sympy_dir)
    return sympy_dir
"""


@contextmanager
def _locked(name: str) -> Iterator[None]:
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _download(pattern: str, *pip_args: str) -> Path:
    """The cached file matching ``pattern``, downloaded with ``pip download`` first where it is not there."""
    with _locked("download"):
        found = sorted(CACHE.glob(pattern))
        if not found:
            run = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(CACHE), *pip_args],
                capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            found = sorted(CACHE.glob(pattern))
            if run.returncode != 0 or not found:
                errors = [line for line in run.stderr.splitlines() if line.startswith("ERROR")]
                why = (errors[-1] if errors else run.stderr.strip())[-300:]
                pytest.skip(f"could not download {' '.join(pip_args)}: {why}")
    return found[0]


def sympy_sdist(version: str) -> Path:
    return _download(f"sympy-{version}.tar.gz", "--no-binary", ":all:", f"sympy=={version}")


def python39() -> str:
    """A Python 3.9 interpreter (SWE-bench's for every sympy version), or a skip."""
    candidates = sorted(glob.glob(str(Path.home() / ".pyenv" / "versions" / "3.9*" / "bin" / "python")))
    candidates += [found for found in [shutil.which("python3.9")] if found]
    for candidate in candidates:
        run = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2])"],
                             capture_output=True, text=True)  # fmt: skip
        if run.returncode == 0 and run.stdout.strip() == "(3, 9)":
            return candidate
    pytest.skip("no Python 3.9 here (SWE-bench runs sympy's tests with 3.9)")


def runner_venv() -> Path:
    """A Python 3.9 virtual environment with mpmath, sympy's one runtime dependency (its bin directory)."""
    venv = CACHE / f"sympy-py3.9-mpmath{MPMATH}"
    ready = venv / ".ready"
    if ready.exists():
        return venv / "bin"
    wheel = _download(f"mpmath-{MPMATH}-*.whl", f"mpmath=={MPMATH}")
    python = python39()
    with _locked("venv"):
        if not ready.exists():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([python, "-m", "venv", str(venv)], check=True, capture_output=True)
            subprocess.run(
                [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
                 str(wheel)],
                check=True, capture_output=True,
            )  # fmt: skip
            ready.touch()
    return venv / "bin"


def sympy_repository(
    version: str, destination: Path, keep: tuple[str, ...], files: Mapping[str, str]
) -> Path:
    """A git repository at ``destination``: release ``version``'s ``sympy`` package without its tests but for
    the test files ``keep``, a stand-in ``bin/test``, and ``files`` (path -> text) of the test's own."""
    sdist = sympy_sdist(version)
    top = f"sympy-{version}/"
    with tarfile.open(sdist) as archive:
        members = []
        for member in archive.getmembers():
            if not member.name.startswith(top + "sympy/") or not (member.isfile() or member.isdir()):
                continue
            path = member.name[len(top) :]
            parts = PurePosixPath(path).parts
            if "tests" in parts[:-1] and path not in keep:
                continue
            member.name = path
            members.append(member)
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        archive.extractall(destination, members=members, **safe)
    for path, text in {"bin/test": BIN_TEST, "bin/get_sympy.py": GET_SYMPY, **files}.items():
        target = destination / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    (destination / "bin" / "test").chmod(0o755)
    git = ["git", "-c", "user.name=gym_swe", "-c", "user.email=gym_swe@example.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=destination, check=True)
    subprocess.run([*git, "add", "-A"], cwd=destination, check=True)
    subprocess.run([*git, "commit", "-q", "-m", f"sympy {version}"], cwd=destination, check=True)
    return destination
