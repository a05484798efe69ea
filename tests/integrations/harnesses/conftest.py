"""Fixtures of the harness tests: the tokenizer the scripted model writes with, and installed harnesses.

`installed` installs a harness (and Node) into gym_swe's cache the first time (``make test`` does it
before the suite; npm's cache makes it offline afterwards) and checks bubblewrap: every harness test runs its
CLI inside a sandbox. The helpers to drive a harness are in ``scripted.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("transformers")

from gym_swe.integrations.harnesses.base import Harness
from tests.rollout.conftest import TOKENIZERS
from tests.rollout.test_proxy import tokenizer_for


@pytest.fixture(scope="session")
def tokenizer():  # type: ignore[no-untyped-def]
    """Qwen2.5's tokenizer and chat template from ../shared, else the small BPE one trained here."""
    return tokenizer_for("qwen2.5-instruct" if (TOKENIZERS / "qwen2.5-instruct").is_dir() else "tiny-bpe")


@pytest.fixture(scope="session")
def installed() -> Callable[[str], Harness]:
    """``installed(name)``: the harness called ``name``, installed (a no-op when it is already)."""
    from gym_swe.integrations.harnesses.install import install_harness
    from gym_swe.integrations.harnesses.registry import harness_named

    def install(name: str) -> Harness:
        harness = harness_named(name)
        install_harness(harness, log=lambda line: None)
        return harness

    return install
