"""A Django task end to end: a repository made of Django 5.0's own source (its package, ``tests/runtests.py``
and one of its test apps), prepared the documented way (``pip install -e .``), played through ``env.step()``
and validated, with SWE-bench's id shapes (a docstring id among them) and Django's runner."""

from __future__ import annotations

import base64
import shutil
from collections.abc import Iterator
from pathlib import Path

import gymnasium
import pytest

from gym_swe.tasks.swe import load_swe_tasks
from gym_swe.validate import validate
from tests.conftest import require_bwrap, require_docker
from tests.grading.runners.django_fixtures import installed
from tests.redteam.scripted import bash, run_episode
from tests.tasks.local_repos import diff_of, git, user_pip_cache, write_records

VERSION = "5.0.14"
TASK_ID = "django__django-90001"
FIX_TEST = '''

class CapfirstTests(SimpleTestCase):
    def test_capfirst_upper_cases_the_first_letter(self):
        self.assertEqual(text.capfirst("zebra crossing"), "Zebra crossing")

    def test_capfirst_of_a_number(self):
        """capfirst() of something that is not a string capitalises its str()."""
        self.assertEqual(text.capfirst(7), "7")
'''
DOCSTRING_ID = "capfirst() of something that is not a string capitalises its str()."
FAIL_TO_PASS = [
    "test_capfirst_upper_cases_the_first_letter (utils_tests.test_text.CapfirstTests."
    "test_capfirst_upper_cases_the_first_letter)",
]
PASS_TO_PASS = [
    DOCSTRING_ID,
    "test_get_text_list (utils_tests.test_text.TestUtilsText.test_get_text_list)",
    "test_wrap (utils_tests.test_text.TestUtilsText)",  # the shape before Python 3.11
]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str]]:
    """Mirrors, records, gold patch: the bug upper-cases nothing (``capfirst`` returns its input)."""
    require_bwrap()
    release = installed(VERSION)
    root = tmp_path_factory.mktemp("django-task")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GYM_SWE_CACHE", str(root / "cache"))
        patch.setenv("GYM_SWE_PIP_CACHE", user_pip_cache())
        work = root / "django"
        for name in ("django", "tests/utils_tests"):
            shutil.copytree(release.source / name, work / name)
        for name in ("setup.py", "setup.cfg", "pyproject.toml", "tests/runtests.py", "tests/test_sqlite.py",
                     "tests/urls.py"):  # fmt: skip
            shutil.copy2(release.source / name, work / name)
        text = (work / "django/utils/text.py").read_text()
        fixed = text.replace(
            "    return x[0].upper() + x[1:]\n", "    return x[0].upper() + x[1:]  # fixed\n"
        )
        assert fixed != text
        (work / "django/utils/text.py").write_text(text.replace("x[0].upper() + x[1:]", "x"))
        git(work, "init", "-q")
        git(work, "add", "-A")
        git(work, "commit", "-qm", "django")
        base = git(work, "rev-parse", "HEAD").strip()
        gold = diff_of(work, {"django/utils/text.py": fixed})
        tests_text = (work / "tests/utils_tests/test_text.py").read_text()
        test_patch = diff_of(work, {"tests/utils_tests/test_text.py": tests_text + FIX_TEST})
        mirrors = root / "mirrors"
        mirrors.mkdir()
        git(root, "clone", "-q", "--mirror", str(work), str(mirrors / "django__django.git"))
        row = {"instance_id": TASK_ID, "repo": "django/django", "base_commit": base, "patch": gold,
               "test_patch": test_patch, "problem_statement": "capfirst() leaves the first letter as it is",
               "FAIL_TO_PASS": FAIL_TO_PASS, "PASS_TO_PASS": PASS_TO_PASS, "version": "5.0",
               "environment": {"python": "3.11", "packages": ["asgiref==3.8.1", "sqlparse==0.5.0"],
                               "install": ["python -m pip install -e ."]}}  # fmt: skip
        tasks = write_records(root / "tasks.jsonl", [row])
        try:
            yield mirrors, tasks, gold
        finally:
            load_swe_tasks.cache_clear()


def test_a_django_task_validates_under_its_own_runner(world: tuple[Path, Path, str]) -> None:
    """Over a minute: it prepares the environment (``pip install -e .`` of Django) and validates as a user
    does (the gold patch's calibrating runs, then the fix and no fix graded)."""
    mirrors, tasks, _ = world
    (row,) = validate("SWEGym-v0", tasks=str(tasks), repo_source=str(mirrors))
    assert row["ok"], (row["problem"], row["fix_log"][-3000:])
    assert row["fix_passed"] == "4/4" and row["no_fix_passed"] == "3/4"
    # The outcomes come back under the record's own ids, the docstring one included.
    assert set(row["tests"]) == {*FAIL_TO_PASS, *PASS_TO_PASS}
    assert row["tests"][FAIL_TO_PASS[0]] == {"fix": "passed", "no_fix": "failed"}
    assert (
        "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 utils_tests.test_text"
        in (row["fix_log"])
    )


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_the_gold_patch_earns_one_and_no_change_zero_through_env_step(
    world: tuple[Path, Path, str], backend: str
) -> None:
    """On docker, in the task's image as `gym-swe images build` makes it: the runner is the record's there
    too."""
    mirrors, tasks, gold = world
    image = None
    if backend == "docker":
        require_docker()
        from gym_swe.tasks.images import build_task_image
        from gym_swe.tasks.repos import RepoSource

        image = build_task_image(
            load_swe_tasks(str(tasks)).get(TASK_ID), RepoSource(mirrors), log=lambda _: None
        )
    env = gymnasium.make("SWEGym-v0", tasks=str(tasks), repo_source=str(mirrors), sandbox=backend)
    try:
        fix = base64.b64encode(gold.encode()).decode()
        reward, terminated, _, info = run_episode(env, TASK_ID, [bash(f"echo {fix} | base64 -d | git apply")])
        grade = info["grade"]
        assert terminated and reward == 1.0, (grade.get("error"), grade["log"][-3000:])
        assert grade["integrity"] in ("sealed", "decoys"), grade["log"][-3000:]
        reward, terminated, _, info = run_episode(env, TASK_ID, [])
        assert terminated and reward == 0.0
    finally:
        env.close()
        if image is not None:
            from gym_swe.sandbox.docker import docker_client

            docker_client().images.remove(image, force=True)


# Attacks of an agent that has read gym_swe, with the bug left in: code under test that turns the run's
# failures into successes, and Django's own runner (code under test too) reporting every test passed
# through the very run the shim hooks, without running one.
FAILURES_PASS = """
import unittest as _unittest

_unittest.TestResult.addFailure = lambda self, test, err: _unittest.TestResult.addSuccess(self, test)
_unittest.TextTestResult.addFailure = lambda self, test, err: _unittest.TextTestResult.addSuccess(self, test)
"""
NOTHING_RUNS = """
import unittest as _unittest


def _tests(suite):
    for test in suite:
        if isinstance(test, _unittest.TestSuite):
            yield from _tests(test)
        else:
            yield test


class _AllPass(_unittest.TestSuite):
    def run(self, result, debug=False):
        for test in _tests(self.original):
            result.startTest(test)
            result.addSuccess(test)
            result.stopTest(test)
        return result


def _run_suite(self, suite, **kwargs):
    forged = _AllPass()
    forged.original = suite
    return self.test_runner(**self.get_test_runner_kwargs()).run(forged)


DiscoverRunner.run_suite = _run_suite
"""


@pytest.mark.parametrize(("path", "code"), [("django/utils/text.py", FAILURES_PASS),
                                            ("django/test/runner.py", NOTHING_RUNS)])  # fmt: skip
def test_forged_outcomes_from_the_code_under_test_earn_nothing(
    world: tuple[Path, Path, str], path: str, code: str
) -> None:
    mirrors, tasks, gold = world
    env = gymnasium.make("SWEGym-v0", tasks=str(tasks), repo_source=str(mirrors))
    forge = bash(f"echo {base64.b64encode(code.encode()).decode()} | base64 -d >> {path}")
    try:
        reward, terminated, _, info = run_episode(env, TASK_ID, [forge])
        assert terminated and reward == 0.0, info["grade"]["log"][-3000:]
        # the stream said passed: the sealed assertEqual's value, held outside the run, did not
        assert (
            "test_capfirst_upper_cases_the_first_letter: reported passed, but its sealed check"
            in (info["grade"]["log"])
        )
        # Control: the same code beside the honest fix takes nothing from it where it forges nothing the fix
        # needs (the failures-pass hook changes no outcome of a fixed run).
        if code is FAILURES_PASS:
            fix = bash(f"echo {base64.b64encode(gold.encode()).decode()} | base64 -d | git apply")
            reward, _, _, info = run_episode(env, TASK_ID, [forge, fix])
            assert reward == 1.0, info["grade"]["log"][-3000:]
    finally:
        env.close()
