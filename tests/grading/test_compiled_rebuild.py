"""Compiled repositories (astropy, scikit-learn, matplotlib): a fix to a C source is built again in the grading
sandbox before the tests run (the environment's ``rebuild`` commands, as SWE-bench's harness re-runs the
install), within a bounded time; what the build makes is never the agent's change.

The repository here is a package with a real C extension, built in place by its install
(``python setup.py build_ext --inplace``) as those projects' SWE-bench environments build theirs.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import gymnasium
import pytest

from gym_swe.tasks.swe import load_swe_tasks
from gym_swe.validate import validate
from tests.conftest import require_bwrap
from tests.redteam.scripted import bash, run_episode
from tests.tasks.local_repos import diff_of, git, user_pip_cache, write, write_records

SETUP = """from setuptools import Extension, setup

setup(name="cext", version="1.0", packages=["cext"], ext_modules=[Extension("cext._fast", ["src/fast.c"])])
"""
FAST_C = """#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *add(PyObject *self, PyObject *args) {
    long a, b;
    if (!PyArg_ParseTuple(args, "ll", &a, &b)) return NULL;
    return PyLong_FromLong(a - b);
}

static PyMethodDef methods[] = {{"add", add, METH_VARARGS, "a + b"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fast", NULL, -1, methods};
PyMODINIT_FUNC PyInit__fast(void) { return PyModule_Create(&module); }
"""
TESTS = """import cext


def test_the_extension_is_built():
    assert cext._fast.__file__.endswith(".so")
"""
FIX_TEST = """import cext


def test_add():
    assert cext.add(20, 22) == 42
"""
BUILD = "python setup.py build_ext --inplace"
ENVIRONMENT = {"packages": ["setuptools"], "install": [BUILD], "rebuild": [BUILD]}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str]]:
    """cext's mirror and records: ``cext-1`` (rebuilds), ``cext-norebuild`` (its environment says nothing of
    how to rebuild); returns the mirrors, the records and the gold patch."""
    require_bwrap()
    root = tmp_path_factory.mktemp("compiled")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GYM_SWE_CACHE", str(root / "cache"))
        patch.setenv("GYM_SWE_PIP_CACHE", user_pip_cache())
        work = root / "cext-work"
        work.mkdir()
        git(work, "init", "-q")
        write(work, {"setup.py": SETUP, "src/fast.c": FAST_C, "cext/__init__.py": "from cext._fast import add\n",
                     "tests/test_cext.py": TESTS, ".gitignore": "build/\n*.so\n"})  # fmt: skip
        git(work, "add", "-A")
        git(work, "commit", "-qm", "cext")
        base = git(work, "rev-parse", "HEAD").strip()
        gold = diff_of(work, {"src/fast.c": FAST_C.replace("a - b", "a + b")})
        test_patch = diff_of(work, {"tests/test_fix.py": FIX_TEST})
        mirrors = root / "mirrors"
        mirrors.mkdir()
        git(root, "clone", "-q", "--mirror", str(work), str(mirrors / "acme__cext.git"))

        def record(instance_id: str, environment: dict) -> dict:
            return {"instance_id": instance_id, "repo": "acme/cext", "base_commit": base, "patch": gold,
                    "test_patch": test_patch, "problem_statement": "cext.add(20, 22) returns -2",
                    "FAIL_TO_PASS": ["tests/test_fix.py::test_add"],
                    "PASS_TO_PASS": ["tests/test_cext.py::test_the_extension_is_built"],
                    "environment": environment}  # fmt: skip

        no_rebuild = {key: value for key, value in ENVIRONMENT.items() if key != "rebuild"}
        tasks = write_records(root / "tasks.jsonl", [record("cext-1", ENVIRONMENT),
                                                     record("cext-norebuild", no_rebuild)])  # fmt: skip
        try:
            yield mirrors, tasks, gold
        finally:
            load_swe_tasks.cache_clear()


def test_a_fix_to_a_c_source_is_rebuilt_before_the_tests(world: tuple[Path, Path, str]) -> None:
    mirrors, tasks, _ = world
    rows = {row["task_id"]: row for row in validate("SWEGym-v0", tasks=str(tasks), repo_source=str(mirrors))}
    assert rows["cext-1"]["ok"], rows["cext-1"]["problem"]
    assert rows["cext-1"]["fix_passed"] == "2/2" and rows["cext-1"]["no_fix_passed"] == "1/2"
    assert "rebuild: $ python setup.py build_ext --inplace\n[exit 0]" in rows["cext-1"]["fix_log"]
    # Without rebuild commands the fix changes a source nothing builds: the tests run the prepared build.
    assert not rows["cext-norebuild"]["ok"]
    assert "no rebuild commands: the tests run the prepared build" in rows["cext-norebuild"]["fix_log"]


def test_a_diff_that_does_not_build_fails_and_the_agents_build_is_not_its_change(
    world: tuple[Path, Path, str],
) -> None:
    mirrors, tasks, gold = world
    # integrity="any": add(20, 22) == 42 is a check nothing protects; this is about the build
    env = gymnasium.make("SWEGym-v0", tasks=str(tasks), repo_source=str(mirrors), integrity="any")
    try:
        # The honest agent: the fix, then its own build in the episode (what it builds is binary: dropped).
        fix = base64.b64encode(gold.encode()).decode()
        actions = [bash(f"echo {fix} | base64 -d | git apply && {BUILD} >/dev/null 2>&1 && python -c "
                        "'import cext; print(cext.add(20, 22))'")]  # fmt: skip
        reward, terminated, _, info = run_episode(env, "cext-1", actions)
        assert terminated and reward == 1.0, info["grade"]["log"][-3000:]
        assert "src/fast.c" in info["grade"]["diff"] and ".so" not in info["grade"]["diff"]
        # No change: 0.
        reward, _, _, info = run_episode(env, "cext-1", [])
        assert reward == 0.0
        # C that does not compile: the rebuild fails, and the submission with it (not the old build's tests).
        broken = bash("sed -i 's/a - b/a + b +/' src/fast.c")
        reward, _, _, info = run_episode(env, "cext-1", [broken])
        assert reward == 0.0
        assert "the diff changes compiled sources (src/fast.c) and rebuilding them failed (exit 1)" in str(
            info["grade"]["rejection"]
        )
    finally:
        env.close()
