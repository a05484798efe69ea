"""SWE task images (`gym_swe.tasks.images`) without docker: the Dockerfile a task gets, and what a failed
build says."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from gym_swe.errors import TaskError
from gym_swe.tasks import images
from gym_swe.tasks.images import BUILD_TOOLS, dockerfile
from gym_swe.tasks.swe import load_swe_tasks


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
