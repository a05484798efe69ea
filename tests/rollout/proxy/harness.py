"""What the dialect tests share: a scripted model behind a real proxy, the tool every turn calls in each
dialect's schema, and the token-exactness the trajectory must have whichever dialect the harness spoke.

The harness side is always a real client SDK (``openai``, ``anthropic``, ``google-genai``): each test builds
its next request from the SDK's own response objects, as a harness does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from gym_swe.rollout.chat import ChatFormat
from gym_swe.rollout.generators.base import SamplingParams
from gym_swe.rollout.proxy import ProxyServer
from gym_swe.rollout.proxy.recorder import sampled_ids
from gym_swe.rollout.trajectory import Trajectory
from tests.rollout.conftest import TOKENIZERS
from tests.rollout.test_proxy import RecordingGenerator, tokenizer_for

SYSTEM, TASK = "You fix bugs.", "Fix solution.py."
PARAMETERS = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
BASH = {
    "type": "function",
    "function": {"name": "bash", "description": "Run a bash command", "parameters": PARAMETERS},
}
THINK = "<think>\nThe test fails; look first.\n</think>\n\n"
REASONING = "The test fails; look first."


def call_text(step: int, think: str = "") -> str:
    """A turn calling bash, as a Hermes-format model (Qwen) writes it; "step N" tells the script where it is."""
    call = {"name": "bash", "arguments": {"command": f"ls # step {step}"}}
    return f"{think}<tool_call>\n{json.dumps(call)}\n</tool_call>"


def script(calls: int, think: str = "") -> list[str]:
    """``calls`` turns calling bash, then one that answers in text."""
    return [call_text(step, think) for step in range(calls)] + [f"Fixed it # step {calls}"]


def default_tokenizer() -> Any:
    """The real Qwen2.5 tokenizer where the shared data is, else the small one trained here."""
    return tokenizer_for("qwen2.5-instruct" if (TOKENIZERS / "qwen2.5-instruct").is_dir() else "tiny-bpe")


@contextmanager
def serving(
    tokenizer: Any, turns: list[str], **options: Any
) -> Iterator[tuple[ProxyServer, RecordingGenerator]]:
    generator = RecordingGenerator(tokenizer, turns, **options)
    with ProxyServer(generator, SamplingParams(max_tokens=256), max_model_len=8192) as proxy:
        yield proxy, generator


def assert_token_exact(trajectory: Trajectory, generator: RecordingGenerator, turns: int) -> None:
    """The trajectory holds exactly the generator's samples, each turn's prompt is the trajectory up to that
    turn, and each later prompt extends the one before it and what the model sampled (a bridge: nothing that
    was sampled was re-tokenized)."""
    assert (len(trajectory.turns), trajectory.forks, trajectory.segment_count) == (turns, 0, 1)
    assert sampled_ids(trajectory) == generator.sampled and len(generator.sampled) == turns
    for prompt, turn in zip(generator.prompts, trajectory.turns, strict=True):
        assert prompt == trajectory.token_ids[: turn.start]
    for before, after, sampled in zip(generator.prompts, generator.prompts[1:], generator.sampled):
        assert after[: len(before) + len(sampled)] == before + sampled
    for turn in trajectory.turns:
        assert trajectory.loss_mask[turn.start : turn.start + turn.length] == [1] * turn.length
        assert trajectory.logprobs[turn.start : turn.start + turn.length] == [-0.5] * turn.length


def assert_opening(trajectory: Trajectory, tokenizer: Any, messages: list[dict[str, Any]]) -> None:
    """The trajectory opens with the chat template's own rendering of the internal ``messages``."""
    ids = ChatFormat(tokenizer, [BASH]).prompt_ids(messages)
    assert trajectory.token_ids[: trajectory.prompt_length] == ids


def bridged_text(tokenizer: Any, trajectory: Trajectory, turn: int) -> str:
    """What the template put between turn ``turn`` and the next: the tool results, as the model saw them."""
    at = trajectory.turns[turn]
    end = at.start + at.length
    return str(tokenizer.decode(trajectory.token_ids[end : end + at.bridge_length]))


def qwen3() -> Any:
    """A tokenizer whose template renders reasoning (Qwen3), for the reasoning round trips."""
    if not (TOKENIZERS / "qwen3").is_dir():
        pytest.skip(f"the shared tokenizer qwen3 is absent ({TOKENIZERS})")
    return tokenizer_for("qwen3")
