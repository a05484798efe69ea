"""A vLLM OpenAI-compatible server for the tests and benchmarks: started in a subprocess of vLLM's own
environment, on loopback, stopped on exit. Product code never starts a server: a ``vllm-server`` generator
talks to one the user runs (the README's ``vllm serve`` command).
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from gym_swe.rollout.generators.vllm_local import WORKER_EXTENSION


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class VLLMServer:
    """A vLLM OpenAI-compatible server in a subprocess, on loopback, stopped on exit.

    ``python`` is the interpreter of the environment vLLM is installed in (vLLM pins its own torch and
    transformers, so it often lives in a virtual environment of its own). ``sync_extension``: load
    gym_swe's worker extension into the server (``--worker-extension-cls``), which weight sync needs on
    CPU (see `gym_swe.rollout.generators.vllm_local.refresh_tied_head`); that environment must then
    have gym_swe installed too.
    """

    def __init__(
        self,
        model: str,
        python: str = "python",
        port: int | None = None,
        max_model_len: int = 4096,
        extra_args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        startup_timeout: float = 600,
        sync_extension: bool = True,
    ) -> None:
        self.model = model
        self.port = port or free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(tempfile.mkstemp(prefix="gym_swe-vllm-", suffix=".log")[1])
        command = [
            python,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            model,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--max-model-len",
            str(max_model_len),
            "--logprobs-mode",
            "processed_logprobs",
            "--served-model-name",
            model,
            *(["--worker-extension-cls", WORKER_EXTENSION] if sync_extension else []),
            *extra_args,
        ]
        environment = {**os.environ, "VLLM_SERVER_DEV_MODE": "1", **(env or {})}
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=log, env=environment, start_new_session=True
            )
        self._wait(startup_timeout)

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"the vLLM server exited ({self.process.returncode}):\n{self.log()[-4000:]}"
                )
            try:
                if httpx.get(self.base_url + "/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass  # not listening yet
            time.sleep(1)
        self.close()
        raise RuntimeError(f"the vLLM server did not start within {timeout:.0f} s:\n{self.log()[-4000:]}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait()

    def __enter__(self) -> VLLMServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
