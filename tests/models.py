"""The tests' tiny models, in one place: what the fixtures load, and what `make test` builds in its set-up.

`python -m tests.models` builds them all (each a no-op when its content is already in ``.tmp/models``): the
tool caller is taught for minutes of CPU, which belongs in the set-up, beside the images, not under a test's
timeout. The fixtures call the same functions, so a test run without the set-up still finds (or builds) them,
once, whichever worker asks first (`gym_swe.rollout.tiny.built_once`).
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
MODELS = REPO_ROOT / ".tmp" / "models"
TOKENIZERS = REPO_ROOT.parent / "shared" / "data" / "tokenizers"


def tiny_model() -> Path:
    """A random tiny Llama with the real Qwen2.5 tokenizer and chat template, or, where the shared data is
    absent, with a small BPE tokenizer trained here."""
    from gym_swe.rollout.tiny import built_once, make_tiny_bpe_model, make_tiny_model

    if not (TOKENIZERS / "qwen2.5-instruct").is_dir():
        return make_tiny_bpe_model(MODELS)
    return built_once(
        MODELS / "tiny-qwen2.5", lambda out: make_tiny_model(TOKENIZERS / "qwen2.5-instruct", out)
    )


def tool_caller() -> Path:
    """The tiny model taught to answer with a bash tool call, in the prompts gym_swe renders and in those TRL
    renders with its environment class's methods (`gym_swe.rollout.tiny.make_tiny_tool_caller`)."""
    from gym_swe.integrations.trl import trl_tools
    from gym_swe.rollout.tiny import make_tiny_tool_caller

    return make_tiny_tool_caller(MODELS, other_tools=[trl_tools("CodeDebug-v0")])


def build_all() -> None:
    from gym_swe.rollout.tiny import make_tiny_bpe_model, make_tiny_bpe_tokenizer, make_tiny_trl_model

    for name, build in [
        ("tiny-bpe tokenizer", lambda: make_tiny_bpe_tokenizer(MODELS)),
        ("tiny-bpe model", lambda: make_tiny_bpe_model(MODELS)),
        ("tiny model", tiny_model),
        ("tiny TRL model", lambda: make_tiny_trl_model(MODELS)),
        ("tool caller", tool_caller),
    ]:
        print(f"{name}: {build()}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    build_all()
