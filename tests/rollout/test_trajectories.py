"""Token-exact trajectories on every real tokenizer and its own tool-call format, through a real env.

For each model family the scripted model writes turns as that family does (Hermes JSON, Qwen3's think blocks,
Qwen3-Coder XML, Llama 3.1 JSON, Mistral [TOOL_CALLS], gpt-oss harmony). The trajectory must hold the
prompt ids of the template, each turn's sampled ids exactly, and bridges that carry exactly what the env
answered, whatever the template does with earlier turns.
"""

from __future__ import annotations

import json

import gymnasium
import pytest

import gym_swe  # noqa: F401
from gym_swe.rollout.chat import ChatFormat
from gym_swe.rollout.collector import collect
from gym_swe.rollout.generators.base import SamplingParams
from tests.conftest import require_bwrap
from tests.rollout.conftest import MODELS, TOKENIZERS
from tests.rollout.scripted import ScriptedGenerator

RUN = "python test_solution.py # step 0"
LOOK = "cat solution.py # step 1"


def hermes(command: str | None, think: str = "") -> str:
    call = (
        {"name": "submit", "arguments": {}}
        if command is None
        else {"name": "bash", "arguments": {"command": command}}
    )
    return f"{think}<tool_call>\n{json.dumps(call)}\n</tool_call>"


def qwen3_coder(command: str | None) -> str:
    if command is None:
        return "<tool_call>\n<function=submit>\n</function>\n</tool_call>"
    return f"<tool_call>\n<function=bash>\n<parameter=command>\n{command}\n</parameter>\n</function>\n</tool_call>"


def llama(command: str | None) -> str:
    call = (
        {"name": "submit", "parameters": {}}
        if command is None
        else {"name": "bash", "parameters": {"command": command}}
    )
    return json.dumps(call)


def mistral(command: str | None) -> str:
    call = (
        {"name": "submit", "arguments": {}}
        if command is None
        else {"name": "bash", "arguments": {"command": command}}
    )
    return f"[TOOL_CALLS] {json.dumps([call])}"


def gpt_oss(command: str | None) -> str:
    name, args = ("submit", {}) if command is None else ("bash", {"command": command})
    return f"<|channel|>analysis<|message|>Look first.<|end|><|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{json.dumps(args)}"


FAMILIES = {
    # tokenizer: (turns, re-render expected to match). "tiny-bpe" is trained here (gym_swe's own ChatML
    # template); the others are the real tokenizers of the shared test data.
    "tiny-bpe": ([hermes(RUN), hermes(LOOK), hermes(None)], True),
    "qwen2.5-instruct": ([hermes(RUN), hermes(LOOK), hermes(None)], True),
    "qwen3": (
        [
            hermes(RUN, "<think>\nRun the tests first.\n</think>\n\n"),
            hermes(LOOK, "<think>\nNow the code.\n</think>\n\n"),
            hermes(None, "<think>\nDone.\n</think>\n\n"),
        ],
        None,
    ),
    "qwen3-coder": ([qwen3_coder(RUN), qwen3_coder(LOOK), qwen3_coder(None)], True),
    "llama-3.1-instruct": ([llama(RUN), llama(LOOK), llama(None)], True),
    "mistral-7b-instruct-v0.3": ([mistral(RUN), mistral(LOOK), mistral(None)], None),
    "gpt-oss": ([gpt_oss(RUN), gpt_oss(LOOK), gpt_oss(None)], None),
}


def load(name: str):  # type: ignore[no-untyped-def]
    transformers = pytest.importorskip("transformers")
    if name == "tiny-bpe":
        from gym_swe.rollout.tiny import make_tiny_bpe_tokenizer

        path = make_tiny_bpe_tokenizer(MODELS)
        return transformers.AutoTokenizer.from_pretrained(str(path))
    if not (TOKENIZERS / name).is_dir():
        pytest.skip(f"tokenizer {name} not available")
    return transformers.AutoTokenizer.from_pretrained(str(TOKENIZERS / name))


# The token a model of the family stops a tool-calling turn with, where it is not the plain turn's end.
TOOL_TURN_STOP = {"gpt-oss": "<|call|>"}


def run(tokenizer, turns, return_stop: bool = True, template_kwargs=None, max_model_len: int = 16384,
        stop_text: str | None = None):  # type: ignore[no-untyped-def]  # fmt: skip
    require_bwrap()
    generator = ScriptedGenerator(tokenizer, turns, return_stop=return_stop, stop_text=stop_text)
    return collect(
        lambda: gymnasium.make("CodeDebug-v0"),
        generator,
        ["GymSwe/0"],
        max_model_len=max_model_len,
        sampling=SamplingParams(max_tokens=512),
        template_kwargs=template_kwargs,
    )[0]


def appears(text: str, rendered: str) -> bool:
    """Tool output appears in a bridge verbatim, or JSON-encoded (Llama 3.1 and gpt-oss quote it)."""
    return text in rendered or json.dumps(text)[1:-1] in rendered


@pytest.mark.parametrize("return_stop", [True, False], ids=["stop-returned", "stop-omitted"])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_trajectory_is_token_exact(family: str, return_stop: bool) -> None:
    tokenizer = load(family)
    turns, rerender_expected = FAMILIES[family]
    trajectory = run(tokenizer, turns, return_stop=return_stop, stop_text=TOOL_TURN_STOP.get(family))
    assert trajectory.error is None, trajectory.error
    assert trajectory.end_reason == "submitted" and len(trajectory.turns) == 3
    # Every call was understood by the env: no parse errors, the commands ran.
    tool_outputs = [m["content"] for m in trajectory.messages if m["role"] == "tool"]
    assert "AssertionError" in tool_outputs[0] and "def run_length_encode" in tool_outputs[1]
    assert not [m for m in trajectory.messages if m["role"] == "user"][1:]  # no "could not parse" feedback
    # The pieces line up with the ids.
    n = len(trajectory.token_ids)
    assert len(trajectory.loss_mask) == n and len(trajectory.logprobs) == n
    segments = list(trajectory.segments())
    assert [kind for kind, _ in segments] == ["prompt", "sampled", "bridge", "sampled", "bridge", "sampled"]
    assert sum(len(ids) for _, ids in segments) == n
    assert sum(trajectory.loss_mask) == sum(len(ids) for kind, ids in segments if kind == "sampled")
    # The prompt is the template's rendering of the env's opening messages (with its tool schemas).
    chat = ChatFormat(tokenizer, trajectory.tools)
    opening = trajectory.messages[:2]
    assert segments[0][1] == chat.prompt_ids(opening)
    # The sampled ids are exactly what the scripted model produced.
    stop = (
        tokenizer.get_vocab()[TOOL_TURN_STOP[family]] if family in TOOL_TURN_STOP else chat.end_of_turn_id()
    )
    for (_, ids), text in zip([s for s in segments if s[0] == "sampled"], turns):
        expected = tokenizer.encode(text, add_special_tokens=False)
        assert ids == ([*expected, stop] if return_stop else expected)
    # Each bridge carries exactly what the env answered, and ends where the model starts writing again.
    bridges = [tokenizer.decode(ids) for kind, ids in segments if kind == "bridge"]
    for output, bridge in zip(tool_outputs, bridges):
        assert appears(output, bridge), (output[:80], bridge[:300])
    generation_prompt = tokenizer.decode(chat.prompt_ids(opening)[len(chat.render(opening, False)) :])
    for bridge in bridges:
        assert bridge.endswith(generation_prompt)
    if not return_stop:  # the template's end-of-turn comes first in the bridge
        assert [ids[0] for kind, ids in segments if kind == "bridge"] == [stop, stop]
    if rerender_expected is not None:
        assert trajectory.rerender_matches is rerender_expected
    else:
        assert trajectory.rerender_matches in (True, False)


def test_qwen3_vanishing_empty_think_blocks_stay_as_the_model_saw_them() -> None:
    """With thinking off, Qwen3's generation prompt holds an empty think block that a re-render drops from
    earlier turns. The trajectory keeps it where the model saw it, and says a re-render would differ."""
    tokenizer = load("qwen3")
    turns = [hermes(RUN), hermes(LOOK), hermes(None)]
    trajectory = run(tokenizer, turns, template_kwargs={"enable_thinking": False})
    assert trajectory.error is None and trajectory.end_reason == "submitted"
    empty_think = "<think>\n\n</think>\n\n"
    prompt = tokenizer.decode(trajectory.token_ids[: trajectory.prompt_length])
    assert prompt.endswith(empty_think)
    bridges = [tokenizer.decode(ids) for kind, ids in trajectory.segments() if kind == "bridge"]
    assert all(bridge.endswith(empty_think) for bridge in bridges)
    assert trajectory.rerender_matches is False


def test_the_context_budget_ends_a_trajectory_truncated() -> None:
    tokenizer = load("qwen2.5-instruct")
    turns, _ = FAMILIES["qwen2.5-instruct"]
    probe = run(tokenizer, turns)
    budget = probe.prompt_length + probe.turns[0].length + probe.turns[0].bridge_length + 5
    trajectory = run(tokenizer, turns, max_model_len=budget)
    assert trajectory.truncated and trajectory.end_reason == "max_model_len"
    assert trajectory.error is None and trajectory.grade is not None
    assert len(trajectory.token_ids) <= budget


def test_trajectories_round_trip_through_jsonl(tmp_path) -> None:
    from gym_swe.rollout.trajectory import load_jsonl, save_jsonl

    tokenizer = load("qwen2.5-instruct")
    trajectory = run(tokenizer, FAMILIES["qwen2.5-instruct"][0])
    back = load_jsonl(save_jsonl([trajectory], tmp_path / "t.jsonl"))[0]
    assert back == trajectory
