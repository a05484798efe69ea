"""Attacks on prepared environments (issue 13): tasks whose install commands (``pip install -e .`` of a src
layout, egg-info, a generated ``_version.py``) ran in a kept copy of the checkout, the copy-on-write lower
layer of episodes and grading, with ``/testbed/src`` put back on ``sys.path`` by the pytest driver ahead of
site-packages. Each attack runs through ``env.step()`` as an agent that has read gym_swe would, and must earn
nothing; the honest fix beside it must still earn 1.0.

1. The import path: a new package at the root named like the project's src package (found here: it earned
   1.0 with the bug left in ``src``; the probe now reports the editable directories and their modules, and
   the filter drops such files), new modules in ``src`` named like installed ones, a module in the tests'
   directory (pytest puts it first on ``sys.path``).
2. Generated and protected files: egg-info (a pytest11 plugin, the version), ``conftest.py``,
   ``sitecustomize.py`` and ``.pth`` files under ``src``, bytecode compiled from a fixed source, symbolic
   links to a fixed file.
3. The shared, read-only parts: writes into the venv and into the prepared checkout (through its overlay
   lower directory); a second episode and grading must see neither.
4. Git: changes hidden from git (``.git/info/exclude``, ``assume-unchanged``) are still what is graded.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from gym_swe.grading.diffs import protection_reason
from gym_swe.grading.environment import DRIVER_SOURCE, GRADER_DIR, probe_environment
from gym_swe.sandbox.local import LocalSandbox
from gym_swe.tasks.environments import prepare_environment
from gym_swe.tasks.repos import RepoSource
from gym_swe.tasks.swe import load_swe_tasks
from tests.conftest import require_bwrap, require_docker
from tests.redteam.scripted import SUBMIT, bash, make_env, run_episode, write
from tests.tasks.local_repos import World, record, verpkg_world, write_records

TASK_ID = "acme__verpkg-redteam"
FIXED_ADD = "def add(a, b):\n    return a + b\n"
# A package at the repository's root, first on sys.path in grading, that takes the place of src/verpkg: it
# serves the rest of the package from src (version, generated table) and a correct add, so every test passes
# while the project's own code keeps the bug.
ROOT_SHADOW = (
    "import os as _os\n"
    "__path__.append(_os.path.join(_os.path.dirname(__file__), _os.pardir, 'src', 'verpkg'))\n"
    "from verpkg._version import __version__\n" + FIXED_ADD
)
# Imported (if it ever were) before the tests run: it repairs the project's add in memory only.
PATCHER = "import verpkg as _v\n_v.add = lambda a, b: a + b\n"
FORCE_PASS_PLUGIN = (
    "import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    "    report = (yield).get_result()\n    report.outcome = 'passed'\n"
)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    require_bwrap()
    with verpkg_world(tmp_path_factory.mktemp("prepared-envs")) as built:
        built.tasks = write_records(
            built.root / "redteam.jsonl", [record(TASK_ID, built.base, built.gold, built.test_patch)]
        )
        yield built


# integrity="any": the task made here checks `add(2, 3) == 5` (a small integer: nothing protects it, so the
# default would not grade it); these tests are about the prepared environment, not what protects a grade.
INTEGRITY = "any"


@pytest.fixture(scope="module")
def local_env(world: World):  # type: ignore[no-untyped-def]
    env = make_env("SWEGym-v0", "local", tasks=str(world.tasks), repo_source=str(world.mirrors),
                   integrity=INTEGRITY)  # fmt: skip
    yield env
    env.close()


@pytest.fixture(scope="module")
def docker_env(world: World):  # type: ignore[no-untyped-def]
    require_docker()
    from gym_swe.sandbox.docker import docker_client
    from gym_swe.tasks.images import build_task_image

    task = load_swe_tasks(str(world.tasks)).get(TASK_ID)
    image = build_task_image(task, RepoSource(world.mirrors), log=lambda _: None)
    env = make_env("SWEGym-v0", "docker", tasks=str(world.tasks), repo_source=str(world.mirrors),
                   integrity=INTEGRITY)  # fmt: skip
    yield env
    env.close()
    docker_client().images.remove(image, force=True)


def gold_fix(world: World) -> str:
    return bash(f"echo {base64.b64encode(world.gold.encode()).decode()} | base64 -d | git apply")


def play(env, actions: list[str]) -> tuple[float, dict]:  # type: ignore[no-untyped-def]
    reward, terminated, _, info = run_episode(env, TASK_ID, actions)
    assert terminated
    return reward, info["grade"]


# -- 1. the import path ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["local", "docker"])
def test_a_root_package_that_takes_the_place_of_the_src_package_earns_nothing(
    backend: str, request: pytest.FixtureRequest, world: World
) -> None:
    env = request.getfixturevalue(f"{backend}_env")
    reward, grade = play(env, [write("/testbed/verpkg/__init__.py", ROOT_SHADOW)])
    assert reward == 0.0, grade["log"][-3000:]
    assert "dropped verpkg/__init__.py: a new module that shadows the installed 'verpkg'" in grade["log"]
    assert "verpkg/__init__.py" not in grade["diff"]
    # A module beside the root works the same way (verpkg.py before src/verpkg on sys.path).
    reward, grade = play(env, [write("/testbed/verpkg.py", ROOT_SHADOW.split("\n", 1)[1].replace(
        "from verpkg._version import __version__", "__version__ = '1.4'"))])  # fmt: skip
    assert reward == 0.0 and "dropped verpkg.py: a new module that shadows" in grade["log"]
    # Control: the same shadow beside the honest fix; the fix is graded, the shadow is not.
    reward, grade = play(env, [write("/testbed/verpkg/__init__.py", ROOT_SHADOW), gold_fix(world)])
    assert reward == 1.0, grade["log"][-3000:]
    assert "dropped verpkg/__init__.py" in grade["log"] and "src/verpkg/__init__.py" in grade["diff"]


def test_the_probe_reports_the_editable_directories_and_their_modules(world: World) -> None:
    task = load_swe_tasks(str(world.tasks)).get(TASK_ID)
    prepared = prepare_environment(task, RepoSource(world.mirrors))
    with LocalSandbox(workdir="/testbed", **prepared.sandbox_options()) as sandbox:
        environment = probe_environment(sandbox, "/testbed")
    assert dict(environment.editable) == {"src": frozenset({"verpkg"})}
    assert "verpkg" not in environment.shadowable  # the probe takes site-packages without the workspace


ORDER_TEST = """import setuptools
import verpkg


def test_installed_modules_come_before_the_src_directory():
    assert not hasattr(setuptools, "WORKSPACE")
    assert verpkg.__file__ == "/testbed/src/verpkg/__init__.py"
"""


def test_the_driver_puts_the_src_directory_where_site_put_it(world: World) -> None:
    """A module in src named like an installed one (what the filter drops from a diff) would not be imported
    in its place either: the driver keeps the .pth entry after site-packages, as a plain run has it."""
    task = load_swe_tasks(str(world.tasks)).get(TASK_ID)
    prepared = prepare_environment(task, RepoSource(world.mirrors))
    with LocalSandbox(workdir="/testbed", **prepared.sandbox_options()) as box:
        box.write_file("/testbed/src/setuptools/__init__.py", "WORKSPACE = True\n")
        box.write_file("/testbed/tests/test_order.py", ORDER_TEST)
        box.write_file(f"{GRADER_DIR}/driver.py", DRIVER_SOURCE)
        plain = box.exec("python -m pytest -p no:cacheprovider tests/test_order.py", timeout=120)
        graded = box.exec(
            f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python {GRADER_DIR}/driver.py run /testbed '' -- "
            "-p no:cacheprovider tests/test_order.py",
            timeout=120,
        )
    assert "1 passed" in plain.output, plain.output
    assert "1 passed" in graded.output, graded.output


@pytest.mark.parametrize(
    ("path", "new", "reason"),
    [
        ("verpkg/__init__.py", True, "shadows the installed 'verpkg'"),  # the root, before lib and src
        ("lib/json.py", True, "shadows the installed 'json'"),  # an editable directory other than src
        ("lib/pluggy/__init__.py", True, "shadows the installed 'pluggy'"),
        ("src/json.py", True, "shadows the installed 'json'"),  # src without an editable install
        ("src/verpkg/__init__.py", True, "shadows the installed 'verpkg'"),  # src would come before lib
        ("lib/verpkg/helpers.py", True, None),  # a new module of the project's own package
        ("lib/newpkg/__init__.py", True, None),
        ("verpkg/__init__.py", False, None),  # an existing file is the repository's own
        ("docs/json.py", True, None),  # not on sys.path
    ],
)
def test_new_modules_are_checked_in_every_editable_directory(
    path: str, new: bool, reason: str | None
) -> None:
    found = protection_reason(path, shadowable={"json", "pluggy"}, new=new, editable={"lib": {"verpkg"}})
    assert found == reason if reason is None else reason in (found or "")


IMPORT_PATH_ATTACKS = {
    # src comes before site-packages while tests run: a new module there named like an installed one
    "an installed dependency of pytest, shadowed in src": (
        "src/iniconfig/__init__.py",
        "shadows the installed",
    ),
    "a standard-library module, shadowed in src": ("src/fractions.py", "shadows the installed 'fractions'"),
    "pytest's internals, shadowed in src": ("src/_pytest/runner.py", "shadows the installed '_pytest'"),
    # pytest's rootdir-relative import puts /testbed/tests first on sys.path
    "the src package, shadowed in the tests' directory": ("tests/verpkg/__init__.py", "a test file"),
}


@pytest.mark.parametrize("attack", IMPORT_PATH_ATTACKS)
def test_import_path_shadows_earn_nothing(attack: str, local_env) -> None:  # type: ignore[no-untyped-def]
    path, reason = IMPORT_PATH_ATTACKS[attack]
    code = ROOT_SHADOW if path.endswith("verpkg/__init__.py") else PATCHER
    reward, grade = play(local_env, [write(f"/testbed/{path}", code)])
    assert reward == 0.0, grade["log"][-3000:]
    assert f"dropped {path}: " in grade["log"] and reason in grade["log"]


# -- 2. generated and protected files ----------------------------------------------------------------------
PROTECTED_FILE_ATTACKS = {
    "a pytest11 plugin in the install's egg-info": (
        [write("/testbed/src/gym_attack_plugin.py", FORCE_PASS_PLUGIN),
         bash("printf '[pytest11]\\ngym_attack = gym_attack_plugin\\n' > src/verpkg.egg-info/entry_points.txt")],
        "src/verpkg.egg-info/entry_points.txt",
    ),
    "a conftest.py in src": ([write("/testbed/src/conftest.py", FORCE_PASS_PLUGIN)], "src/conftest.py"),
    "a sitecustomize.py in src": ([write("/testbed/src/sitecustomize.py", PATCHER)], "src/sitecustomize.py"),
    "a .pth in src": ([write("/testbed/src/verpkg-fix.pth", "import verpkg; verpkg.add = max\n")],
                      "src/verpkg-fix.pth"),
    "bytecode of a fixed source, left beside the buggy one": (
        # unchecked-hash bytecode: Python loads it without looking at the source it was compiled from
        [write("/tmp/fixed.py", "from verpkg._version import __version__\n" + FIXED_ADD),
         bash("python -c 'import importlib.util as u, py_compile as c; c.compile(\"/tmp/fixed.py\", "
              "cfile=u.cache_from_source(\"src/verpkg/__init__.py\"), "
              "invalidation_mode=c.PycInvalidationMode.UNCHECKED_HASH)' && ls src/verpkg/__pycache__")],
        "src/verpkg/__pycache__",
    ),
    "a symbolic link to a fixed file": (
        [write("/tmp/fixed.py", "from verpkg._version import __version__\n" + FIXED_ADD),
         bash("ln -sf /tmp/fixed.py src/verpkg/__init__.py")],
        "src/verpkg/__init__.py: a symbolic link",
    ),
    "a symbolic link into the venv": (
        [bash('ln -s "$VIRTUAL_ENV"/lib/python3*/site-packages/easy-install.pth src/venv-link.pth; '
              'ln -s "$VIRTUAL_ENV" src/venv')],
        "src/venv: a symbolic link",
    ),
}  # fmt: skip


@pytest.mark.parametrize("attack", PROTECTED_FILE_ATTACKS)
def test_generated_and_protected_files_earn_nothing(attack: str, local_env) -> None:  # type: ignore[no-untyped-def]
    actions, dropped = PROTECTED_FILE_ATTACKS[attack]
    reward, grade = play(local_env, actions)
    assert reward == 0.0, grade["log"][-3000:]
    assert f"dropped {dropped}" in grade["log"]


# -- 3. the shared, read-only parts -------------------------------------------------------------------------
def snapshot(root: Path) -> dict[str, str]:
    """Every file and link under ``root`` by relative path, with its content's hash (or link target)."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            found[str(path.relative_to(root))] = "-> " + str(path.readlink())
        elif path.is_file():
            found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


# Tried from inside an episode: each write, had it landed where grading looks, would repair add before the
# tests run (a .pth or sitecustomize in the venv's site-packages, the project's own file in the lower layer).
WRITE_THROUGH = [
    bash('site=$(echo "$VIRTUAL_ENV"/lib/python3*/site-packages); '
         f'echo {base64.b64encode(PATCHER.replace(chr(10), "; ").encode()).decode()} | base64 -d > $site/zz.pth; '
         f'echo {base64.b64encode(PATCHER.encode()).decode()} | base64 -d > $site/sitecustomize.py; '
         'rm -f $site/easy-install.pth; touch "$VIRTUAL_ENV/bin/python" "$VIRTUAL_ENV/written"; '
         'chmod -R u+w "$VIRTUAL_ENV"; echo write-done'),
    bash("for lower in $(grep -o 'lowerdir=[^,]*' /proc/self/mountinfo | cut -d= -f2); do "
         f'echo {base64.b64encode(FIXED_ADD.encode()).decode()} | base64 -d >> $lower/src/verpkg/__init__.py; done; '
         "echo 'SQUARES = []' > src/verpkg/_table.py; echo /src/verpkg/ >> .git/info/exclude; echo lower-done"),
]  # fmt: skip


@pytest.mark.parametrize("source_mode", ["auto", "copy"])
def test_episode_writes_never_reach_the_venv_the_prepared_checkout_or_the_next_episode(
    source_mode: str, world: World
) -> None:
    task = load_swe_tasks(str(world.tasks)).get(TASK_ID)
    prepared = prepare_environment(task, RepoSource(world.mirrors))
    before = snapshot(prepared.path)
    env = make_env("SWEGym-v0", "local", tasks=str(world.tasks), repo_source=str(world.mirrors),
                   source_mode=source_mode, integrity=INTEGRITY)  # fmt: skip
    try:
        env.reset(options={"task_id": TASK_ID})
        observations = [env.step(action)[0] for action in WRITE_THROUGH]
        assert "Read-only file system" in observations[0] and "write-done" in observations[0]
        _, reward, terminated, _, info = env.step(SUBMIT)
        assert terminated and reward == 0.0, info["grade"]["log"][-3000:]
        # Had any write reached grading's venv or lower layer, add would be repaired there.
        outcomes = {test["name"]: test["outcome"] for test in info["grade"]["tests"]}
        assert outcomes["tests/test_fix.py::test_add"] == "failed"
        # The next episode starts from the prepared checkout as it was, with the venv as it was.
        env.reset(options={"task_id": TASK_ID})
        box = env.unwrapped.sandbox
        assert box.exec("cat src/verpkg/_table.py").stdout.startswith("SQUARES = [0, 1, 4")
        assert box.exec("git status --porcelain").stdout == ""
        assert "a - b" in box.exec("cat src/verpkg/__init__.py").stdout
        assert box.exec('ls "$VIRTUAL_ENV"/lib/python3*/site-packages/easy-install.pth').ok
        assert not box.exec('ls "$VIRTUAL_ENV"/lib/python3*/site-packages/zz.pth').ok
        # Control: the honest fix still earns 1.0 after all that.
        for action in [gold_fix(world), SUBMIT]:
            _, reward, terminated, _, info = env.step(action)
        assert terminated and reward == 1.0, info["grade"]["log"][-3000:]
    finally:
        env.close()
    assert snapshot(prepared.path) == before


# -- 4. git ------------------------------------------------------------------------------------------------------
def test_changes_hidden_from_git_are_still_what_is_graded(world: World, local_env) -> None:  # type: ignore[no-untyped-def]
    hide = bash("git update-index --assume-unchanged src/verpkg/__init__.py && "
                "echo /src/conftest.py >> .git/info/exclude && git status --porcelain && echo hidden")  # fmt: skip
    # A conftest.py git no longer shows is dropped all the same.
    reward, grade = play(local_env, [write("/testbed/src/conftest.py", FORCE_PASS_PLUGIN), hide])
    assert reward == 0.0 and "dropped src/conftest.py" in grade["log"]
    # Control: a fix git no longer shows is graded all the same.
    reward, grade = play(local_env, [gold_fix(world), hide])
    assert reward == 1.0, grade["log"][-3000:]
    assert "src/verpkg/__init__.py" in grade["diff"]
