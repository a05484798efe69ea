"""Running trainers/grpo.py as a user runs it, for the tests: in a subprocess, and reading what it wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

from tests.conftest import REPO_ROOT

TOY = "toy_env:ToySay-v0"  # examples/toy_env.py
TRAINER = REPO_ROOT / "trainers" / "grpo.py"


def train(
    *flags: str,
    python: str = sys.executable,
    launcher: list[str] | None = None,
    env: dict[str, str] | None = None,
    timeout: int = 900,
) -> str:
    """Run the trainer with ``flags`` (the toy env importable); its stdout. Fails the test on an error."""
    command = [*(launcher or [python]), str(TRAINER), "--log_with", "none", *flags]
    paths = f"{REPO_ROOT}:{REPO_ROOT / 'examples'}"
    environment = {**os.environ, "PYTHONPATH": paths, "TOKENIZERS_PARALLELISM": "false", **(env or {})}
    done = subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True, env=environment, timeout=timeout
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    return done.stdout


def refused(*flags: str, env: dict[str, str] | None = None, timeout: int = 300) -> str:
    """Run the trainer with ``flags``, which it must refuse as a user meets it: exit 2 and one line, no
    traceback. That line."""
    command = [sys.executable, str(TRAINER), "--log_with", "none", *flags]
    paths = f"{REPO_ROOT}:{REPO_ROOT / 'examples'}"
    environment = {**os.environ, "PYTHONPATH": paths, "TOKENIZERS_PARALLELISM": "false", **(env or {})}
    done = subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True, env=environment, timeout=timeout
    )
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-6000:]
    said = [line for line in done.stderr.splitlines() if line.startswith("grpo.py:")]
    assert len(said) == 1 and "Traceback" not in done.stderr, done.stderr[-6000:]
    return said[0]


def metrics(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def weights(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(path / "model.safetensors"))


TOY_FLAGS = ["--env", TOY, "--max_turns", "2", "--max_new_tokens", "8", "--eval_every", "0"]
