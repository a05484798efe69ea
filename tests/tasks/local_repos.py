"""Small git repositories built in the tests, laid out like the real projects of SWE-bench, with records.

``verpkg`` behaves like setuptools_scm projects (pytest, pylint): its version comes from
``SETUPTOOLS_SCM_PRETEND_VERSION`` at install time and lands in a generated ``src/verpkg/_version.py``
(ignored by git, as those projects do); ``pip install -e .`` leaves ``src/verpkg.egg-info`` in the checkout
and puts ``/testbed/src`` on the venv's path (a src layout, as flask's and pytest's); a code generator writes
``src/verpkg/_table.py`` the way in-place extension builds leave compiled modules. Its tests need all of it,
so a task only validates when what the install built is there in episodes and grading.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gym_swe.tasks.swe import load_swe_tasks

SETUP = """import os
from setuptools import setup

version = os.environ.get("SETUPTOOLS_SCM_PRETEND_VERSION", "0.1.dev1")
with open("src/verpkg/_version.py", "w") as handle:
    handle.write("__version__ = %r\\n" % version)
setup(name="verpkg", version=version, packages=["verpkg"], package_dir={"": "src"})
"""
GENERATOR = """# Writes src/verpkg/_table.py, as a build step writes a compiled module next to the sources.
with open("src/verpkg/_table.py", "w") as handle:
    handle.write("SQUARES = %r\\n" % [n * n for n in range(10)])
"""
INIT = """from verpkg._version import __version__


def add(a, b):
    return a - b
"""
TESTS = """import importlib.metadata
import socket

import verpkg
from verpkg._table import SQUARES


def test_version_from_the_record():
    assert verpkg.__version__ == "1.4"


def test_installed_metadata():
    assert importlib.metadata.version("verpkg") == "1.4"


def test_generated_module():
    assert SQUARES[3] == 9


def test_download():
    socket.create_connection(("pypi.org", 443), timeout=3).close()
"""
FIX_TEST = """import verpkg


def test_add():
    assert verpkg.add(2, 3) == 5
"""
INSTALL = ("python tools/generate.py", "pip install --no-build-isolation --no-deps -e .")
VERSION = "1.4"


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main", *args],
        cwd=cwd, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def diff_of(work: Path, files: dict[str, str]) -> str:
    """The diff that ``files`` make to ``work``'s HEAD (left uncommitted, then undone)."""
    write(work, files)
    git(work, "add", "-A")
    text = git(work, "diff", "--cached")
    git(work, "reset", "-q", "--hard")
    return text


def make_verpkg(root: Path) -> tuple[Path, str, str, str]:
    """A working repository of verpkg; returns it, its base commit, the gold patch and the test patch."""
    work = root / "verpkg-work"
    work.mkdir(parents=True)
    git(work, "init", "-q")
    write(work, {"setup.py": SETUP, "tools/generate.py": GENERATOR, "src/verpkg/__init__.py": INIT,
                 "tests/test_pkg.py": TESTS, ".gitignore": "src/verpkg/_version.py\n"})  # fmt: skip
    git(work, "add", "-A")
    git(work, "commit", "-qm", "verpkg")
    base = git(work, "rev-parse", "HEAD").strip()
    gold = diff_of(work, {"src/verpkg/__init__.py": INIT.replace("a - b", "a + b")})
    test_patch = diff_of(work, {"tests/test_fix.py": FIX_TEST})
    return work, base, gold, test_patch


def record(instance_id: str, base: str, gold: str, test_patch: str, **fields: Any) -> dict[str, Any]:
    """A SWE-bench-style record of verpkg (the valid task unless ``fields`` change it)."""
    row = {
        "instance_id": instance_id,
        "repo": "acme/verpkg",
        "base_commit": base,
        "environment_setup_commit": base,
        "version": VERSION,
        "problem_statement": "verpkg.add(2, 3) returns -1",
        "patch": gold,
        "test_patch": test_patch,
        "FAIL_TO_PASS": json.dumps(["tests/test_fix.py::test_add"]),
        "PASS_TO_PASS": json.dumps([
            "tests/test_pkg.py::test_version_from_the_record",
            "tests/test_pkg.py::test_installed_metadata",
            "tests/test_pkg.py::test_generated_module",
        ]),
        "environment": {"install": list(INSTALL)},
    }  # fmt: skip
    row.update(fields)
    return row


def write_records(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def user_pip_cache() -> str:
    """pip's downloads for prepared environments, kept across test runs (one per user)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return str(Path(base) / "gym_swe" / "pip")


@dataclass
class World:
    root: Path
    mirrors: Path
    """A directory of mirrors holding ``acme__verpkg.git``."""
    tasks: Path
    """Records: the valid task ``acme__verpkg-1``."""
    base: str
    gold: str
    test_patch: str


@contextmanager
def verpkg_world(root: Path) -> Iterator[World]:
    """verpkg's mirror and one valid record, with a gym_swe cache of its own (pip's downloads shared)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GYM_SWE_CACHE", str(root / "cache"))
        patch.setenv("GYM_SWE_PIP_CACHE", user_pip_cache())
        work, base, gold, test_patch = make_verpkg(root)
        mirrors = root / "mirrors"
        mirrors.mkdir()
        subprocess.run(["git", "clone", "-q", "--mirror", str(work), str(mirrors / "acme__verpkg.git")],
                       check=True)  # fmt: skip
        tasks = write_records(root / "tasks.jsonl", [record("acme__verpkg-1", base, gold, test_patch)])
        try:
            yield World(root, mirrors, tasks, base, gold, test_patch)
        finally:
            load_swe_tasks.cache_clear()
