"""Fixtures of the trainer's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT


@pytest.fixture(scope="session")
def tiny_bpe_model() -> Path:
    """A tiny random Llama over a small BPE tokenizer (a 2,048-token vocabulary: a vowel is a likely token,
    so the toy env's reward has signal from the first step)."""
    pytest.importorskip("transformers")
    from gym_swe.rollout.tiny import make_tiny_bpe_model

    return make_tiny_bpe_model(REPO_ROOT / ".tmp" / "models")
