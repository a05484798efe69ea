"""The deploy image (gym_swe.integrations.openenv_image): built offline from the base image (``make image``
builds it; here it is up to date by its recipe), started as a user starts it, an episode played in it with the
local sandbox (a bubblewrap jail inside the container) and with the docker sandbox (the host's Docker socket),
and its OpenEnv package checked by OpenEnv's own validator."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import require_docker
from tests.serve.conftest import TASK, honest_fix, tool_call
from tests.serve.server import serve_python

TOKEN = "image-test-token"


@pytest.fixture(scope="module")
def image() -> str:
    require_docker()
    from gym_swe.integrations.openenv_image import build_serve_image

    return build_serve_image(log=lambda line: None)


def start(image: str, environment: dict[str, str], options: tuple[str, ...] = ()) -> Any:
    """``docker run -d`` as a user types it (the CLI: ``systempaths=unconfined`` is the CLI's, which the
    Engine API spells as empty masked and read-only paths), the port published on loopback."""
    from gym_swe.sandbox.docker import docker_client

    settings = [word for key, value in environment.items() for word in ("-e", f"{key}={value}")]
    done = subprocess.run(["docker", "run", "-d", "-p", "127.0.0.1::8000", *settings, *options, image],
                          capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    return docker_client().containers.get(done.stdout.strip())


def url_of(container: Any) -> str:
    """The container's published address, once its server answers /health."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        container.reload()
        if container.status == "exited":
            raise AssertionError(f"the container exited:\n{container.logs().decode()[-3000:]}")
        bound = (container.ports.get("8000/tcp") or [{}])[0].get("HostPort")
        if bound:
            try:
                if httpx.get(f"http://127.0.0.1:{bound}/health", timeout=2).status_code == 200:
                    return f"http://127.0.0.1:{bound}"
            except httpx.TransportError:
                pass
        time.sleep(0.5)
    raise AssertionError(f"the container did not serve within 120 s:\n{container.logs().decode()[-3000:]}")


@pytest.fixture
def stopped_after() -> Iterator[list[Any]]:
    containers: list[Any] = []
    yield containers
    for container in containers:
        container.remove(force=True)


@pytest.mark.parametrize("sandbox", ["local", "docker"])
def test_the_image_serves_episodes_graded_in_its_sandboxes(
    image: str, sandbox: str, stopped_after: list
) -> None:  # type: ignore[type-arg]
    from gym_swe.integrations.openenv_image import RUN_OPTIONS
    from gym_swe.serve.client import ServedEnv, ServerRefused

    environment = {
        "GYM_SWE_SERVE_TOKEN": TOKEN,
        "GYM_SWE_ENV_KWARGS": json.dumps({"max_turns": 6, "sandbox": sandbox}),
    }
    # The local sandbox: its jail inside the container, with the options RUN_OPTIONS names; the docker
    # sandbox: sibling containers through the host's daemon.
    options = RUN_OPTIONS if sandbox == "local" else ("-v", "/var/run/docker.sock:/var/run/docker.sock")
    container = start(image, environment, options)
    stopped_after.append(container)
    url = url_of(container)
    assert httpx.get(f"{url}/metadata").status_code == 401
    with pytest.raises(ServerRefused, match="bearer token"):
        ServedEnv(url, token="wrong")
    with ServedEnv(url, token=TOKEN) as env:
        assert env.env_id == "CodeDebug-v0" and env.max_turns == 6
        env.reset(options={"task_id": TASK})
        looked, *_ = env.step(tool_call("bash", command="ls && id -u"))
        assert looked.splitlines() == [
            "solution.py",
            "test_solution.py",
            "1000" if sandbox == "local" else "0",
        ]
        env.step(honest_fix())
        _, reward, terminated, _, info = env.step(tool_call("submit"))
        assert (reward, terminated, info["grade"]["resolved"]) == (1.0, True, True)
    container.stop(timeout=30)  # SIGTERM: the server closes its sessions and exits
    assert container.wait(timeout=60)["StatusCode"] in (0, 143)


def test_the_image_refuses_to_listen_without_a_token(image: str, stopped_after: list) -> None:  # type: ignore[type-arg]
    container = start(image, {})
    stopped_after.append(container)
    assert container.wait(timeout=120)["StatusCode"] == 2
    lines = container.logs().decode().strip().splitlines()
    assert lines[-1].startswith("gym-swe serve: error: --host 0.0.0.0 exposes the server beyond this machine")


def test_its_openenv_package_passes_openenvs_own_checks() -> None:
    """openenv.yaml through OpenEnv's manifest validator, and the package's deployment layout (server/app.py
    with main, the server entry point, the dependency on openenv) through OpenEnv's own check."""
    from gym_swe.integrations.openenv_image import layout

    openenv = str(Path(serve_python()).parent / "openenv")
    done = subprocess.run([openenv, "validate", str(layout()), "--level", "static", "--skip-build"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0 and "PASS  static.manifest" in done.stdout, done.stdout + done.stderr
    code = ("import json, sys; from pathlib import Path; from openenv.cli._validation import "
            "validate_multi_mode_deployment as check; print(json.dumps(check(Path(sys.argv[1]))))")  # fmt: skip
    done = subprocess.run(
        [serve_python(), "-c", code, str(layout())], capture_output=True, text=True, timeout=120
    )
    ok, issues = json.loads(done.stdout)
    # uv.lock: the one thing missing, as gym_swe's wheels come from this checkout (no lock can name them).
    assert issues == ["Missing uv.lock - run 'uv lock' to generate it"] and not ok
