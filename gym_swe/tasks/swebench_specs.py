"""Task environments from the `swebench` package's per-repository setup tables, where it is installed.

SWE-bench keeps how each (repository, version) is set up in ``MAP_REPO_VERSION_TO_SPECS`` (swebench 4.x:
``swebench/harness/constants/python.py``; earlier: ``swebench/harness/constants.py``): the Python version, pip
packages, a requirements file, pre-install and install commands, and ``export`` lines run before the tests.
A record without an ``environment`` field gets its environment from there, so nobody writes those tables
again by hand. swebench 5 no longer ships them (it builds from prebuilt images), and importing swebench pulls
docker, modal and datasets in: so the table file is read on its own, without importing the package, and
swebench stays out of gym_swe's dependencies (``pip install --no-deps "swebench<5"`` is enough).
"""

from __future__ import annotations

import copy
import functools
import logging
import os
import re
import runpy
import shlex
from collections.abc import Mapping
from importlib import metadata
from typing import Any, NamedTuple

from gym_swe.tasks.conda_env import JAIL_PATH as CONDA_ENV_JAIL_PATH
from gym_swe.tasks.conda_env import SETUP_COMMIT_TREE

logger = logging.getLogger("gym_swe")
TABLE_FILES = ("swebench/harness/constants/python.py", "swebench/harness/constants.py")
TABLE_NAMES = ("MAP_REPO_VERSION_TO_SPECS_PY", "MAP_REPO_VERSION_TO_SPECS")
# Repositories whose install builds extensions (C, C++, Cython) in place, at the versions SWE-bench holds
# (setuptools builds): a fix to one of their compiled sources is built again before the tests.
COMPILED_REPOSITORIES = {
    "astropy/astropy": ("python setup.py build_ext --inplace",),
    "scikit-learn/scikit-learn": ("python setup.py build_ext --inplace",),
    "matplotlib/matplotlib": ("python setup.py build_ext --inplace",),
}

SWEBENCH_IMAGES_DATE = "2025-01-31"
"""The index date of environments from swebench's tables (`Environment.index_date`): SWE-bench's
per-instance images were on Docker Hub by 2025-02-04 (SWE-bench issue #311), built with what PyPI held
then; releases since (sparse 0.17, docutils 0.22) are not in the task's own image."""
REQUIREMENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")
# Commands of pre_install that cannot run in a jail without root (system packages): left out, with a note.
SYSTEM_COMMANDS = ("apt-get", "apt ", "conda ", "sudo ", "locale-gen")
SYSTEM_FILES = "> /etc/"
"""A pre_install command that writes here needs root too (Django's ``echo ... > /etc/locale.gen``); the
locales a task's variables name are compiled into its venv instead (`environments.locale_commands`)."""
# SWE-bench's tables leave many dependencies unpinned, as they were on PyPI when its environments were built
# (2024). Releases since then that break a repository's older versions get a pin here, added to the
# environment's packages (installed before the repository, so its own install keeps them): by repository,
# (the first version that does not need it, the pin, why).
LATER_RELEASES: dict[str, tuple[tuple[tuple[int, ...], str, str], ...]] = {
    "sphinx-doc/sphinx": (
        ((4, 0), "docutils<0.22",
         "docutils 0.22 (2025) dropped docutils.utils.roman, which sphinx.writers.latex imports before 4.0, "
         "where setup.py leaves docutils unbounded"),
    ),
    "scikit-learn/scikit-learn": (
        ((1, 3), "cython<3",
         "SWE-bench's conda environments of 0.20-0.22 (Python 3.6) have Cython 0.29, conda-forge's last for "
         "3.6; PyPI's is 3.0.12, which refuses their implicit relative cimports ('from _tree cimport Node')"),
    ),
}  # fmt: skip


class SwebenchTables(NamedTuple):
    """What gym_swe reads from swebench's table file."""

    specs: Mapping[str, Any]
    """Specs by repository and version (``MAP_REPO_VERSION_TO_SPECS``)."""
    requirement_paths: Mapping[str, Any]
    """Where each repository keeps its requirements file (``MAP_REPO_TO_REQS_PATHS``)."""
    environment_paths: Mapping[str, Any]
    """Where each repository keeps its conda environment file (``MAP_REPO_TO_ENV_YML_PATHS``)."""


@functools.lru_cache(maxsize=1)
def swebench_tables() -> SwebenchTables | None:
    """The tables of the installed swebench, or None when it is not installed or ships none."""
    try:
        distribution = metadata.distribution("swebench")
    except metadata.PackageNotFoundError:
        return None
    for name in TABLE_FILES:
        path = str(distribution.locate_file(name))  # an installed distribution's file: a path on disk
        if not os.path.isfile(path):
            continue
        namespace = runpy.run_path(path)  # a module of constants: dicts and strings
        for table in TABLE_NAMES:
            if isinstance(namespace.get(table), Mapping):
                return SwebenchTables(
                    namespace[table],
                    namespace.get("MAP_REPO_TO_REQS_PATHS", {}),
                    namespace.get("MAP_REPO_TO_ENV_YML_PATHS", {}),
                )
    return None


def swebench_environment(repo: str, version: str) -> dict[str, Any] | None:
    """An ``environment`` value for a record of ``repo`` at ``version`` from swebench's tables; None when
    swebench (with tables) is not installed or has no entry for it."""
    found = _swebench_environment(repo, version)
    return copy.deepcopy(found) if found is not None else None


@functools.lru_cache(maxsize=1024)  # once per repository and version: their notes are logged once
def _swebench_environment(repo: str, version: str) -> dict[str, Any] | None:
    tables = swebench_tables()
    if tables is None or not version:
        return None
    spec = tables.specs.get(repo, {}).get(version)
    if not isinstance(spec, Mapping):
        return None
    environment = environment_from_spec(spec, tables.requirement_paths.get(repo, ()), f"{repo} {version}",
                                        tables.environment_paths.get(repo, ()))  # fmt: skip
    environment["packages"] += later_release_pins(repo, version)
    environment["index_date"] = SWEBENCH_IMAGES_DATE
    if repo in COMPILED_REPOSITORIES:
        environment["rebuild"] = list(COMPILED_REPOSITORIES[repo])
    return environment


def _requirement_name(requirement: str) -> str:
    """The normalized project name of a pip requirement (``Cython>=0.28`` -> ``cython``)."""
    name = REQUIREMENT_NAME.match(requirement.strip())
    return re.sub(r"[-_.]+", "-", name.group(0)).lower() if name else requirement.strip().lower()


def _pins(requirement: str) -> bool:
    """Whether a pip requirement says more than a name (a version, extras, a marker, a URL)."""
    return bool(REQUIREMENT_NAME.sub("", requirement.strip()).strip())


def later_release_pins(repo: str, version: str) -> list[str]:
    """The pins of `LATER_RELEASES` that apply to ``repo`` at ``version``."""
    try:
        wanted = tuple(int(part) for part in version.split("."))
    except ValueError:
        return []
    return [pin for before, pin, _ in LATER_RELEASES.get(repo, ()) if wanted < before]


def environment_from_spec(
    spec: Mapping[str, Any], requirement_paths: Any, name: str, environment_paths: Any = ()
) -> dict[str, Any]:
    """Translate one SWE-bench spec into gym_swe's ``environment`` fields (see `Environment`), keeping
    SWE-bench's order: requirements file or conda environment file, pip_packages, pre_install, install.
    ``requirement_paths`` and ``environment_paths``: where the repository keeps its requirements file and
    its conda environment file (swebench's ``MAP_REPO_TO_REQS_PATHS`` and ``MAP_REPO_TO_ENV_YML_PATHS``)."""
    packages: list[str] = []
    install: list[str] = []
    pip_packages = [str(package) for package in spec.get("pip_packages") or ()]
    listed = spec.get("packages") or ""
    if listed == "requirements.txt":
        # The first requirements file the repository has, as SWE-bench reads it; pip_packages go after it.
        # pip's failure is the command's (`|| exit`): a loop's status is its last command's, and `break`'s
        # is 0, so a requirement that failed to install (bcrypt built from source for want of Rust, under
        # Python 3.6's pip 18.1: Django 3.x) left a half-installed venv that prepare called ready.
        paths = " ".join(shlex.quote(path) for path in requirement_paths)
        install.append(
            f'for f in {paths}; do if [ -f "$f" ]; then python -m pip install -r "$f" || exit $?; break; fi; '
            "done"
        )
        if pip_packages:
            install.append("python -m pip install " + " ".join(shlex.quote(p) for p in pip_packages))
    elif listed == "environment.yml":
        # SWE-bench makes a conda env from the repository's environment file at environment_setup_commit,
        # then pip-installs pip_packages over it. Here that file (else the checkout's) is translated into pip
        # requirements (`conda_env`) and installed in one pip run with the pins, so that the resolver keeps
        # the pins and picks versions of the rest that go with them. The pins also go into the venv first,
        # as `packages` (a pinned pytest among them stands in for gym_swe's own).
        paths = " ".join(shlex.quote(f"{SETUP_COMMIT_TREE}/{path}") for path in environment_paths)
        paths += "".join(" " + shlex.quote(path) for path in environment_paths)
        pins = "".join(" " + shlex.quote(p) for p in pip_packages)
        install.append(
            f"python {CONDA_ENV_JAIL_PATH} {paths} > /tmp/conda-requirements.txt && "
            f"python -m pip install -r /tmp/conda-requirements.txt{pins}"
        )
        packages += pip_packages
    else:
        # SWE-bench installs these with conda, then pip_packages over them, and pip changes what conda put
        # there only where its requirement says which version: one pip run here takes each name once (old
        # pips refuse `numpy numpy==1.19.2` as a double requirement), pip's where it pins, else conda's
        # (scikit-learn 1.3 lists `'numpy==1.19.2'`, then pip_packages `numpy`). The list is shell words.
        conda = list(dict.fromkeys(shlex.split(listed)))
        pinned = {_requirement_name(package) for package in pip_packages if _pins(package)}
        conda = [package for package in conda if _requirement_name(package) not in pinned]
        taken = {_requirement_name(package) for package in conda}
        packages += conda
        packages += [
            package for package in pip_packages if _pins(package) or _requirement_name(package) not in taken
        ]
    kept = []
    for command in spec.get("pre_install") or ():
        if command.lstrip().startswith(SYSTEM_COMMANDS) or SYSTEM_FILES in command:
            logger.debug("%s: left out pre_install command %r (needs root or conda)", name, command)
        else:
            kept.append(command)
    if kept:  # one shell, as SWE-bench's setup script runs them: matplotlib's set QHULL_URL, then wget it
        install.append(" && ".join(kept))
    if spec.get("install"):
        install.append(spec["install"])
    env = {}
    for command in spec.get("eval_commands") or ():
        words = shlex.split(command)
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            key, _, value = words[1].partition("=")
            env[key] = value
    environment: dict[str, Any] = {"packages": packages, "install": install, "env": env}
    if spec.get("python"):
        environment["python"] = str(spec["python"])
    return environment
