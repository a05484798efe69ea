"""Prepared environments of SWE tasks on the local sandbox, on repositories built here (no network but PyPI,
whose downloads pip caches): what the install builds is kept, venvs hold only their own packages, the
interpreter can live outside /usr, the spec's env reaches every command, and repository sources resolve."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import gymnasium
import pytest

import gym_swe  # noqa: F401
from gym_swe.errors import TaskError
from gym_swe.tasks.environments import prepare_environment
from gym_swe.tasks.interpreters import find_interpreter
from gym_swe.tasks.repos import RepoSource, checkout
from gym_swe.tasks.swe import load_swe_tasks
from tests.conftest import require_bwrap
from tests.tasks.local_repos import World, git, record, verpkg_world, write_records

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
