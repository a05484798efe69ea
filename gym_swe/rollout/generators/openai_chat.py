"""The ``openai-chat`` generator: any OpenAI-compatible chat endpoint with server-side tool calls.

For evaluating hosted models only: it captures no tokens or log-probabilities, so its trajectories cannot
train (they say so: ``has_token_ids`` is False). The env receives each reply as an assistant message dict
with ``tool_calls``; behind the proxy (black-box mode, `gym_swe.rollout.proxy.black_box`) an agent harness
does, in its own dialect. The reply's reasoning, where the endpoint returns it apart, and its ``usage`` are
kept on the `ChatSample`. A conversation's seed,
when given, goes as the request's ``seed`` (how far the endpoint honours it is the endpoint's affair).
Requests go through the generator's pooled client, with the retry policy of
`gym_swe.rollout.generators.http` (a 429 or a 5xx is retried with backoff, as a dropped connection is).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gym_swe.rollout.generators.base import SamplingParams, request_seeds
from gym_swe.rollout.generators.http import HTTPClient, NoAnswer, RetryPolicy, error_detail, server_root


@dataclass
class ChatSample:
    message: dict[str, Any]
    """The assistant message (``content`` and ``tool_calls``), the env's action."""
    text: str
    finish_reason: str
    error: str | None = None
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] | None = None
    details: dict[str, Any] = field(default_factory=dict)
    reasoning: str = ""
    """The model's reasoning where the endpoint returns it apart from the content (``reasoning_content``,
    as vLLM's reasoning parsers and DeepSeek send it, or ``reasoning``); "" when it returns none."""
    prompt_tokens: int | None = None
    """The endpoint's own count of the prompt's tokens (its ``usage``), None when it reports none."""
    completion_tokens: int | None = None


class OpenAIChatGenerator:
    """Args:
    base_url: e.g. ``https://api.example.com/v1``; model: the model name; api_key: or ``OPENAI_API_KEY``.
    concurrency: requests in flight at once; max_retries: attempts after the first for dropped connections,
    429s and server errors; timeout: seconds a request may wait for its answer.
    """

    name = "openai-chat"
    chat = True  # the collector passes messages, not token ids
    concurrent = True
    tokenizer = None

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        concurrency: int = 16,
        max_retries: int = 3,
        timeout: float = 600.0,
    ) -> None:
        self.base_url = server_root(base_url) + "/v1"
        self.model = model
        self.http = HTTPClient(
            self.base_url,
            api_key or os.environ.get("OPENAI_API_KEY"),
            timeout,
            RetryPolicy(retries=max_retries),
            concurrency=concurrency,
        )

    def _chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]],
        params: SamplingParams,
        seed: int | None,
    ) -> ChatSample:
        body = {
            "model": self.model,
            "messages": list(messages),
            "max_tokens": params.max_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
        }
        if tools:  # servers refuse an empty list ("omit the field entirely")
            body["tools"] = list(tools)
        if seed is not None:
            body["seed"] = seed
        try:
            response = self.http.post("/chat/completions", body)
        except NoAnswer as error:
            return ChatSample({}, "", "error", error=str(error))
        if response.is_error:
            detail = error_detail(response, 1000)
            return ChatSample({}, "", "error", error=f"HTTP {response.status_code}: {detail}")
        try:
            answer = response.json()
            choice = answer["choices"][0]
            message = choice["message"]
            action = {
                "role": "assistant",
                "content": message.get("content"),
                "tool_calls": message.get("tool_calls") or [],
            }
            finish = "stop" if choice.get("finish_reason") in ("stop", "tool_calls") else "length"
            reasoning = message.get("reasoning_content") or message.get("reasoning") or ""
            usage = answer.get("usage") or {}
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as error:
            return ChatSample({}, "", "error", error=f"unreadable answer: {type(error).__name__}: {error}")
        return ChatSample(
            message=action,
            text=message.get("content") or "",
            finish_reason=finish,
            reasoning=reasoning if isinstance(reasoning, str) else "",
            prompt_tokens=_count(usage, "prompt_tokens"),
            completion_tokens=_count(usage, "completion_tokens"),
        )

    def generate_chat(
        self,
        conversations: Sequence[Sequence[Mapping[str, Any]]],
        tools: Sequence[Sequence[Mapping[str, Any]]],
        params: SamplingParams,
        seeds: Sequence[int | None] | None = None,
    ) -> list[ChatSample]:
        """One reply per conversation, in order; ``seeds``: one per conversation, see `Generator.generate`."""
        per_conversation = request_seeds(conversations, seeds)
        return self.http.map(
            lambda job: self._chat(job[0], job[1], params, job[2]),
            zip(conversations, tools, per_conversation),
        )

    def generate(self, prompts: Any, params: SamplingParams, seeds: Any = None) -> list[ChatSample]:
        raise TypeError("openai-chat generates from messages (generate_chat), not token ids")

    def sync_weights(self, model: Any) -> None:
        raise TypeError("openai-chat serves a hosted model: there are no weights to sync")

    def close(self) -> None:
        self.http.close()


def _count(usage: Any, key: str) -> int | None:
    """A token count of an answer's ``usage``, None where it gives none (or not a count)."""
    value = usage.get(key) if isinstance(usage, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
