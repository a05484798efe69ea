"""Rollout fixtures: a tiny model over a real tokenizer, and real vLLM (CPU) in its own environment.

vLLM pins its own torch and transformers, so it lives in a virtual environment of its own: `make test` makes
it at .venv-vllm and sets GYM_SWE_VLLM_PYTHON (and GYM_SWE_REQUIRE_VLLM=1, so that in CI a missing vLLM is a
failure, not a skip).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, SHARED_DATA

TOKENIZERS = SHARED_DATA / "tokenizers"
MODELS = REPO_ROOT / ".tmp" / "models"


def vllm_python() -> str:
    configured = os.environ.get("GYM_SWE_VLLM_PYTHON") or str(REPO_ROOT / ".venv-vllm" / "bin" / "python")
    if not Path(configured).exists():
        message = f"vLLM's environment not found at {configured} (make test creates .venv-vllm)"
        if os.environ.get("GYM_SWE_REQUIRE_VLLM") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return configured


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    """A random tiny Llama with the real Qwen2.5 tokenizer and chat template, or, where the shared data is
    absent, with a small BPE tokenizer trained here (built once, kept in .tmp)."""
    pytest.importorskip("transformers")
    from gym_swe.rollout.tiny import make_tiny_bpe_model, make_tiny_model

    if not (TOKENIZERS / "qwen2.5-instruct").is_dir():
        return make_tiny_bpe_model(MODELS)
    path = MODELS / "tiny-qwen2.5"
    if not (path / "model.safetensors").exists():
        make_tiny_model(TOKENIZERS / "qwen2.5-instruct", path)
    return path


@pytest.fixture(scope="session")
def vllm_server(tiny_model: Path) -> Iterator:
    """A real vLLM OpenAI-compatible server on CPU, serving the tiny model on loopback."""
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


def run_vllm_inprocess_check(model: Path, scratch: Path, mode: str = "default") -> dict:
    """vllm_inprocess_check.py in vLLM's own environment (``mode``: "default" or "chunked"): its report."""
    script = Path(__file__).with_name("vllm_inprocess_check.py")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "2"}
    result = subprocess.run([vllm_python(), str(script), str(model), str(scratch), mode], capture_output=True,
                            text=True, env=env, timeout=900)  # fmt: skip
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, result.stdout[-3000:] + result.stderr[-5000:]
    return json.loads(lines[-1][len("RESULT ") :])


@pytest.fixture(scope="session")
def vllm_inprocess_report(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One run of the in-process ``vllm`` generator as made by default (an engine start costs ~30 s)."""
    return run_vllm_inprocess_check(tiny_model, tmp_path_factory.mktemp("vllm"))
