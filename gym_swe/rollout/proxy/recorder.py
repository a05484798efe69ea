"""Token-exact recording of one harness rollout: each request rendered or bridged, each sample kept as is.

The first request is rendered with the chat template (its messages and tools). A later request that is the
previous one plus the assistant message the proxy returned plus new tool results or user messages is
*bridged*: the ids so far, the sampled ids exactly as generated, then `ChatFormat.bridge_ids` for the new
messages; the sampled text is never re-tokenized. Any other request means the harness rewrote its history
(dropped or edited a turn, re-serialized tool-call arguments, compacted its context, changed its tools): the
request is rendered afresh as a new *segment* of the trajectory, and the fork is counted. Each segment is
one token sequence, exactly what the model saw when it sampled that segment's turns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from gym_swe.rollout.chat import ChatFormat
from gym_swe.rollout.generators.base import Sample
from gym_swe.rollout.proxy.conversation import ChatRequest, RequestError, assistant_message, visible_content
from gym_swe.rollout.trajectory import Trajectory


def comparable(message: Mapping[str, Any]) -> dict[str, Any]:
    """What of a message the model saw: role, content (None and "" alike), tool calls (id, name, arguments
    as a value, so that re-serialized but equal JSON still extends), the tool result's call id. Fields an
    SDK adds (``function_call: None``, ``refusal``, provider extras) do not count. Nor does an assistant
    message's reasoning, or the whitespace around its text: what comes after an assistant message is bridged
    onto the ids the model sampled, whatever the harness's copy of it says, and harnesses and APIs drop
    reasoning from their history (some dialects carry it apart from the text, some not at all)."""
    role = message.get("role")
    content = visible_content(message) if role == "assistant" else message.get("content") or ""
    out: dict[str, Any] = {"role": role, "content": content}
    calls = message.get("tool_calls")
    if calls:
        out["tool_calls"] = [
            (call.get("id"), call.get("function", {}).get("name"), _arguments(call.get("function", {})))
            for call in calls
        ]
    if message.get("role") == "tool":
        out["tool_call_id"] = message.get("tool_call_id")
    return out


def _arguments(function: Mapping[str, Any]) -> Any:
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except json.JSONDecodeError:
            return arguments
    return arguments


def _same_message(sent: Mapping[str, Any], before: Mapping[str, Any]) -> bool:
    """``comparable`` alike. Messages a harness sends back unchanged are equal as they are, which is quick
    (a history is re-sent whole every turn, with all its tool outputs); only the others (the proxy's answer
    as the SDK re-serialized it, say) are reduced to what the model saw."""
    return sent == before or comparable(sent) == comparable(before)


def tools_key_of(request: ChatRequest) -> str:
    """The request's tools as one comparable string: a request with other tools starts a segment."""
    return json.dumps(request.tools, sort_keys=True)


def extends(
    request: ChatRequest, tools_key: str, history: list[dict[str, Any]] | None, history_tools_key: str | None
) -> bool:
    """Does ``request`` (its tools `tools_key_of`) continue ``history`` (the last request and the proxy's
    answer, with its tools' key): the same tools, the same messages (`_same_message`), then only tool
    results or user messages? Anything else is a history the harness rewrote."""
    return (
        history is not None
        and tools_key == history_tools_key
        and len(request.messages) >= len(history)  # nothing new: the harness asks again after the answer
        and all(map(_same_message, request.messages, history))
        and all(message.get("role") != "assistant" for message in request.messages[len(history) :])
    )


class TokenRecorder:
    """Builds one rollout's `Trajectory` from the requests a harness sends and the samples it gets."""

    def __init__(
        self,
        tokenizer: Any,
        trajectory: Trajectory,
        max_model_len: int,
        template_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.trajectory = trajectory
        self.max_model_len = max_model_len
        self.template_kwargs = dict(template_kwargs or {})
        self._chat: ChatFormat | None = None
        self._tools_key: str | None = None
        self._history: list[dict[str, Any]] | None = None  # the last request and the answer, as sent
        self._assistant: dict[str, Any] | None = None
        self._sampled: list[int] = []
        self._segment_start = 0
        self._last_request: list[dict[str, Any]] = []
        self._last_prompt_end = 0
        self._answers: list[tuple[dict[str, Any], str]] = []  # each turn's answer, and the text sampled

    @property
    def segment_length(self) -> int:
        return len(self.trajectory.token_ids) - self._segment_start

    def prompt_for(self, request: ChatRequest) -> list[int]:
        """The ids to generate from for ``request`` (the current segment's), recording its prompt, bridge or
        fork. A request that does not fit the context left is a `RequestError` (400,
        ``context_length_exceeded``)."""
        trajectory = self.trajectory
        tools_key = tools_key_of(request)
        previous = self._history
        if extends(request, tools_key, previous, self._tools_key):
            assert self._chat is not None and self._assistant is not None
            new = request.messages[len(previous) :]  # type: ignore[arg-type]
            bridge = self._chat.bridge_ids(self._assistant, new, self._sampled)
            self._check_room(self.segment_length + len(bridge))
            trajectory.add_bridge(bridge)
            trajectory.turns[-1].observation = "\n".join(str(m.get("content") or "") for m in new)
        else:
            if tools_key != self._tools_key or self._chat is None:
                self._chat = ChatFormat(self.tokenizer, request.tools, self.template_kwargs)
                self._tools_key = tools_key
            ids = self._chat.prompt_ids(request.messages)
            self._check_room(len(ids))
            if previous is None and not trajectory.token_ids:
                trajectory.add_prompt(ids)
                trajectory.tools = list(request.tools or [])
            else:  # the harness rewrote its history: a new segment, not a silent re-tokenization
                self._segment_start = len(trajectory.token_ids)
                trajectory.start_segment(ids)
        self._last_request = list(request.messages)
        self._last_prompt_end = len(trajectory.token_ids)
        return trajectory.token_ids[self._segment_start :]

    def room(self) -> int:
        """How many ids the next sample may have: what is left of ``max_model_len`` in this segment."""
        return self.max_model_len - self.segment_length

    def _check_room(self, length: int) -> None:
        if length >= self.max_model_len:
            raise RequestError(
                400,
                f"This model's maximum context length is {self.max_model_len} tokens, and the conversation "
                f"needs {length} before the reply: the rollout has ended.",
                code="context_length_exceeded",
            )

    def record(self, request: ChatRequest, sample: Sample) -> tuple[dict[str, Any], str]:
        """Keep ``sample`` as the next turn; the assistant message to answer with and its finish reason."""
        position = sum(1 for message in request.messages if message.get("role") == "assistant")
        message, finish = assistant_message(sample.text, request.tool_names, position)
        if sample.finish_reason == "length":
            finish = "length"
        self.trajectory.add_sampled(sample.token_ids, sample.logprobs, sample.text, sample.finish_reason)
        self._assistant = message
        self._answers.append((message, sample.text))
        self._sampled = list(sample.token_ids)
        self._history = [*request.messages, message]
        self.trajectory.messages = list(self._history)
        return message, finish

    def rerender_matches(self) -> bool | None:
        """Does rendering the last request afresh give the ids its turn was sampled from? Tried with each of
        the proxy's answers in it as the model wrote it (the sampled text), then as the harness sent it back
        (content and tool calls, as `gym_swe.rollout.collector` tries an env's turns): a template that renders
        tool calls otherwise than the model writes them (a newline less before a call, say) still re-renders
        the model's own text. True where the template is prefix-preserving over this history; None before any
        turn, or where the template cannot render it."""
        if self._chat is None or not self.trajectory.turns:
            return None
        expected = self.trajectory.token_ids[self._segment_start : self._last_prompt_end]
        rendered = [
            self._chat.rerender_ids(messages, add_generation_prompt=True)
            for messages in (self._as_written(self._last_request), self._last_request)
        ]
        if all(ids is None for ids in rendered):
            return None
        return expected in rendered

    def _as_written(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``messages`` with each of the proxy's answers, in order, replaced by the text the model wrote."""
        written, answers = [], iter(self._answers)
        pending = next(answers, None)
        for message in messages:
            answered = pending is not None and message.get("role") == "assistant"
            if answered and _same_message(message, pending[0]):  # type: ignore[index]
                message = {"role": "assistant", "content": pending[1]}  # type: ignore[index]
                pending = next(answers, None)
            written.append(message)
        return written


def sampled_ids(trajectory: Trajectory) -> Sequence[list[int]]:
    """Each turn's sampled ids, in order (what tests compare with the generator's)."""
    return [trajectory.token_ids[t.start : t.start + t.length] for t in trajectory.turns]
