"""Shared fixtures. Real components only: a real bubblewrap jail, a real Docker daemon.

Without bubblewrap, a Docker daemon or Chromium the tests that need them are skipped, except where the
environment asks for them (`make test` sets GYM_SWE_REQUIRE_DOCKER=1 and GYM_SWE_REQUIRE_BWRAP=1, so in CI a
missing daemon is a failure, not a silent skip; GYM_SWE_REQUIRE_BROWSER=1 does the same for Chromium).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from gym_swe.sandbox import Limits, make_sandbox

pytest_plugins = ["tests.scheduling"]  # how the suite runs in parallel, and how its time is watched

# huggingface_hub sends telemetry from a thread of its own (transformers' Trainer asks it to), which resolves a
# host name there: on this offline machine a getaddrinfo in that thread once crashed a worker (SIGSEGV) while
# the main thread trained. The tests talk to no hub: it is off here, and in every process they start.
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


def _unavailable(what: str, flag: str, reason: str) -> None:
    if os.environ.get(flag) == "1":
        pytest.fail(f"{what} is required here ({flag}=1) but unavailable: {reason}")
    pytest.skip(f"{what} unavailable: {reason}")


def long_run_scale() -> float:
    """The share of their full size that the long runs play (the soak, the load test, every HumanEvalPack
    task): ``GYM_SWE_TEST_SCALE``, 1 (all of it) unless set. `make test` plays a quarter, every kind of
    episode still; the bench scripts (bench/redteam_report.py, make bench) play them whole."""
    raw = os.environ.get("GYM_SWE_TEST_SCALE", "1")
    try:
        scale = float(raw)
    except ValueError:
        scale = -1.0
    if not 0 < scale <= 1:
        raise pytest.UsageError(f"GYM_SWE_TEST_SCALE must be a number in (0, 1], got {raw!r}")
    return scale


def scaled(count: int) -> int:
    """``count`` at `long_run_scale`, at least 1."""
    return max(1, round(count * long_run_scale()))


def spread_sample(items: list, count: int) -> list:  # type: ignore[type-arg]
    """``count`` of ``items`` spread evenly over them (the first, then every len/count-th): the same sample
    every run, reaching every part of the list."""
    if count >= len(items):
        return list(items)
    return [items[(i * len(items)) // count] for i in range(count)]


def require_bwrap() -> None:
    if shutil.which("bwrap") is None:
        _unavailable("bubblewrap", "GYM_SWE_REQUIRE_BWRAP", "bwrap is not on PATH")


def require_browser() -> str:
    """The path of a headless-capable Chromium (Debian's chromium; `scripts/setup_system.sh --docker`
    installs it); skipped without one unless GYM_SWE_REQUIRE_BROWSER=1."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path is not None:
            return path
    _unavailable("Chromium (the viewer's browser test)", "GYM_SWE_REQUIRE_BROWSER", "no chromium on PATH")
    raise AssertionError("unreachable")  # _unavailable skips or fails


def require_docker() -> None:
    try:
        from gym_swe.sandbox.docker import BASE_IMAGE, docker_client

        client = docker_client()
        client.images.get(BASE_IMAGE)
    except Exception as error:
        _unavailable(
            "Docker (daemon and base image; `gym-swe images build`)", "GYM_SWE_REQUIRE_DOCKER", str(error)
        )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "sandbox_backend" in getattr(item, "fixturenames", ()):
            backend = item.callspec.params.get("sandbox_backend") if hasattr(item, "callspec") else None
            if backend == "docker":
                item.add_marker(pytest.mark.docker)
            elif backend == "local":
                item.add_marker(pytest.mark.bwrap)


@pytest.fixture(params=["local", "docker"])
def sandbox_backend(request: pytest.FixtureRequest) -> str:
    """Each test that takes this runs once per backend."""
    if request.param == "docker":
        require_docker()
    else:
        require_bwrap()
    return request.param


@pytest.fixture
def sandbox(sandbox_backend: str) -> Iterator:
    """A fresh sandbox of each backend, with small limits so containment tests are quick."""
    limits = Limits(memory_mb=512, processes=128, file_size_mb=64, tmp_mb=128)
    with make_sandbox(sandbox_backend, limits=limits) as box:
        yield box


@pytest.fixture
def shared_data() -> Path:
    """`../shared/data` beside the checkout; tests that need it skip cleanly when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared test data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    """A random tiny Llama with the real Qwen2.5 tokenizer and chat template, or, where the shared data is
    absent, with a small BPE tokenizer trained here (built once, kept in .tmp)."""
    pytest.importorskip("transformers")
    from tests import models

    return models.tiny_model()


@pytest.fixture(scope="session")
def vllm_server(tiny_model: Path) -> Iterator:
    """A real vLLM OpenAI-compatible server on CPU, serving the tiny model on loopback: one a session, for the
    rollout tests and the stack adapters' (tests/integrations)."""
    from tests.rollout.conftest import vllm_python
    from tests.rollout.vllm_server import VLLMServer

    server = VLLMServer(
        str(tiny_model),
        python=vllm_python(),
        max_model_len=4096,
        extra_args=["--dtype", "float32", "--enable-auto-tool-choice", "--tool-call-parser", "hermes"],
        env={"VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "2"},
    )
    yield server
    server.close()


def kill_jail(sandbox) -> None:  # type: ignore[no-untyped-def]
    """Kill a local sandbox's jail from outside, as a crash or an OOM killer would, and wait until it is gone
    (the kill is asynchronous: a command sent at once could still be answered)."""
    import signal
    import time

    process, jail_pid = sandbox._process, sandbox._jail_pid
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    deadline = time.monotonic() + 10
    while jail_pid is not None and Path(f"/proc/{jail_pid}").exists() and time.monotonic() < deadline:
        state = Path(f"/proc/{jail_pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        if state in ("Z", "X"):
            break
        time.sleep(0.005)
