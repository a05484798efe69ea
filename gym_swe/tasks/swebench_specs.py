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
import runpy
import shlex
from collections.abc import Mapping
from importlib import metadata
from typing import Any

logger = logging.getLogger("gym_swe")
TABLE_FILES = ("swebench/harness/constants/python.py", "swebench/harness/constants.py")
TABLE_NAMES = ("MAP_REPO_VERSION_TO_SPECS_PY", "MAP_REPO_VERSION_TO_SPECS")
# Commands of pre_install that cannot run in a jail without root (system packages): left out, with a note.
SYSTEM_COMMANDS = ("apt-get", "apt ", "conda ", "sudo ")


@functools.lru_cache(maxsize=1)
def swebench_tables() -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
    """(specs by repository and version, requirements paths by repository) of the installed swebench, or
    None when it is not installed or ships no tables."""
    try:
        distribution = metadata.distribution("swebench")
    except metadata.PackageNotFoundError:
        return None
    for name in TABLE_FILES:
        path = distribution.locate_file(name)
        if not path.is_file():
            continue
        namespace = runpy.run_path(str(path))  # a module of constants: dicts and strings
        for table in TABLE_NAMES:
            if isinstance(namespace.get(table), Mapping):
                return namespace[table], namespace.get("MAP_REPO_TO_REQS_PATHS", {})
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
    specs, requirement_paths = tables
    spec = specs.get(repo, {}).get(version)
    if not isinstance(spec, Mapping):
        return None
    return environment_from_spec(spec, requirement_paths.get(repo, ()), f"{repo} {version}")


def environment_from_spec(spec: Mapping[str, Any], requirement_paths: Any, name: str) -> dict[str, Any]:
    """Translate one SWE-bench spec into gym_swe's ``environment`` fields (see `Environment`), keeping
    SWE-bench's order: requirements file, pip_packages, pre_install, install."""
    packages: list[str] = []
    install: list[str] = []
    pip_packages = [str(package) for package in spec.get("pip_packages") or ()]
    listed = spec.get("packages") or ""
    if listed == "requirements.txt":
        # The first requirements file the repository has, as SWE-bench reads it; pip_packages go after it.
        paths = " ".join(shlex.quote(path) for path in requirement_paths)
        install.append(
            f'for f in {paths}; do if [ -f "$f" ]; then python -m pip install -r "$f"; break; fi; done'
        )
        if pip_packages:
            install.append("python -m pip install " + " ".join(shlex.quote(p) for p in pip_packages))
    else:
        if listed == "environment.yml":
            # Logged quietly: loading a whole dataset would print it for every such repository.
            logger.debug("%s: swebench sets it up from a conda environment.yml, which gym_swe cannot use; "
                         "give the record an 'environment' field", name)  # fmt: skip
        elif listed:
            packages += listed.split()
        packages += pip_packages
    for command in spec.get("pre_install") or ():
        if command.lstrip().startswith(SYSTEM_COMMANDS):
            logger.debug("%s: left out pre_install command %r (needs root or conda)", name, command)
        else:
            install.append(command)
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
