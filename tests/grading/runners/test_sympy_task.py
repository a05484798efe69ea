"""A sympy task end to end: a repository made of sympy 1.12's own source (its package, one of its test files,
the ``bin/test`` stand-in of `sympy_fixtures`), played through ``env.step()`` and validated, its bare ids
graded by sympy's own runner."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import gymnasium
import pytest

from gym_swe.tasks.swe import load_swe_tasks
from gym_swe.validate import validate
from tests.conftest import require_bwrap
from tests.grading.runners.sympy_fixtures import sympy_repository
from tests.redteam.scripted import bash, run_episode
from tests.tasks.local_repos import diff_of, git, user_pip_cache, write_records

TASK_ID = "sympy__sympy-90001"
TESTS = "sympy/utilities/tests/test_iterables.py"
FIX_TEST = """

def test_rotate_by_more_than_the_length():
    values = list(range(123457, 987654, 11))
    assert rotate_right(values, 100003)[0] == 751832
"""
FAIL_TO_PASS = ["test_rotate_by_more_than_the_length"]
PASS_TO_PASS = ["test_rotate", "test_flatten", "test_sift"]
RIGHT = "    y = len(x) - y % len(x)\n"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str]]:
    """Mirrors, records, gold patch: the bug drops the modulo of rotate_right (past its length it rotates
    wrong)."""
    require_bwrap()
    root = tmp_path_factory.mktemp("sympy-task")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GYM_SWE_CACHE", str(root / "cache"))
        patch.setenv("GYM_SWE_PIP_CACHE", user_pip_cache())
        work = sympy_repository("1.12", root / "sympy", keep=(TESTS,), files={})
        source = (work / "sympy/utilities/iterables.py").read_text()
        assert source.count(RIGHT) == 1
        (work / "sympy/utilities/iterables.py").write_text(
            source.replace(RIGHT, "    return x[-y:] + x[:-y]\n")
        )
        git(work, "commit", "-qam", "the bug")
        base = git(work, "rev-parse", "HEAD").strip()
        gold = diff_of(work, {"sympy/utilities/iterables.py": source})
        test_patch = diff_of(work, {TESTS: (work / TESTS).read_text() + FIX_TEST})
        mirrors = root / "mirrors"
        mirrors.mkdir()
        git(root, "clone", "-q", "--mirror", str(work), str(mirrors / "sympy__sympy.git"))
        row = {"instance_id": TASK_ID, "repo": "sympy/sympy", "base_commit": base, "patch": gold,
               "test_patch": test_patch, "problem_statement": "rotate_right past the list's length is wrong",
               "FAIL_TO_PASS": FAIL_TO_PASS, "PASS_TO_PASS": PASS_TO_PASS, "version": "1.12",
               "environment": {"python": "3.9", "packages": ["mpmath==1.3.0"]}}  # fmt: skip
        tasks = write_records(root / "tasks.jsonl", [row])
        try:
            yield mirrors, tasks, gold
        finally:
            load_swe_tasks.cache_clear()


def test_a_sympy_task_validates_under_its_own_runner(world: tuple[Path, Path, str]) -> None:
    """Over a minute: it prepares the environment (a Python 3.9 venv) and validates as a user does (the gold
    patch's calibrating runs, then the fix and no fix graded)."""
    mirrors, tasks, _ = world
    (row,) = validate("SWEGym-v0", tasks=str(tasks), repo_source=str(mirrors))
    assert row["ok"], (row["problem"], row["fix_log"][-3000:])
    assert row["fix_passed"] == "4/4" and row["no_fix_passed"] == "3/4"
    assert set(row["tests"]) == {*FAIL_TO_PASS, *PASS_TO_PASS}
    assert f"-C --verbose {TESTS}" in row["fix_log"]


def test_the_gold_patch_earns_one_and_no_change_zero_through_env_step(world: tuple[Path, Path, str]) -> None:
    mirrors, tasks, gold = world
    env = gymnasium.make("SWEGym-v0", tasks=str(tasks), repo_source=str(mirrors))
    try:
        fix = base64.b64encode(gold.encode()).decode()
        reward, terminated, _, info = run_episode(env, TASK_ID, [bash(f"echo {fix} | base64 -d | git apply")])
        assert terminated and reward == 1.0, (info["grade"].get("error"), info["grade"]["log"][-3000:])
        assert info["grade"]["integrity"] == "sealed"  # its plain assert, held outside the run
        reward, terminated, _, info = run_episode(env, TASK_ID, [])
        assert terminated and reward == 0.0
        # bin/test is the runner's own: an agent's change to it is dropped, not graded
        reward, _, _, info = run_episode(
            env,
            TASK_ID,
            [bash("echo 'import sys; sys.exit(0)' > bin/test"), bash(f"echo {fix} | base64 -d | git apply")],
        )
        assert reward == 1.0 and "dropped bin/test: the test runner's own" in info["grade"]["log"]
    finally:
        env.close()


# An attack of an agent that has read gym_swe, the bug left in: code under test (imported by the tests, in
# the runner's process) that makes sympy's reporter count every failure as a pass.
FAILURES_PASS = """
def _forge():
    import sys

    for name in ("sympy.testing.runtests", "sympy.utilities.runtests"):
        module = sys.modules.get(name)
        if module is not None:
            for cls in [module.PyTestReporter, *module.PyTestReporter.__subclasses__()]:
                cls.test_fail = lambda self, exc_info: self.test_pass()


_forge()
"""


def test_forged_outcomes_from_the_code_under_test_earn_nothing(world: tuple[Path, Path, str]) -> None:
    mirrors, tasks, gold = world
    env = gymnasium.make("SWEGym-v0", tasks=str(tasks), repo_source=str(mirrors))
    forge = bash(
        f"echo {base64.b64encode(FAILURES_PASS.encode()).decode()} | base64 -d >> sympy/utilities/iterables.py"
    )
    try:
        reward, terminated, _, info = run_episode(env, TASK_ID, [forge])
        assert terminated and reward == 0.0, info["grade"]["log"][-3000:]
        assert (
            "test_rotate_by_more_than_the_length: reported passed, but its sealed check"
            in info["grade"]["log"]
        )
        fix = bash(f"echo {base64.b64encode(gold.encode()).decode()} | base64 -d | git apply")
        reward, _, _, info = run_episode(env, TASK_ID, [forge, fix])  # control: the fix beside it
        assert reward == 1.0, info["grade"]["log"][-3000:]
    finally:
        env.close()
