"""Black-box mode: the proxy over a chat generator (``generator.chat``: ``openai-chat``, a hosted model behind
an OpenAI-compatible endpoint), to evaluate a model through the harnesses people run and to collect supervised
fine-tuning data. The harness, its sandbox, the dialects, the rollout registry, its bounds and the grading
are as in training; a turn differs:

- the request's internal chat goes to ``generate_chat``: its messages (an assistant's reasoning as
  ``reasoning_content``, where the dialect carried it; only the internal representation's fields,
  `endpoint_messages`), its tools. No chat template renders it;
- the endpoint's assistant message is the answer: its content, its reasoning (``reasoning_content`` or
  ``reasoning``), its tool calls, each given this proxy's own id (`call_id` of its position, as in token
  mode: the same however the harness re-sends the conversation, so a dialect without call ids, Google's,
  finds its calls again, and a history sent back unchanged is seen to continue);
- `MessageRecorder` keeps the turns as messages: the trajectory says it has no token ids
  (``has_token_ids`` False; no ids, no log-probabilities, every turn of length 0), as gym_swe's own tool
  loop records an ``openai-chat`` episode. A history the harness rewrote is counted as a fork; there are no
  ids to split into segments, and ``messages`` is the last conversation with its answer.

The context budget, without a tokenizer: the endpoint's own count, the ``usage`` it reports. A turn's prompt
plus its completion is what the conversation has taken; a request that continues a conversation that has
taken ``max_model_len`` tokens is refused (400 ``context_length_exceeded``; the rollout ends,
"max_model_len"), and each turn's ``max_tokens`` is lowered to what is left. What a request adds (the tool
results) only the endpoint counts: one that refuses a prompt as too long (OpenAI's
``context_length_exceeded``, vLLM's "maximum context length") ends the rollout the same way. After a fork,
and with an endpoint that reports no usage, the count starts again from nothing: ``max_turns`` and the
endpoint's own limit still hold. Counting a request's tokens (Anthropic's count_tokens, Google's countTokens)
needs the model's tokenizer, which this side does not have: a 400 that says so (`COUNT_REFUSAL`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from gym_swe.rollout.generators.base import SamplingParams
from gym_swe.rollout.generators.openai_chat import ChatSample
from gym_swe.rollout.proxy.conversation import (
    Answer,
    ChatRequest,
    RequestError,
    call_id,
    split_reasoning,
    visible_content,
)
from gym_swe.rollout.proxy.recorder import extends, tools_key_of
from gym_swe.rollout.trajectory import Trajectory

COUNT_REFUSAL = (
    "counting tokens needs the model's tokenizer, and this proxy serves a hosted model (a chat generator) "
    "without one; each turn's usage is the endpoint's own count"
)
MESSAGE_FIELDS = ("role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name")
CONTEXT_OVERFLOW_MARKS = ("context_length_exceeded", "maximum context length")
"""How an OpenAI-compatible endpoint says a prompt is longer than its context (OpenAI's error code,
vLLM's message)."""


def context_exceeded(length: int, max_model_len: int) -> RequestError:
    return RequestError(
        400,
        f"This model's maximum context length is {max_model_len} tokens, and the conversation has taken "
        f"{length} (the endpoint's count): the rollout has ended.",
        code="context_length_exceeded",
    )


class MessageRecorder:
    """Builds one black-box rollout's `Trajectory` from the requests a harness sends and the messages the
    chat generator answers with (see the module docstring)."""

    def __init__(self, trajectory: Trajectory, max_model_len: int) -> None:
        trajectory.has_token_ids = False
        self.trajectory = trajectory
        self.max_model_len = max_model_len
        self._history: list[dict[str, Any]] | None = None  # the last request and the answer
        self._tools_key: str | None = None
        self._taken = 0  # tokens the conversation has taken, by the endpoint's count (0: not known)

    def sampling_for(self, request: ChatRequest, sampling: SamplingParams) -> SamplingParams:
        """Record where ``request`` stands (what it adds to the conversation is the last turn's observation;
        a rewritten history a fork) and check the budget: the sampling parameters of its turn, or a
        `RequestError` (400, ``context_length_exceeded``) when the conversation has no room left."""
        trajectory, tools_key = self.trajectory, tools_key_of(request)
        if extends(request, tools_key, self._history, self._tools_key):
            new = request.messages[len(self._history or []) :]
            trajectory.turns[-1].observation = "\n".join(str(m.get("content") or "") for m in new)
        else:
            if self._history is None:
                trajectory.tools = list(request.tools or [])
            else:  # the harness rewrote its history: what the endpoint counted was another conversation
                trajectory.forks += 1
                self._taken = 0
            self._tools_key = tools_key
        room = self.max_model_len - self._taken
        if room < 1:
            raise context_exceeded(self._taken, self.max_model_len)
        return sampling.with_max_tokens(min(sampling.max_tokens, room))

    def record(self, request: ChatRequest, sample: ChatSample) -> tuple[dict[str, Any], str]:
        """Keep ``sample`` as the next turn; the assistant message to answer with and its finish reason."""
        position = sum(1 for message in request.messages if message.get("role") == "assistant")
        message = assistant_of(sample, position)
        if sample.finish_reason == "length":
            finish = "length"
        else:
            finish = "tool_calls" if message.get("tool_calls") else "stop"
        self.trajectory.add_sampled([], None, str(message.get("content") or ""), finish)
        if sample.prompt_tokens is not None:
            self._taken = sample.prompt_tokens + (sample.completion_tokens or 0)
        self._history = [*request.messages, message]
        self.trajectory.messages = list(self._history)
        return message, finish

    def rerender_matches(self) -> bool | None:
        """Nothing was rendered: None (as the trajectory of a chat generator in gym_swe's tool loop)."""
        return None


def endpoint_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The internal chat as an endpoint takes it: each message's fields of the internal representation only
    (role, content, an assistant's ``reasoning_content`` and ``tool_calls``, a result's ``tool_call_id``,
    a user's ``name``), not what a harness's SDK added beside them (a call's ``index``, ``refusal``, provider
    extras), which a strict endpoint refuses."""
    kept = []
    for message in messages:
        out = {key: message[key] for key in MESSAGE_FIELDS if key in message}
        if out.get("role") == "tool":
            out.pop("name", None)  # Google's results carry their function's name; chat completions' do not
        if "tool_calls" in out:
            out["tool_calls"] = [
                {"id": call.get("id"), "type": "function", "function": _function(call)}
                for call in _calls(out["tool_calls"])
            ]
        kept.append(out)
    return kept


def assistant_of(sample: ChatSample, position: int) -> dict[str, Any]:
    """The endpoint's reply as the internal assistant message: content, ``reasoning_content``, tool calls
    with this proxy's ids (``position``: how many assistant messages come before it) and their arguments as
    a JSON string."""
    reply = sample.message
    content = reply.get("content")
    message: dict[str, Any] = {"role": "assistant", "content": content if isinstance(content, str) else None}
    if sample.reasoning:
        message["reasoning_content"] = sample.reasoning
    calls = [
        {"id": call_id(position, index), "type": "function", "function": _function(call)}
        for index, call in enumerate(_calls(reply.get("tool_calls")))
    ]
    if calls:
        message["tool_calls"] = calls
    elif message["content"] is None:
        message["content"] = ""  # neither text nor calls: an empty answer, the harness's turn ends
    return message


def _calls(value: Any) -> list[Mapping[str, Any]]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        return []
    return [call for call in value if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping)]


def _function(call: Mapping[str, Any]) -> dict[str, str]:
    function = call["function"]
    arguments = function.get("arguments")
    if not isinstance(arguments, str):  # an object (some servers), or none
        arguments = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
    return {"name": str(function.get("name") or ""), "arguments": arguments}


def chat_answer(
    answer_id: str, created: int, model: str, message: dict[str, Any], finish: str, sample: ChatSample
) -> Answer:
    """The `Answer` of a black-box turn: its reasoning is the message's (or its content's ``<think>`` block,
    from an endpoint that does not parse reasoning out), its usage the endpoint's (0 where it reported
    none)."""
    content = str(message.get("content") or "")
    reasoning = str(message.get("reasoning_content") or split_reasoning(content)[0]).strip()
    return Answer(
        answer_id,
        created,
        model,
        message,
        finish,
        sample.prompt_tokens or 0,
        sample.completion_tokens or 0,
        reasoning,
        visible_content(message),
    )


def is_context_overflow(error: str) -> bool:
    """Does a chat generator's error say the endpoint found the prompt longer than its context?"""
    lowered = error.lower()
    return any(mark in lowered for mark in CONTEXT_OVERFLOW_MARKS)
