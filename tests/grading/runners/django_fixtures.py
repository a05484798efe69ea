"""Real Django releases for the Django runner's tests: the sdist from PyPI (its ``tests/runtests.py`` and test
apps), a venv of the release's python with its dependencies and the release itself on ``sys.path`` (as an
editable install has it), and small git workspaces made of a few of its test apps plus modules of ours.
Downloads and venvs are kept under ``~/.cache/gym_swe/fixtures`` (``$XDG_CACHE_HOME`` respected)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from gym_swe.grading.outcome_stream import RECORDS_FD_VARIABLE

PYTHONS = Path("/root/.pyenv/versions")


@dataclass(frozen=True)
class Release:
    version: str
    python: str
    """The pyenv version whose python runs it."""
    requires: tuple[str, ...]


RELEASES = {
    "1.11.29": Release("1.11.29", "3.6.15", ("pytz==2021.1",)),
    "3.0.14": Release(
        "3.0.14", "3.6.15", ("pytz==2021.1", "sqlparse==0.4.1", "asgiref==3.3.4", "typing-extensions==4.1.1")
    ),
    "4.2.16": Release("4.2.16", "3.8.18", ("asgiref==3.8.1", "sqlparse==0.5.0", "backports.zoneinfo==0.2.1")),
    "5.0.14": Release("5.0.14", "3.11.7", ("asgiref==3.8.1", "sqlparse==0.5.0")),
}


@dataclass(frozen=True)
class Installed:
    source: Path
    """The extracted sdist (``django/``, ``tests/``)."""
    python: Path
    """The venv's python, with the dependencies and ``source`` on its path."""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gym_swe" / "fixtures"


def installed(version: str) -> Installed:
    """The release ``version`` of `RELEASES`, downloaded and installed once; skips the test where it cannot
    be had (no python of its version here, or no package index)."""
    release = RELEASES[version]
    base_python = PYTHONS / release.python / "bin" / "python"
    if not base_python.exists():
        pytest.skip(f"no Python {release.python} here ({base_python}) to run Django {version}")
    root = cache_dir() / f"django-{version}"
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f"django-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time (another session, another worker)
        return _install(release, root, base_python)


def _install(release: Release, root: Path, base_python: Path) -> Installed:
    version = release.version
    source = root / f"Django-{version}"
    python = root / "venv" / "bin" / "python"
    done = root / ".done"
    if done.exists():
        return Installed(source, python)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    download = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
         f"django=={version}", "-d", str(root)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    archives = list(root.glob("*.tar.gz"))
    if download.returncode != 0 or not archives:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"cannot download Django {version}'s sdist: {download.stderr.strip()[-300:]}")
    with tarfile.open(archives[0]) as archive:
        archive.extractall(root)
    subprocess.run([str(base_python), "-m", "venv", str(root / "venv")], check=True, timeout=300)
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *release.requires],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if install.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"cannot install Django {version}'s dependencies: {install.stderr.strip()[-300:]}")
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "django-source.pth").write_text(str(source) + "\n")  # as an editable install would
    done.write_text("")
    return Installed(source, python)


BASE_FILES = ("tests/runtests.py", "tests/test_sqlite.py", "tests/urls.py")


def workspace(root: Path, release: Installed, apps: tuple[str, ...], extra: dict[str, str]) -> Path:
    """A git repository at ``root`` holding the release's ``runtests.py`` and settings, its test apps
    ``apps`` (directories under ``tests/``) and the files ``extra`` (path -> text)."""
    root.mkdir(parents=True)
    for name in BASE_FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(release.source / name, root / name)
    for app in apps:
        shutil.copytree(release.source / "tests" / app, root / "tests" / app)
    for name, text in extra.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*git, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(root), "commit", "-qm", "base"], check=True)
    return root


def run_shim(
    root: Path, release: Installed, command: str, driver_dir: Path, environment: dict[str, str]
) -> tuple[int, bytes, str]:
    """Run ``command`` (the runner's, its ``python`` the release's venv) in a shell with the records
    descriptor named by ``GYM_SWE_RECORDS_FD`` and the runner's ``environment``, as the grading sandbox does:
    exit status, stream, output."""
    stream_file = driver_dir / "stream.jsonl"
    with open(stream_file, "wb") as stream:
        completed = subprocess.run(
            ["bash", "-c", command],
            cwd=root, capture_output=True, text=True, timeout=300, pass_fds=(stream.fileno(),),
            env={"PATH": f"{release.python.parent}:/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1",
                 "HOME": str(driver_dir), "LANG": "C.UTF-8", RECORDS_FD_VARIABLE: str(stream.fileno()), **environment},
        )  # fmt: skip
    return completed.returncode, stream_file.read_bytes(), completed.stdout + completed.stderr
