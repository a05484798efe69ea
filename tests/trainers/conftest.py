"""Fixtures of the trainer's tests, and trainers/ on the import path: it is not a package, its modules import
each other by name, as they do when ``python trainers/grpo.py`` runs (the script's directory first on the
path), so the tests import them the same way (``import grpo``, ``import grpo_config``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

if str(REPO_ROOT / "trainers") not in sys.path:
    sys.path.insert(0, str(REPO_ROOT / "trainers"))


@pytest.fixture(scope="session")
def tiny_bpe_model() -> Path:
    """A tiny random Llama over a small BPE tokenizer (a 2,048-token vocabulary: a vowel is a likely token,
    so the toy env's reward has signal from the first step)."""
    pytest.importorskip("transformers")
    from gym_swe.rollout.tiny import make_tiny_bpe_model

    return make_tiny_bpe_model(REPO_ROOT / ".tmp" / "models")
