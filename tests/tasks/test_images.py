"""SWE task images (`gym_swe.tasks.images`): the Dockerfile a task gets, what a failed build says (without
docker), and the task's own Python in its image (real docker, skipped without it)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from gym_swe.errors import TaskError
from gym_swe.tasks import images
from gym_swe.tasks.images import BUILD_TOOLS, VENV, ImagePython, dockerfile, image_python, recipe
from gym_swe.tasks.interpreters import find_interpreter
from gym_swe.tasks.repos import RepoSource
from gym_swe.tasks.swe import load_swe_tasks
from tests.conftest import require_docker
from tests.tasks.local_repos import record, verpkg_world, write_records


def task_with(tmp_path: Path, environment: dict) -> object:
    row = {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "a" * 40, "patch": "", "test_patch": "",
           "problem_statement": "x", "FAIL_TO_PASS": ["t.py::test_a"], "PASS_TO_PASS": [],
           "environment": environment}  # fmt: skip
    path = tmp_path / f"{len(list(tmp_path.iterdir()))}.jsonl"
    path.write_text(json.dumps(row) + "\n")
    return load_swe_tasks(str(path)).get("o__r-1")


def test_a_task_image_that_installs_anything_gets_a_compiler_first(tmp_path: Path) -> None:
    """SWE-bench's images have build-essential; a requirement PyPI has as an sdist only (Django's
    pywatchman) is built from it. Before the venv's packages and the install commands, and only then."""
    installing = dockerfile(task_with(tmp_path, {"install": ["python -m pip install -r req.txt"]}), "base")
    lines = installing.splitlines()
    assert f"RUN {BUILD_TOOLS}" in lines
    assert lines.index(f"RUN {BUILD_TOOLS}") < lines.index("RUN python -m pip install -r req.txt")
    assert f"RUN {BUILD_TOOLS}" in dockerfile(task_with(tmp_path, {"packages": ["six"]}), "base").splitlines()
    assert BUILD_TOOLS not in dockerfile(task_with(tmp_path, {}), "base")
    # an image that has a compiler already skips apt; one whose apt fails is still built, saying so
    assert (
        BUILD_TOOLS.startswith("if ! command -v cc >/dev/null; then")
        and "|| echo 'gym_swe: no C" in BUILD_TOOLS
    )


def test_a_locale_the_task_names_is_made_in_its_image(tmp_path: Path) -> None:
    """SWE-bench's Django 3.0-3.2 run with ``LANG=en_US.UTF-8`` (Python 3.6 reads files as ASCII under a
    locale that is not there); the base image has C.UTF-8 only."""
    variables = {"LANG": "en_US.UTF-8", "LC_ALL": "en_US.UTF-8", "LANGUAGE": "en_US:en"}
    lines = dockerfile(task_with(tmp_path, {"env": variables}), "base").splitlines()
    made = [line for line in lines if "localedef" in line]
    assert made == ["RUN " + images.LOCALE.format(name="en_US", locale="en_US.UTF-8")]
    assert lines.index(made[0]) < lines.index('ENV LANG="en_US.UTF-8"')
    assert "localedef" not in dockerfile(task_with(tmp_path, {"env": {"LANG": "C.UTF-8"}}), "base")


def test_an_install_from_a_conda_file_has_its_reader_and_the_setup_commit_in_the_image(
    tmp_path: Path,
) -> None:
    """SWE-bench's xarray and matplotlib install from a conda file read at the environment_setup_commit: the
    image has gym_swe's reader and that commit's tree where the local prepare jail has them, while the
    install runs, and not after it (that commit may hold the fix)."""
    from gym_swe.tasks.conda_env import JAIL_PATH, SETUP_COMMIT_TREE

    install = (
        f"python {JAIL_PATH} {SETUP_COMMIT_TREE}/environment.yml > /tmp/r.txt && pip install -r /tmp/r.txt"
    )
    task = task_with(tmp_path, {"install": [install, "python -m pip install -e ."]})
    lines = dockerfile(task, "base").splitlines()
    at = lines.index(f"RUN {install}")
    assert lines[at - 2 : at] == [f"COPY conda_env.py {JAIL_PATH}", f"COPY setup_commit {SETUP_COMMIT_TREE}"]
    assert lines[at + 2] == f"RUN rm -rf {JAIL_PATH} {SETUP_COMMIT_TREE}"
    assert "setup_commit" not in dockerfile(task_with(tmp_path, {"install": ["pip install ."]}), "base")


def test_a_task_that_rebuilds_keeps_its_build_requirements_in_the_image(tmp_path: Path) -> None:
    """The offline rebuild in the grading sandbox (astropy's, scikit-learn's ``build_ext --inplace``) imports
    the build requirements pip's isolated build threw away: the image's venv keeps them, as a local one."""
    from gym_swe.tasks.environments import build_requirement_commands

    environment = {
        "install": ["python -m pip install -e ."],
        "rebuild": ["python setup.py build_ext --inplace"],
    }
    lines = dockerfile(
        task_with(tmp_path, environment), "b", rebuild_requires=("Cython<3", "numpy")
    ).splitlines()
    [kept] = build_requirement_commands(f"{VENV}/bin/python", ["Cython<3", "numpy"])
    assert lines.index(f"RUN {kept}") == lines.index("RUN python -m pip install -e .") + 1
    assert "Cython" not in dockerfile(
        task_with(tmp_path, {"install": ["pip install ."]}), "b", rebuild_requires=("Cython",)
    )


def test_a_failed_task_image_build_says_what_failed_with_the_build_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from docker.errors import BuildError

    log = [{"stream": "Step 5/9 : RUN pip install -r py3.txt\n"},
           {"stream": "error: [Errno 2] No such file or directory: 'x86_64-linux-gnu-gcc'\n"},
           {"error": "The command '/bin/sh -c pip install -r py3.txt' returned a non-zero code: 1"}]  # fmt: skip

    def build(**_: object) -> None:
        raise BuildError("The command '/bin/sh -c pip install -r py3.txt' returned a non-zero code: 1", log)

    client = SimpleNamespace(
        images=SimpleNamespace(get=lambda _: SimpleNamespace(id="sha256:b"), build=build)
    )
    monkeypatch.setattr(images, "docker_client", lambda: client)
    monkeypatch.setattr(images, "existing_recipe", lambda _: None)
    (tmp_path / "repo").mkdir()
    monkeypatch.setattr(images, "checkout", lambda *_: tmp_path / "repo")
    task = task_with(tmp_path, {"install": ["pip install -r py3.txt"]})
    with pytest.raises(TaskError) as raised:
        images.build_task_image(task, log=lambda _: None)
    message = str(raised.value)
    assert message.startswith("building gym-swe-task:o__r-1 failed: The command '/bin/sh -c pip install")
    assert "No such file or directory: 'x86_64-linux-gnu-gcc'" in message


def test_a_records_image_that_is_not_here_is_one_lines_error_naming_the_way_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SWE-bench record names its official image (``image``); with no registry reachable, grading it on
    docker raised docker-py's ImageNotFound out of `stripped_image`, a traceback that took `gym-swe
    validate` down. It is the sandbox's one-line error now, saying how to get an image."""
    from docker.errors import APIError, ImageNotFound

    from gym_swe.errors import SandboxUnavailableError

    def missing(_: str) -> None:
        raise ImageNotFound("no such image")

    def pull(_: str) -> None:
        raise APIError(
            "pull access denied", explanation="dial tcp: lookup registry-1.docker.io: no such host"
        )

    monkeypatch.setattr(images, "docker_client", lambda: SimpleNamespace(images=SimpleNamespace(get=missing,
                                                                                             pull=pull)))  # fmt: skip
    task = task_with(tmp_path, {})
    with pytest.raises(SandboxUnavailableError) as raised:
        images.stripped_image(task, "swebench/sweb.eval.x86_64.o_1776_r-1:latest", log=lambda _: None)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(
        "o__r-1: Docker image 'swebench/sweb.eval.x86_64.o_1776_r-1:latest' is not here and pulling it failed "
        "(dial tcp: lookup registry-1.docker.io: no such host)"
    )
    assert (
        "gym-swe images build --tasks SOURCE --task-id o__r-1" in message
        and "image_naming='gym-swe'" in message
    )


def test_validate_takes_the_image_naming(monkeypatch: pytest.MonkeyPatch) -> None:
    """``gym-swe validate --sandbox docker --image-naming gym-swe``: SWE-bench records graded in the images
    `gym-swe images build --tasks` made, whatever image the records name."""
    import gym_swe.validate
    from gym_swe.cli import main
    from gym_swe.errors import ConfigError

    made: list[dict] = []

    class Made(Exception):
        pass

    def make(env_id: str, **kwargs: object) -> None:
        made.append(kwargs)
        raise Made

    monkeypatch.setattr(gym_swe.validate.gymnasium, "make", make)
    with pytest.raises(Made):
        main(["validate", "--env", "SWEGym-v0", "--tasks", "t.jsonl", "--sandbox", "docker",
              "--image-naming", "gym-swe"])  # fmt: skip
    assert made[-1] == {"tasks": "t.jsonl", "sandbox": "docker", "image_naming": "gym-swe"}
    with pytest.raises(Made):
        gym_swe.validate.validate("SWEGym-v0", tasks="t.jsonl")
    assert "image_naming" not in made[-1]
    with pytest.raises(ConfigError, match="image_naming applies to SWEGym-v0"):
        gym_swe.validate.validate("CodeDebug-v0", image_naming="gym-swe")


# -- the task's own Python ----------------------------------------------------------------------------------
PY39 = ImagePython(executable="/opt/py/3.9.18/bin/python3.9", prefix="/opt/py/3.9.18", version=(3, 9, 18),
                   libraries=("libffi8", "libssl3"), fingerprint="f" * 16)  # fmt: skip


def test_a_task_that_wants_another_python_copies_it_and_makes_its_venv_with_it(tmp_path: Path) -> None:
    """The base image's python3 is 3.11: a task of Python 3.9 gets the host's 3.9 at the same path, the
    Debian packages of its libraries, a check that it runs, and a venv of its own with a pinned pytest
    (the base image's pytest is 3.11's); a task of 3.11 or of no version keeps the base image's."""
    task = task_with(tmp_path, {"python": "3.9", "packages": ["six"]})
    lines = dockerfile(task, "base", python=PY39).splitlines()
    assert lines[:5] == [
        "FROM base",
        "COPY repo /testbed",
        "COPY python /opt/py/3.9.18",
        "RUN dpkg -s libffi8 libssl3 >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq "
        "--no-install-recommends libffi8 libssl3 >/dev/null && rm -rf /var/lib/apt/lists/*)",
        f'RUN /opt/py/3.9.18/bin/python3.9 -c "{images.PYTHON_CHECK}" && /opt/py/3.9.18/bin/python3.9 -m venv '
        f"{VENV}",
    ]
    assert "--system-site-packages" not in "\n".join(lines)
    assert (
        f"RUN {VENV}/bin/python -m pip install --quiet --disable-pip-version-check six pytest==8.3.5" in lines
    )
    # Python < 3.7 bundles a pip too old for today's wheels, as in local venvs
    old = ImagePython("/p/bin/python3.6", "/p", (3, 6, 15), (), "0" * 16)
    assert "pip install --quiet --disable-pip-version-check --upgrade pip" in dockerfile(
        task, "b", python=old
    )
    # the repository that is pytest installs its own
    assert "pytest==" not in dockerfile(task, "b", python=PY39, pytest_is_the_repository=True)
    for same in ({"python": "3.11"}, {}):
        assert image_python(task_with(tmp_path, same)) is None
    assert f"RUN python3 -m venv --system-site-packages {VENV}" in dockerfile(task_with(tmp_path, {}), "b")


def test_the_recipe_holds_the_interpreter(tmp_path: Path) -> None:
    """A rebuilt interpreter at the same path (another hash of its executable) is a new image."""
    task = task_with(tmp_path, {"python": "3.9"})
    rebuilt = ImagePython(**{**PY39.__dict__, "fingerprint": "e" * 16})
    assert (
        len({recipe(task, "sha256:b", PY39), recipe(task, "sha256:b", rebuilt), recipe(task, "sha256:b")})
        == 3
    )


def test_a_python_this_host_lacks_fails_the_build_in_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "no-pyenv"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # no uv either
    with pytest.raises(TaskError) as raised:
        image_python(task_with(tmp_path, {"python": "3.1"}))
    message = str(raised.value)
    assert "\n" not in message and message.startswith("o__r-1: its image needs Python 3.1: Python 3.1 is not")


def other_python() -> str:
    """A version of Python other than the base image's that this host has outside /usr (pyenv's)."""
    for version in ("3.9", "3.8", "3.10", "3.12", "3.7"):
        try:
            if find_interpreter(version).prefix is not None:
                return version
        except TaskError:
            continue
    pytest.skip("no Python other than 3.11 outside /usr here (pyenv or uv)")


def test_a_task_image_runs_the_python_its_environment_wants(tmp_path: Path) -> None:
    """Real docker: the image of a task of Python 3.9 (or another version this host has) runs that Python
    from its venv, with the standard library's compiled modules loading and its pinned pytest running a test; built
    again, it is up to date."""
    require_docker()
    from gym_swe.sandbox.docker import DockerSandbox, docker_client

    version = other_python()
    with verpkg_world(tmp_path) as world:
        rows = [record("acme__verpkg-py", world.base, world.gold, world.test_patch,
                       environment={"python": version})]  # fmt: skip
        task = load_swe_tasks(str(write_records(tmp_path / "py.jsonl", rows))).get("acme__verpkg-py")
        image = images.build_task_image(task, RepoSource(world.mirrors), log=lambda _: None)
        try:
            with DockerSandbox(image=image, workdir="/testbed", pull=False) as box:
                shown = box.exec(
                    "python -c 'import sys, ssl, sqlite3; print(sys.prefix, *sys.version_info[:2])'"
                )
                tests = box.exec("printf 'import sys\\ndef test_v():\\n    assert sys.version_info[:2] == (%s)\\n' "
                                 f"'{version.replace('.', ', ')}' > /tmp/test_v.py && python -m pytest -q -p "
                                 "no:cacheprovider /tmp/test_v.py")  # fmt: skip
            assert shown.stdout.split() == [VENV, *version.split(".")], shown.output
            assert tests.exit_code == 0 and "1 passed" in tests.stdout, tests.output
            assert images.build_task_image(task, RepoSource(world.mirrors), log=lambda _: None) == image
        finally:
            docker_client().images.remove(image, force=True)


def test_a_dated_environments_image_names_its_date_and_takes_the_index_as_an_argument(tmp_path: Path) -> None:
    dated = dockerfile(task_with(tmp_path, {"packages": ["six"], "index_date": "2024-06-01"}), "base")
    today = dockerfile(task_with(tmp_path, {"packages": ["six"]}), "base")
    assert 'LABEL gym_swe.index_date="2024-06-01"' in dated and "ARG PIP_INDEX_URL" in dated
    assert "index_date" not in today and "ARG PIP_INDEX_URL" not in today


def test_a_dated_environments_image_is_built_against_the_index_of_its_date(tmp_path: Path) -> None:
    """Real docker and PyPI: the image's pip resolves as of the date (six 1.16.0, not 1.17.0 of 2024-12), and
    the pytest the image's Python gets pinned (8.3.5, of 2025) is served though it is later."""
    require_docker()
    from gym_swe.sandbox.docker import DockerSandbox, docker_client

    version = other_python()
    with verpkg_world(tmp_path) as world:
        environment = {"python": version, "packages": ["six"], "index_date": "2024-06-01"}
        rows = [
            record("acme__verpkg-dated", world.base, world.gold, world.test_patch, environment=environment)
        ]
        task = load_swe_tasks(str(write_records(tmp_path / "d.jsonl", rows))).get("acme__verpkg-dated")
        image = images.build_task_image(task, RepoSource(world.mirrors), log=lambda _: None)
        try:
            with DockerSandbox(image=image, workdir="/testbed", pull=False) as box:
                shown = box.exec("python -c 'import six, pytest; print(six.__version__, pytest.__version__)'")
            assert shown.stdout.split() == ["1.16.0", "8.3.5"], shown.output
        finally:
            docker_client().images.remove(image, force=True)
