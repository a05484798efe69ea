"""Prepared environments for SWE tasks in local sandboxes: a virtual environment and a prepared checkout.

``prepare_environment`` builds them once (network allowed, here only), in a jail:

- the interpreter ``environment.python`` names (`interpreters.find_interpreter`); one installed outside
  ``/usr`` has its prefix bound read-only into every jail of the task: here, in episodes and in grading;
- a venv made from it *without* the system's site-packages (its pip upgraded first under Python < 3.7, whose
  bundled pip takes no manylinux2014 wheel: `OLD_PIP_BEFORE`), holding exactly the task's requirements and a
  pinned pytest (`Environment.pytest_requirement`), except where the repository *is* pytest (`is_pytest`)
  and its install commands put it in the venv: its own install is then its runner, and a pinned pytest
  beside its old pluggy could not be installed anyway; pip's downloads are cached under the gym_swe cache
  (``GYM_SWE_PIP_CACHE`` to put them elsewhere), so a second environment costs no download;
- the task's install commands, run in a copy of the pristine checkout that is kept: what they build
  (setuptools_scm's ``_version.py``, ``*.egg-info``, in-place extensions) is part of the *prepared
  checkout*, which episodes and grading use as their copy-on-write lower layer. The agent's changes are
  taken against that same tree, so generated files are never the agent's changes (and ``*.egg-info`` stays a
  protected path). Git is told to ignore the generated files (``.git/info/exclude``) so ``git status`` in an
  episode shows the agent's work only. They can run `gym_swe.tasks.conda_env`, which the jail shows at its
  ``JAIL_PATH``, to read a conda environment file as pip requirements, and read the repository's files at
  the record's environment_setup_commit at ``SETUP_COMMIT_TREE`` (read-only; there when a command names it).

Tasks without install commands share one venv per environment key and use their pristine checkout as it is;
with install commands, what is built depends on the commit, so each task gets its own. Episodes bind the venv
read-only at the same path and put its ``bin`` first on PATH, so reset never copies it.
"""

from __future__ import annotations

import configparser
import contextlib
import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_swe.errors import TaskError
from gym_swe.sandbox.local import DEFAULT_PATH, LocalSandbox
from gym_swe.tasks.conda_env import JAIL_PATH as CONDA_ENV_JAIL_PATH
from gym_swe.tasks.conda_env import SETUP_COMMIT_TREE
from gym_swe.tasks.dated_index import DatedIndex, exact_pins, honoured, parse_date
from gym_swe.tasks.interpreters import Interpreter, find_interpreter
from gym_swe.tasks.repos import RepoSource, cache_root, checkout, file_lock, mirror, safe_name, source_of
from gym_swe.tasks.swe import Environment, SWETask

logger = logging.getLogger("gym_swe")
PREPARE_TIMEOUT = 3600
METADATA = "environment.json"
CONDA_ENV_SCRIPT = Path(__file__).with_name("conda_env.py")
# A project's declared name without running anything: setup.py's literal ``name="..."`` (older projects
# declare it nowhere else), and pyproject.toml's [project] name where tomllib is missing (Python 3.10).
SETUP_PY_NAME = re.compile(r"""\bname\s*=\s*['"]([A-Za-z0-9][A-Za-z0-9._-]*)['"]""")
BUILD_REQUIRES = re.compile(r"^\[build-system\][^\[]*?^requires\s*=\s*\[([^\]]*)\]", re.MULTILINE | re.DOTALL)
PYPROJECT_NAME = re.compile(r"""^\[project\][^\[]*?^name\s*=\s*['"]([^'"]+)['"]""", re.MULTILINE | re.DOTALL)


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
    fields = {key: value for key, value in spec.__dict__.items() if key != "index_date" or value}
    recipe = json.dumps([task.environment_key, fields, commit], sort_keys=True, default=list)
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
    """What commands need to use the prepared venv (after the spec's own variables); ``LOCPATH`` where the
    venv holds locales compiled for the task (`locale_commands`)."""
    variables = {**(spec_env or {}), "PATH": f"{venv}/bin:{DEFAULT_PATH}", "VIRTUAL_ENV": str(venv)}
    if (venv / LOCALES).is_dir():
        variables["LOCPATH"] = str(venv / LOCALES)
    return variables


LOCALES = "locales"
"""Where in a task's venv the locales its variables name, and this host lacks, are compiled."""
UTF8_LOCALE = re.compile(r"^(?P<name>[a-z]{2,3}_[A-Z]{2})\.(?:UTF-8|utf8)$")


OLD_PIP_BEFORE = (3, 7)
"""Pythons before this one bundle a pip older than manylinux2014 (Python 3.6's ensurepip: pip 18.1; the
tag came with pip 19.3), which takes none of those wheels and builds the sdist instead: for Django 3.0-3.2's
``tests/requirements/py3.txt`` under SWE-bench's Python 3.6, bcrypt 4.0.1 (needs Rust), pylibmc (needs
libmemcached's headers), Pillow 8.4 (a compiler and image libraries), so the install fails. SWE-bench's
environments are conda's, whose Python 3.6 comes with pip 21.2. Such a venv gets the newest pip its Python
supports first (pip honours Requires-Python: 21.3.1 on 3.6, 20.3.4 on 3.5); that pip also takes a name
given twice and has ``--no-use-pep517``, which SWE-bench's scikit-learn 0.20-0.22 install uses (18.1 has
neither)."""


def pip_upgrade_commands(pip: str, version: tuple[int, ...]) -> list[str]:
    """The command that upgrades the venv's pip (``pip``: its ``pip install`` command) where its Python
    bundles one too old for today's wheels (`OLD_PIP_BEFORE`); none otherwise."""
    return [f"{pip} --upgrade pip"] if tuple(version[:2]) < OLD_PIP_BEFORE else []


def locale_commands(venv: Path, spec_env: dict[str, str]) -> list[str]:
    """Commands that compile the UTF-8 locales the task's variables name (``LANG=en_US.UTF-8``: SWE-bench's
    Django environments) and the host does not have, into the venv, where glibc finds them by ``LOCPATH``:
    without one, Python takes ASCII for a missing locale's encoding, and reading a UTF-8 file fails.
    SWE-bench's images run ``locale-gen`` as root; a jail cannot, ``localedef`` into a directory can."""
    have = subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout.split()
    have_names = {name.replace("utf8", "UTF-8") for name in have}
    commands = []
    for value in sorted({spec_env[key] for key in ("LANG", "LC_ALL", "LC_CTYPE") if key in spec_env}):
        found = UTF8_LOCALE.match(value)
        if found and value not in have_names and value.replace("UTF-8", "utf8") not in have:
            target = shlex.quote(str(venv / LOCALES / value))
            commands.append(f"mkdir -p {target} && localedef -i {found['name']} -f UTF-8 {target}")
    return commands


def prepare_environment(task: SWETask, source: RepoSource | None = None) -> PreparedEnvironment:
    """The task's prepared environment, built now if it is not there yet."""
    root = environment_dir(task)
    pristine = checkout(task, source)
    if not is_prepared(task):
        with file_lock(root.with_name(root.name + ".lock")):
            if not is_prepared(task):
                try:
                    _build(task, root, pristine, source_of(task, source))
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


def _build(task: SWETask, root: Path, pristine: Path, source: RepoSource) -> None:
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
    if pin and own_runner(task, pristine):
        logger.info("%s: the repository is pytest, installed by the task's own commands: no %s is added",
                    task.instance_id, pin)  # fmt: skip
        pin = None
    if pin:
        requirements.append(pin)
    pip = f"{venv}/bin/python -m pip install --disable-pip-version-check --no-input --quiet"
    commands = [f"{shlex.quote(interpreter.executable)} -m venv {shlex.quote(str(venv))}",
                *locale_commands(venv, spec.variables),
                *pip_upgrade_commands(pip, interpreter.version),
                f"{pip} {' '.join(shlex.quote(r) for r in requirements)}"]  # fmt: skip
    rw_binds = {str(venv): str(venv), str(cache): str(cache)}
    testbed = root / "testbed"
    if spec.install:
        shutil.copytree(pristine, testbed, symlinks=True)
        rw_binds[str(testbed)] = "/testbed"
        commands += [f"cd /testbed && {command}" for command in spec.install]
        if spec.rebuild:
            commands += build_requirement_commands(f"{venv}/bin/python", build_requirements(pristine))
    ro_binds = {interpreter.prefix: interpreter.prefix} if interpreter.prefix else {}
    ro_binds[str(CONDA_ENV_SCRIPT)] = CONDA_ENV_JAIL_PATH  # for install commands made from a conda file
    if any(SETUP_COMMIT_TREE in command for command in spec.install):
        ro_binds[str(setup_commit_tree(task, root, source))] = SETUP_COMMIT_TREE
    env = {**environment_variables(venv, spec.variables), "PIP_CACHE_DIR": str(cache)}
    if locale_commands(venv, spec.variables):  # the install commands run with them too
        env["LOCPATH"] = str(venv / LOCALES)
    with contextlib.ExitStack() as stack:
        index = None
        dated = dated_index(spec, requirements)
        if dated is not None:  # the jail shares the host's network: it reaches the index on the loopback
            index = stack.enter_context(dated)
            env.update(index.pip_variables())
            logger.info("%s: pip resolves against the index as of %s", task.instance_id, spec.index_date)
        jail = stack.enter_context(
            LocalSandbox(workdir="/testbed", network=True, ro_binds=ro_binds, rw_binds=rw_binds, env=env)
        )
        for command in commands:
            result = jail.exec(command, timeout=PREPARE_TIMEOUT)
            if index is not None:
                honoured(index)
            if not result.ok:
                cause = f": {failure_line(result.output)}" if result.output.strip() else ""
                as_of = f" (pip resolved as of {spec.index_date}: environment.index_date)" if index else ""
                raise TaskError(
                    f"preparing {task.instance_id} failed{cause}{as_of} (exit {result.exit_code}"
                    f"{', timed out' if result.timed_out else ''}, at `{command}`):\n{result.output[-3000:]}"
                )
    if spec.install:
        _settle_install(testbed)
    shutil.rmtree(root / "setup-commit", ignore_errors=True)
    _write_metadata(root, interpreter, requirements)


def failure_line(output: str, limit: int = 160) -> str:
    """The line of a failed command's output that says why, for the first line of its error (whose command
    line can be long): pip's last ``ERROR:`` line, else the last line naming an error, else the last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    line = next((line for line in reversed(lines) if line.startswith("ERROR:")), None) or next(
        (line for line in reversed(lines) if re.search(r"error|no such option", line, re.IGNORECASE)),
        lines[-1] if lines else "",
    )
    return line if len(line) <= limit else line[: limit - 1] + "…"


def dated_index(spec: Environment, requirements: list[str]) -> DatedIndex | None:
    """The package index as of ``spec.index_date`` for a prepare's pip commands, ``requirements`` and the
    install commands' exact pins served whatever their date (not started); None without a date."""
    if not spec.index_date:
        return None
    return DatedIndex(parse_date(spec.index_date), exact_pins([*requirements, *_words(spec.install)]))


def _words(commands: tuple[str, ...]) -> list[str]:
    """The shell words of ``commands`` (a requirement pinned on an install command's line counts as one)."""
    words = []
    for command in commands:
        try:
            words += shlex.split(command)
        except ValueError:  # an unbalanced quote: its plain words still count
            words += command.split()
    return words


def setup_commit_tree(task: SWETask, root: Path, source: RepoSource) -> Path:
    """The repository's files at the record's environment_setup_commit (SWE-bench reads a version's
    requirements and conda files there; they may not exist yet at an older base_commit), for install
    commands that read them at `SETUP_COMMIT_TREE`; removed once the environment is built. Without an
    environment_setup_commit, the base commit's files."""
    tree = root / "setup-commit"
    tree.mkdir(parents=True, exist_ok=True)
    commit = task.environment_setup_commit or task.base_commit
    origin = mirror(task.repo, source)
    try:
        archive = subprocess.run(["git", "--git-dir", str(origin), "archive", "--format=tar", commit],
                                 capture_output=True, check=True).stdout  # fmt: skip
    except subprocess.CalledProcessError as error:
        raise TaskError(
            f"{task.instance_id}: its environment_setup_commit {commit} is not in the mirror of {task.repo} "
            f"({origin}): update the mirror (git fetch) or check the record. git said: "
            f"{error.stderr.decode(errors='replace').strip()[-500:]}"
        ) from None
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, capture_output=True, check=True)
    return tree


def build_requirements(tree: Path) -> list[str]:
    """What the project at ``tree`` says its build needs (pyproject.toml's ``[build-system] requires``), read
    without running anything; [] when it says nothing."""
    try:
        text = (tree / "pyproject.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    if sys.version_info >= (3, 11):
        import tomllib

        try:
            requires = tomllib.loads(text).get("build-system", {}).get("requires", [])
        except (ValueError, AttributeError):
            return []
        return [str(item) for item in requires] if isinstance(requires, list) else []
    found = BUILD_REQUIRES.search(text)
    return re.findall(r"""['"]([^'"]+)['"]""", found.group(1)) if found else []


def build_requirement_commands(python: str, requirements: list[str]) -> list[str]:
    """The command that puts the build requirements of a project whose environment rebuilds it
    (`Environment.rebuild`) into its venv (``python``) after its install: pip's isolated build had them
    and threw them away, and the rebuild in the grading sandbox (``setup.py build_ext --inplace``, offline)
    imports them (astropy's setup.py: extension_helpers, Cython). What the venv holds keeps its version: a
    requirement that would change one (astropy's oldest-supported-numpy pins an older numpy) is left out,
    with a word."""
    if not requirements:
        return []
    pip, installed = f"{python} -m pip --disable-pip-version-check", "/tmp/gym_swe-installed.txt"
    quoted = " ".join(shlex.quote(requirement) for requirement in requirements)
    return [
        f"cd /testbed && {pip} list --format=freeze > {installed} && for requirement in {quoted}; do "
        f'{pip} install --no-input --quiet -c {installed} "$requirement" || echo "gym_swe: the build '
        'requirement $requirement is left out (it would change what the environment holds)"; done'
    ]


def project_name(tree: Path) -> str | None:
    """The distribution name the project at ``tree`` declares (pyproject.toml's ``[project] name``, then
    setup.cfg's ``[metadata] name``, then a literal ``name=`` in setup.py), normalized as pip does; None
    when it declares none that can be read without running anything."""
    names: list[str] = []
    try:
        text = (tree / "pyproject.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    if sys.version_info >= (3, 11):
        import tomllib

        try:
            project = tomllib.loads(text).get("project", {})
            names.append(project.get("name", "") if isinstance(project, dict) else "")
        except ValueError:
            pass
    else:
        found = PYPROJECT_NAME.search(text)
        names.append(found.group(1) if found else "")
    config = configparser.RawConfigParser()
    try:
        config.read(tree / "setup.cfg", encoding="utf-8")
        names.append(config.get("metadata", "name", fallback=""))
    except (configparser.Error, UnicodeDecodeError):
        pass
    try:
        found = SETUP_PY_NAME.search((tree / "setup.py").read_text(encoding="utf-8", errors="replace"))
        names.append(found.group(1) if found else "")
    except OSError:
        pass
    name = next((name for name in names if isinstance(name, str) and name.strip()), None)
    return re.sub(r"[-_.]+", "-", name.strip()).lower() if name else None


def is_pytest(tree: Path) -> bool:
    """Whether the project at ``tree`` is pytest itself (pytest-dev/pytest, or a fork of it)."""
    return project_name(tree) == "pytest"


def own_runner(task: SWETask, tree: Path) -> bool:
    """Whether ``task``'s repository (checked out at ``tree``) is pytest and its own install, by the task's
    install commands, is its runner: its venv then gets no pinned pytest."""
    return bool(task.environment.install) and is_pytest(tree)


SETTLE_INSTALL = """\
set -e
# tracked files the install changed (sphinx's pins in setup.py and tox.ini) are committed on top of the base
# commit, dated as it is, so the same task always gets the same commit
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  date=$(git log -1 --format=%cI HEAD)
  GIT_AUTHOR_DATE=$date GIT_COMMITTER_DATE=$date git -c user.name=gym_swe -c user.email=gym_swe@localhost \\
    commit --quiet --no-verify --all -m "gym_swe: the task's install commands changed these files"
fi
# what it added is ignored
added=$(git ls-files --others --exclude-standard --directory)
if [ -n "$added" ]; then
  mkdir -p .git/info
  echo "# built by the task's install commands (gym_swe prepare)" >> .git/info/exclude
  printf '%s\\n' "$added" | sed 's|^|/|' >> .git/info/exclude
fi
"""
"""Run in a prepared checkout after its install commands (here, and as a step of a task's docker image), so
that an episode's ``git status`` shows only the agent's own changes and ``git checkout -- .`` keeps what the
install changed: those files are part of the checkout the agent's changes are taken against, never its own."""


def _settle_install(testbed: Path) -> None:
    """`SETTLE_INSTALL` in ``testbed``, with the host's git and no configuration but gym_swe's."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "HOME": str(cache_root())}
    done = subprocess.run(["sh", "-c", SETTLE_INSTALL], cwd=testbed, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise TaskError(
            f"could not settle what the install changed in {testbed}: {done.stderr.strip()[-1000:]}"
        )


def _write_metadata(root: Path, interpreter: Interpreter, requirements: list[str]) -> None:
    meta = {
        "python": interpreter.executable,
        "version": list(interpreter.version),
        "prefix": interpreter.prefix,
        "requirements": requirements,
    }
    (root / METADATA).write_text(json.dumps(meta, indent=1))
