"""Rollout fixtures: a tiny model over a real tokenizer, and real vLLM (CPU) in its own environment.

vLLM pins its own torch and transformers, so it lives in a virtual environment of its own: `make test` makes
it at .venv-vllm and sets GYM_SWE_VLLM_PYTHON (and GYM_SWE_REQUIRE_VLLM=1, so that in CI a missing vLLM is a
failure, not a skip). The ``tiny_model`` and ``vllm_server`` fixtures are in tests/conftest.py: the stack
adapters' tests (tests/integrations) use the same server, started once a session.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.models import MODELS, TOKENIZERS  # noqa: F401  (the rollout tests import them from here)


def vllm_python() -> str:
    configured = os.environ.get("GYM_SWE_VLLM_PYTHON") or str(REPO_ROOT / ".venv-vllm" / "bin" / "python")
    if not Path(configured).exists():
        message = f"vLLM's environment not found at {configured} (make test creates .venv-vllm)"
        if os.environ.get("GYM_SWE_REQUIRE_VLLM") == "1":
            pytest.fail(message)
        pytest.skip(message)
    # Absolute (not resolved: a venv's python is a link out of it): vLLM may start from another directory.
    return str(Path(configured).absolute())


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
