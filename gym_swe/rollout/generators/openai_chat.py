"""The ``openai-chat`` generator: any OpenAI-compatible chat endpoint with server-side tool calls.

For evaluating hosted models only: it captures no tokens or log-probabilities, so its trajectories cannot
train. The env receives each reply as an assistant message dict with ``tool_calls``. A conversation's seed,
when given, goes as the request's ``seed`` (how far the endpoint honours it is the endpoint's affair).
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from gym_swe.rollout.generators.base import SamplingParams, request_seeds


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


class OpenAIChatGenerator:
    """Args:
    base_url: e.g. ``https://api.example.com/v1``; model: the model name; api_key: or ``OPENAI_API_KEY``.
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
        self.base_url = base_url.rstrip("/")
        if not self.base_url.endswith("/v1"):
            self.base_url += "/v1"
        self.model = model
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY")
        self.max_retries = max_retries
        self.timeout = timeout
        self._threads = ThreadPoolExecutor(max_workers=concurrency)

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
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        delay = 1.0
        for attempt in range(self.max_retries + 1):
            request = urllib.request.Request(
                self.base_url + "/chat/completions",
                data=json.dumps(body).encode(),
                headers=headers,
                method="POST",
            )
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    choice = json.loads(response.read())["choices"][0]
                message = choice["message"]
                action = {
                    "role": "assistant",
                    "content": message.get("content"),
                    "tool_calls": message.get("tool_calls") or [],
                }
                finish = "stop" if choice.get("finish_reason") in ("stop", "tool_calls") else "length"
                return ChatSample(message=action, text=message.get("content") or "", finish_reason=finish)
            except urllib.error.HTTPError as error:
                if (error.code < 500 and error.code != 429) or attempt == self.max_retries:
                    detail = error.read().decode("utf-8", "replace")[:1000]
                    return ChatSample({}, "", "error", error=f"HTTP {error.code}: {detail}")
            except (urllib.error.URLError, OSError, ValueError, KeyError) as error:
                if attempt == self.max_retries:
                    return ChatSample({}, "", "error", error=f"{type(error).__name__}: {error}")
            time.sleep(delay)
            delay *= 2
        return ChatSample({}, "", "error", error="unreachable")  # pragma: no cover

    def generate_chat(
        self,
        conversations: Sequence[Sequence[Mapping[str, Any]]],
        tools: Sequence[Sequence[Mapping[str, Any]]],
        params: SamplingParams,
        seeds: Sequence[int | None] | None = None,
    ) -> list[ChatSample]:
        """One reply per conversation, in order; ``seeds``: one per conversation, see `Generator.generate`."""
        per_conversation = request_seeds(conversations, seeds)
        return list(
            self._threads.map(
                lambda job: self._chat(job[0], job[1], params, job[2]),
                zip(conversations, tools, per_conversation),
            )
        )

    def generate(self, prompts: Any, params: SamplingParams, seeds: Any = None) -> list[ChatSample]:
        raise TypeError("openai-chat generates from messages (generate_chat), not token ids")

    def sync_weights(self, model: Any) -> None:
        raise TypeError("openai-chat serves a hosted model: there are no weights to sync")

    def close(self) -> None:
        self._threads.shutdown(wait=False)
