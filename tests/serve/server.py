"""``gym-swe serve`` for the tests and benchmarks: started in a subprocess of the serve environment
(.venv-serve, where OpenEnv is installed), on loopback, stopped on exit with SIGTERM as a user would.

Each server keeps its local sandboxes' workspaces in a folder of its own (``GYM_SWE_WORKSPACES``), so a test
can see that a closed, reaped or shut-down session left nothing behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO_ROOT
from tests.rollout.vllm_server import free_port


def serve_python() -> str:
    """The interpreter of the serve environment (``make test`` sets GYM_SWE_SERVE_PYTHON and
    GYM_SWE_REQUIRE_SERVE=1, so that in CI a missing one is a failure, not a skip)."""
    configured = os.environ.get("GYM_SWE_SERVE_PYTHON") or str(REPO_ROOT / ".venv-serve" / "bin" / "python")
    if not Path(configured).exists():
        message = f"the serve environment is not at {configured} (make serve-env creates .venv-serve)"
        if os.environ.get("GYM_SWE_REQUIRE_SERVE") == "1":
            pytest.fail(message)
        pytest.skip(message)
    # Absolute (not resolved: a venv's python is a link out of it): servers start from other directories.
    return str(Path(configured).absolute())


class EnvServer:
    """``gym-swe serve ENV KWARGS... FLAGS...`` in a subprocess; ``url`` once it answers ``/health``."""

    def __init__(
        self,
        env_id: str = "CodeDebug-v0",
        kwargs: Sequence[str] = (),
        flags: Sequence[str] = (),
        python: str | None = None,
        env: dict[str, str] | None = None,
        startup_timeout: float = 120,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.workspaces = Path(tempfile.mkdtemp(prefix="gym_swe-serve-ws-"))
        self.log_path = Path(tempfile.mkstemp(prefix="gym_swe-serve-", suffix=".log")[1])
        command = [python or serve_python(), "-m", "gym_swe.cli", "serve", env_id, *kwargs,
                   "--port", str(self.port), *flags]  # fmt: skip
        environment = {**os.environ, "GYM_SWE_WORKSPACES": str(self.workspaces), **(env or {})}
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=log, env=environment, start_new_session=True, cwd=REPO_ROOT
            )
        self._wait(startup_timeout)

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gym-swe serve exited ({self.process.returncode}):\n{self.log()[-4000:]}")
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass  # not listening yet
            time.sleep(0.2)
        self.close()
        raise RuntimeError(f"gym-swe serve did not start within {timeout:.0f} s:\n{self.log()[-4000:]}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def alive(self) -> bool:
        return self.process.poll() is None

    def leftovers(self) -> list[str]:
        """What the server's sandboxes left in its workspace folder."""
        return sorted(path.name for path in self.workspaces.iterdir())

    def stop(self, how: int = signal.SIGTERM) -> int:
        """Stop it (SIGTERM: gracefully, closing every session; SIGKILL: as a crash); its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(how)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        return self.process.returncode

    def close(self) -> None:
        self.stop()
        if self.process.poll() is not None:  # its process group (jails of a killed server) goes too
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def __enter__(self) -> EnvServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
