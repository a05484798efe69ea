"""Prepared environments of SWE tasks on the local sandbox, on repositories built here (no network but PyPI,
whose downloads pip caches): what the install builds is kept, venvs hold only their own packages, the
interpreter can live outside /usr, the spec's env reaches every command, and repository sources resolve."""

from __future__ import annotations

import base64
import glob
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import gymnasium
import pytest

import gym_swe  # noqa: F401
from gym_swe.errors import GradingError, TaskError
from gym_swe.sandbox.local import LocalSandbox
from gym_swe.tasks.conda_env import JAIL_PATH as CONDA_ENV_JAIL_PATH
from gym_swe.tasks.conda_env import SETUP_COMMIT_TREE
from gym_swe.tasks.environments import (
    PYPROJECT_NAME,
    build_requirement_commands,
    build_requirements,
    failure_line,
    is_pytest,
    pip_upgrade_commands,
    prepare_environment,
    project_name,
)
from gym_swe.tasks.interpreters import find_interpreter
from gym_swe.tasks.repos import RepoSource, checkout
from gym_swe.tasks.swe import load_swe_tasks
from gym_swe.validate import _problem
from tests.conftest import require_bwrap, require_docker
from tests.tasks.local_repos import INSTALL, World, git, record, verpkg_world, write, write_records

SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'


def bash(command: str) -> str:
    return "<tool_call>" + json.dumps({"name": "bash", "arguments": {"command": command}}) + "</tool_call>"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    require_bwrap()
    with verpkg_world(tmp_path_factory.mktemp("prepare")) as built:
        yield built


def the_task(world: World):  # type: ignore[no-untyped-def]
    return load_swe_tasks(str(world.tasks)).get("acme__verpkg-1")


# -- point 1: what the install builds is kept -----------------------------------------------------------------
def test_the_prepared_checkout_holds_what_the_install_built(world: World) -> None:
    task = the_task(world)
    prepared = prepare_environment(task, RepoSource(world.mirrors))
    built = prepared.checkout
    assert (built / "src" / "verpkg" / "_version.py").read_text() == "__version__ = '1.4'\n"
    assert (built / "src" / "verpkg" / "_table.py").is_file()
    assert (built / "src" / "verpkg.egg-info" / "PKG-INFO").is_file()
    # The pristine checkout is untouched; the generated files are ignored by git in the prepared one.
    pristine = checkout(task, RepoSource(world.mirrors))
    assert not (pristine / "src" / "verpkg" / "_table.py").exists()
    assert not (pristine / "src" / "verpkg.egg-info").exists()
    assert git(built, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(built, "rev-parse", "HEAD").strip() == world.base
    # Point 5: the venv does not see the system's site-packages.
    assert "include-system-site-packages = false" in (prepared.venv / "pyvenv.cfg").read_text()


def test_episodes_and_grading_use_the_prepared_checkout(world: World) -> None:
    env = gymnasium.make("SWEGym-v0", tasks=str(world.tasks), repo_source=str(world.mirrors))
    try:
        env.reset(options={"task_id": "acme__verpkg-1"})
        box = env.unwrapped.sandbox
        run = lambda command: box.exec(command).stdout.strip()  # noqa: E731
        assert run("python -c 'import verpkg, importlib.metadata as m; print(verpkg.__version__, "
                   "m.version(\"verpkg\"))'") == "1.4 1.4"  # fmt: skip
        assert run("git status --porcelain") == ""
        assert run("echo $SETUPTOOLS_SCM_PRETEND_VERSION") == "1.4"
        # Point 5: exactly the venv's own packages, with the pinned pytest.
        paths = json.loads(run("python -c 'import json, sys; print(json.dumps(sys.path))'"))
        site_dirs = [path for path in paths if path.endswith(("site-packages", "dist-packages"))]
        venv = run("echo $VIRTUAL_ENV")
        assert site_dirs and all(path.startswith(venv + "/") for path in site_dirs), site_dirs
        assert "pytest 8.3.5" in box.exec("python -m pytest --version 2>&1").stdout
        fix = base64.b64encode(world.gold.encode()).decode()
        actions = [bash(f"echo {fix} | base64 -d | git apply"), bash("echo junk >> src/verpkg.egg-info/PKG-INFO"),
                   bash("echo 'SQUARES = []' > src/verpkg/_table.py"), SUBMIT]  # fmt: skip
        for action in actions[:-1]:
            env.step(action)
        _, reward, terminated, _, info = env.step(actions[-1])
    finally:
        env.close()
    assert terminated
    grade = info["grade"]
    # The generated module the agent rewrote is its change (and breaks a PASS_TO_PASS test); what the
    # install generated and the agent left alone is not; egg-info stays protected.
    assert "dropped src/verpkg.egg-info/PKG-INFO" in grade["log"]
    assert "_version.py" not in grade["diff"] and "src/verpkg/__init__.py" in grade["diff"]
    assert reward == 0.0
    outcomes = {test["name"]: test["outcome"] for test in grade["tests"]}
    assert outcomes["tests/test_fix.py::test_add"] == "passed"
    assert outcomes["tests/test_pkg.py::test_generated_module"] == "failed"
    assert outcomes["tests/test_pkg.py::test_installed_metadata"] == "passed"


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_tracked_files_the_install_changes_are_not_the_agents(
    world: World, tmp_path: Path, backend: str
) -> None:
    """SWE-bench's sphinx installs pin packages by editing setup.py and tox.ini: an episode's ``git status``
    shows none of it, and an agent that runs ``git checkout -- .`` has none of it in its graded diff (the
    prepared checkout here, the task's image on docker)."""
    pins = "echo '# pinned' >> setup.py && echo '# pinned' >> tools/generate.py"
    rows = [record("acme__verpkg-pins", world.base, world.gold, world.test_patch,
                   environment={"install": [pins, *INSTALL]})]  # fmt: skip
    tasks = write_records(tmp_path / "pins.jsonl", rows)
    image = None
    if backend == "docker":
        require_docker()
        from gym_swe.tasks.images import build_task_image

        task = load_swe_tasks(str(tasks)).get("acme__verpkg-pins")
        image = build_task_image(task, RepoSource(world.mirrors), log=lambda _: None)
    # add(2, 3) == 5 is a check nothing protects: integrity="any" pays it (this test is about the checkout)
    env = gymnasium.make("SWEGym-v0", tasks=str(tasks), repo_source=str(world.mirrors), integrity="any",
                         sandbox=backend)  # fmt: skip
    try:
        env.reset(options={"task_id": "acme__verpkg-pins"})
        box = env.unwrapped.sandbox
        assert box.exec("git status --porcelain").stdout == ""
        assert box.exec("tail -1 setup.py").stdout.strip() == "# pinned"
        fix = base64.b64encode(world.gold.encode()).decode()
        env.step(bash(f"git checkout -- . && echo {fix} | base64 -d | git apply && git status --porcelain"))
        assert (
            box.exec("tail -1 setup.py").stdout.strip() == "# pinned"
        )  # the checkout kept the install's pins
        _, reward, terminated, _, info = env.step(SUBMIT)
    finally:
        env.close()
        if image is not None:
            from gym_swe.sandbox.docker import docker_client

            docker_client().images.remove(image, force=True)
    assert terminated and reward == 1.0
    assert "setup.py" not in info["grade"]["diff"] and "tools/generate.py" not in info["grade"]["diff"]


def test_a_locale_the_task_names_and_the_host_lacks_is_compiled_for_it(world: World, tmp_path: Path) -> None:
    """SWE-bench's Django environments run with ``LANG=en_US.UTF-8`` (their images run ``locale-gen``): here
    the locale is compiled into the venv, so Python takes it (a missing one leaves Python 3.6 on ASCII)."""
    if "en_US.utf8" in subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout.split():
        pytest.skip("this host has en_US.UTF-8 already: nothing to compile")
    variables = {"LANG": "en_US.UTF-8", "LC_ALL": "en_US.UTF-8"}
    rows = [record("acme__verpkg-locale", world.base, world.gold, world.test_patch,
                   environment={"install": list(INSTALL), "env": variables})]  # fmt: skip
    task = load_swe_tasks(str(write_records(tmp_path / "locale.jsonl", rows))).get("acme__verpkg-locale")
    prepared = prepare_environment(task, RepoSource(world.mirrors))
    with LocalSandbox(workdir="/testbed", **prepared.sandbox_options()) as box:
        shown = box.exec("python -c \"import locale; print(locale.setlocale(locale.LC_ALL, ''))\"")
    assert shown.stdout.strip() == "en_US.UTF-8", shown.output


# -- point 2: the interpreter -----------------------------------------------------------------------------
def python_outside_usr(root: Path) -> Path:
    """An installation of the system's Python under ``root``: its binary, and its standard library by a
    link (Python finds its prefix from the landmark ``lib/pythonX.Y/os.py`` beside its binary)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = Path(f"/usr/bin/{version}")
    if not system.exists():
        pytest.skip(f"no {system} to copy")
    (root / "bin").mkdir(parents=True)
    shutil.copy2(system, root / "bin" / version)
    (root / "lib").mkdir()
    (root / "lib" / version).symlink_to(f"/usr/lib/{version}")
    return root / "bin" / version


def test_an_interpreter_outside_usr_is_bound_into_every_jail(world: World, tmp_path: Path) -> None:
    python = python_outside_usr(tmp_path / "opt-python")
    found = find_interpreter(str(python))
    assert found.prefix == str((tmp_path / "opt-python").resolve())
    rows = [record("acme__verpkg-own-python", world.base, world.gold, world.test_patch,
                   environment={"python": str(python), "install": ["python tools/generate.py",
                                "pip install --no-build-isolation --no-deps -e ."]})]  # fmt: skip
    tasks = write_records(tmp_path / "tasks.jsonl", rows)
    env = gymnasium.make("SWEGym-v0", tasks=str(tasks), repo_source=str(world.mirrors))
    try:
        env.reset(options={"task_id": "acme__verpkg-own-python"})
        base_prefix = env.unwrapped.sandbox.exec("python -c 'import sys; print(sys.base_prefix)'").stdout
        assert base_prefix.strip() == found.prefix
        grade = env.unwrapped.grade_diff(env.unwrapped.tasks[0], world.gold)
    finally:
        env.close()
    assert grade.resolved and grade.error is None, grade.log[-2000:]


def test_a_version_that_cannot_be_had_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no uv, no pyenv shims: the "existing path" route only
    with pytest.raises(TaskError, match=r"Python 2\.1 is not available here: .*uv python install 2\.1"):
        find_interpreter("2.1")
    with pytest.raises(TaskError, match="not an executable file"):
        find_interpreter("/nonexistent/bin/python3")
    # A version is found as pythonX.Y on the system's PATH.
    system = subprocess.run(["/usr/bin/python3", "-c", "import sys; print(*sys.version_info[:2])"],
                            capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    found = find_interpreter(".".join(system))
    assert [str(part) for part in found.version[:2]] == system and found.prefix is None
    with pytest.raises(TaskError, match="not on PATH"):
        find_interpreter("python-that-is-not-there")


@pytest.mark.parametrize(("output", "line"), [
    ("Usage: pip install [options]\n\nno such option: --no-use-pep517\n", "no such option: --no-use-pep517"),
    ("Collecting gtk3\nERROR: Could not find a version that satisfies the requirement gtk3 (from versions: none)\n"
     "ERROR: No matching distribution found for gtk3\n", "ERROR: No matching distribution found for gtk3"),
    ("gcc ...\nsrc/x.c:1:10: fatal error: ft2build.h: No such file or directory\nbuilding 'x' done\n",
     "src/x.c:1:10: fatal error: ft2build.h: No such file or directory"),
    ("half-built\n", "half-built"),
    ("", ""),
])  # fmt: skip
def test_a_failed_prepare_command_says_why_in_its_first_line(output: str, line: str) -> None:
    assert failure_line(output) == line


ASTROPY_PYPROJECT = """[build-system]
requires = ["setuptools==68.0.0",
            "setuptools_scm>=6.2",
            "oldest-supported-numpy",
            "extension-helpers"]
build-backend = 'setuptools.build_meta'

[tool.x]
requires = ["not-this"]
"""


def test_a_rebuilt_projects_build_requirements_stay_in_its_venv(tmp_path: Path, monkeypatch) -> None:
    """astropy builds in pip's isolation (extension_helpers, Cython there only), and the grading sandbox's
    rebuild (setup.py build_ext --inplace, offline) imports them: prepare installs them after the install,
    each kept to what the venv holds (oldest-supported-numpy would pin an older numpy: left out)."""
    write(tmp_path, {"pyproject.toml": ASTROPY_PYPROJECT})
    wanted = ["setuptools==68.0.0", "setuptools_scm>=6.2", "oldest-supported-numpy", "extension-helpers"]
    assert build_requirements(tmp_path) == wanted
    monkeypatch.setattr(sys, "version_info", (3, 10))  # no tomllib: read by a pattern
    assert build_requirements(tmp_path) == wanted
    assert (
        build_requirements(tmp_path / "none") == [] and build_requirement_commands("/v/bin/python", []) == []
    )
    (command,) = build_requirement_commands("/v/bin/python", ["cython==0.29.22", "setuptools_scm>=6.2"])
    assert command.startswith(
        "cd /testbed && /v/bin/python -m pip --disable-pip-version-check list --format=freeze"
    )
    assert "for requirement in cython==0.29.22 'setuptools_scm>=6.2'; do" in command
    assert 'install --no-input --quiet -c /tmp/gym_swe-installed.txt "$requirement" || echo' in command
    # It runs as a shell command: a requirement that fails is left out with a word, the others go on.
    fake = tmp_path / "python"
    fake.write_text(
        '#!/bin/sh\ncase "$*" in *list*) echo "numpy==1.25.2";; *oldest*) exit 1;; *) echo "$*";; esac\n'
    )
    fake.chmod(0o755)
    (command,) = build_requirement_commands(str(fake), ["oldest-supported-numpy", "extension-helpers"])
    done = subprocess.run(command.replace("cd /testbed && ", "", 1).replace("/tmp/gym_swe-", f"{tmp_path}/"),
                          shell=True, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "the build requirement oldest-supported-numpy is left out" in done.stdout
    assert "extension-helpers" in done.stdout.splitlines()[-1]


# -- point 3: env ------------------------------------------------------------------------------------------
def test_env_defaults_to_the_records_version_and_can_be_set(tmp_path: Path, world: World) -> None:
    rows = [
        record("a", world.base, world.gold, world.test_patch),
        record("b", world.base, world.gold, world.test_patch,
               environment={"env": {"SETUPTOOLS_SCM_PRETEND_VERSION": "9.9", "LANG": "C"}}),
        record("c", world.base, world.gold, world.test_patch, version=""),
    ]  # fmt: skip
    tasks = load_swe_tasks(str(write_records(tmp_path / "t.jsonl", rows)))
    assert tasks.get("a").environment.variables == {"SETUPTOOLS_SCM_PRETEND_VERSION": "1.4"}
    assert tasks.get("b").environment.variables == {"SETUPTOOLS_SCM_PRETEND_VERSION": "9.9", "LANG": "C"}
    assert tasks.get("c").environment.variables == {}


# -- a repository that is pytest itself ---------------------------------------------------------------------
OWN_RUNNER_SETUP = """from setuptools import setup

setup(name="pytest", version="4.4.0", packages=["verpkg"], package_dir={"": "src"})
"""


@pytest.mark.parametrize(("files", "name"), [
    ({"pyproject.toml": '[build-system]\nrequires = ["x"]\n\n[project]\nname = "Py_Test.kit"\n'}, "py-test-kit"),
    ({"setup.cfg": "[metadata]\nname = pytest\nversion = 4\n"}, "pytest"),
    ({"setup.py": OWN_RUNNER_SETUP}, "pytest"),
    ({"setup.py": "from setuptools import setup\nsetup(name=about['__title__'])\n"}, None),
    # pyproject.toml first, then setup.cfg, then setup.py
    ({"pyproject.toml": '[project]\nname = "a"\n', "setup.cfg": "[metadata]\nname = b\n"}, "a"),
    ({"pyproject.toml": "[tool.black]\nline-length = 99\n", "setup.cfg": "[metadata]\nname = b\n",
      "setup.py": OWN_RUNNER_SETUP}, "b"),
    ({}, None),
])  # fmt: skip
def test_a_projects_name_is_read_without_running_it(tmp_path: Path, files: dict, name: str | None) -> None:
    for path, text in files.items():
        (tmp_path / path).write_text(text)
    assert project_name(tmp_path) == name
    assert is_pytest(tmp_path) == (name == "pytest")


def test_pyprojects_name_is_found_without_tomllib() -> None:
    """Python 3.10 has no tomllib: a pattern reads [project] name there."""
    text = '[build-system]\nrequires = ["setuptools"]\n\n[project]\ndescription = "x"\nname = "pytest"\n'
    found = PYPROJECT_NAME.search(text)
    assert found and found.group(1) == "pytest"
    assert PYPROJECT_NAME.search('[tool.x]\nname = "pytest"\n') is None


def test_a_repository_that_is_pytest_gets_no_pinned_pytest(world: World, tmp_path: Path) -> None:
    """pytest-dev/pytest at SWE-bench's versions needs its old pluggy, which no pinned pytest installs
    beside: its own install is its runner. Without install commands the pin stays (nothing else would be
    the runner)."""
    work = tmp_path / "pytest-work"
    work.mkdir()
    git(work, "init", "-q")
    write(work, {"setup.py": OWN_RUNNER_SETUP, "src/verpkg/__init__.py": "def add(a, b):\n    return a - b\n",
                 "tests/test_pkg.py": "def test_nothing():\n    pass\n"})  # fmt: skip
    git(work, "add", "-A")
    git(work, "commit", "-qm", "a pytest")
    base = git(work, "rev-parse", "HEAD").strip()
    mirrors = tmp_path / "mirrors"
    subprocess.run(
        ["git", "clone", "-q", "--mirror", str(work), str(mirrors / "acme__pytest.git")], check=True
    )
    rows = [
        record("own-runner", base, "", "", repo="acme/pytest", version="4.4",
               environment={"packages": ["pluggy==0.13.1"],
                            "install": ["pip install --no-build-isolation --no-deps -e ."]}),
        record("not-installed", base, "", "", repo="acme/pytest", version="4.4",
               environment={}),
    ]  # fmt: skip
    tasks = load_swe_tasks(str(write_records(tmp_path / "tasks.jsonl", rows)))
    prepared = prepare_environment(tasks.get("own-runner"), RepoSource(mirrors))
    meta = json.loads((prepared.path / "environment.json").read_text())
    assert meta["requirements"] == ["pluggy==0.13.1"]
    # The repository's own install is the venv's pytest, beside its old pluggy; no other pytest is there.
    site = {path.name for path in prepared.venv.glob("lib/python3*/site-packages/*")}
    assert "pluggy-0.13.1.dist-info" in site and "pytest-8.3.5.dist-info" not in site, site
    assert "pytest.egg-link" in site or "pytest-4.4.0.dist-info" in site, site  # as pip installs -e
    prepared = prepare_environment(tasks.get("not-installed"), RepoSource(mirrors))
    meta = json.loads((prepared.path / "environment.json").read_text())
    assert [r for r in meta["requirements"] if r.startswith("pytest==")], meta["requirements"]
    # A grader that looks for pytest outside such a repository finds none: validate blames the grader.
    stand_in = SimpleNamespace(spec=SimpleNamespace(id="SWEGym-v0"), sandbox_backend="local",
                               repo_source=RepoSource(mirrors))  # fmt: skip
    error = GradingError(
        "the task's environment has no usable pytest: ModuleNotFoundError: No module named 'pytest'"
    )
    problem = _problem(stand_in, tasks.get("own-runner"), error)
    assert problem.startswith("the grader found no pytest outside the repository, which is pytest itself")
    assert "a gym_swe bug" in problem and "environment.packages" not in problem
    assert "environment.packages" in _problem(stand_in, tasks.get("not-installed"), error)  # a plain venv


# -- a conda environment file, read at the environment_setup_commit -----------------------------------------
def test_install_commands_read_the_conda_file_of_the_environment_setup_commit(
    world: World, tmp_path: Path
) -> None:
    """SWE-bench reads a version's conda file at its environment_setup_commit, which can come after an older
    base_commit (xarray 0.12's tasks predate ci/requirements/environment.yml): the prepare jail shows that
    commit's tree read-only at SETUP_COMMIT_TREE, and conda_env reads the file there as pip requirements."""
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q")
    write(work, {"README": "old\n"})
    git(work, "add", "-A")
    git(work, "commit", "-qm", "base")
    base = git(work, "rev-parse", "HEAD").strip()
    write(
        work,
        {
            "ci/requirements/environment.yml": "dependencies:\n  - hdf5\n  - dask-core=2022.8\n  - numpy<1.24\n"
        },
    )
    git(work, "add", "-A")
    git(work, "commit", "-qm", "the environment of the version")
    setup = git(work, "rev-parse", "HEAD").strip()
    mirrors = tmp_path / "mirrors"
    subprocess.run(
        ["git", "clone", "-q", "--mirror", str(work), str(mirrors / "acme__condapkg.git")], check=True
    )
    files = f"{SETUP_COMMIT_TREE}/ci/requirements/environment.yml ci/requirements/environment.yml"
    check = f'python {CONDA_ENV_JAIL_PATH} {files} > /tmp/r.txt && test "$(cat /tmp/r.txt)" = "$(printf \'dask==2022.8\\nnumpy<1.24\')"'
    rows = [record("conda", base, "", "", repo="acme/condapkg", environment_setup_commit=setup,
                   environment={"install": [check, f"test -f {SETUP_COMMIT_TREE}/README && ! touch {SETUP_COMMIT_TREE}/x"]})]  # fmt: skip
    task = load_swe_tasks(str(write_records(tmp_path / "tasks.jsonl", rows))).get("conda")
    prepared = prepare_environment(task, RepoSource(mirrors))  # fails if the install commands fail
    assert not (prepared.checkout / "ci").exists()  # the checkout stops at base_commit
    assert not (prepared.path / "setup-commit").exists()  # the tree was for preparing only
    # Without the later commit in the mirror, preparing says so.
    rows[0]["environment_setup_commit"] = "0" * 40
    rows[0]["instance_id"] = "conda-unknown-commit"
    task = load_swe_tasks(str(write_records(tmp_path / "tasks2.jsonl", rows))).get("conda-unknown-commit")
    with pytest.raises(
        TaskError, match=r"environment_setup_commit 0{40} is not in the mirror of acme/condapkg"
    ):
        prepare_environment(task, RepoSource(mirrors))


@pytest.mark.parametrize("version", ["3.6", "3.7", "3.8", "3.11"])
def test_a_venv_whose_bundled_pip_predates_manylinux2014_gets_a_newer_one(version: str) -> None:
    """Python 3.6's ensurepip brings pip 18.1, which takes no manylinux2014 wheel (pip 19.3 does): Django
    3.x's test requirements were built from source there (bcrypt needs Rust) and failed. The venv's pip is
    upgraded exactly where the bundled one is that old (SWE-bench's conda environments have pip 21.2 on 3.6)."""
    pyenv = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found = [
        shutil.which(f"python{version}") or "",
        *glob.glob(f"{pyenv}/versions/{version}.*/bin/python{version}"),
    ]
    working = [
        path
        for path in found
        if path and subprocess.run([path, "-c", ""], capture_output=True).returncode == 0
    ]
    if not working:
        pytest.skip(f"no python{version} here")
    executable = working[0]
    bundled = subprocess.run([executable, "-c", "import ensurepip; print(ensurepip.version())"],
                             capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    too_old = tuple(int(part) for part in bundled.split(".")[:2]) < (19, 3)
    wanted = tuple(int(part) for part in version.split("."))
    assert pip_upgrade_commands("python -m pip install", wanted) == (
        ["python -m pip install --upgrade pip"] if too_old else []
    ), bundled
