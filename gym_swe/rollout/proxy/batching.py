"""Requests of many rollouts into few generator calls.

A server backend (``vllm-server``: ``generator.concurrent``) batches concurrent requests itself, so each
request is its own call, in a thread, which renders the request's prompt first: one hand-off between the
event loop and a thread per turn, not two (under load each hand-off waits for the interpreter lock, and
those waits, more than the work, are what a busy proxy adds to a turn). An in-process backend (``hf``,
``vllm``) generates one batch at a time: the requests that arrive while a batch runs wait and go together
in the next one (grouped by their sampling parameters, since ``max_tokens`` differs with the context each
rollout has left), as the collector batches the active episodes of a round. A chat generator
(``generator.chat``, black-box mode: `gym_swe.rollout.proxy.black_box`) takes messages, not a prompt's ids:
each request is its own ``generate_chat`` call, in a thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from gym_swe.rollout.generators.base import Generator, Sample, SamplingParams
from gym_swe.rollout.generators.openai_chat import ChatSample


class GenerationQueue:
    def __init__(self, generator: Generator, width: int = 64) -> None:
        self.generator = generator
        self.concurrent = bool(getattr(generator, "concurrent", False))
        self._threads = ThreadPoolExecutor(
            max_workers=width if self.concurrent else 1, thread_name_prefix="proxy-gen"
        )
        self._pending: list[tuple[list[int], SamplingParams, asyncio.Future[Sample]]] = []
        self._running = False
        self._drainer: asyncio.Task[None] | None = None
        self.calls = 0

    async def generate(
        self, prepare: Callable[[], tuple[list[int], SamplingParams]]
    ) -> tuple[list[int], Sample]:
        """The prompt ``prepare()`` renders (with the sampling parameters for it) and its sample.
        ``prepare`` runs in a thread, since rendering takes milliseconds; what it raises is raised here."""
        loop = asyncio.get_running_loop()
        if self.concurrent:
            prompt, sample = await loop.run_in_executor(self._threads, self._prepare_and_call, prepare)
            self.calls += 1
            return prompt, sample
        prompt, params = await loop.run_in_executor(None, prepare)
        future: asyncio.Future[Sample] = loop.create_future()
        self._pending.append((prompt, params, future))
        if not self._running:
            self._running = True
            self._drainer = loop.create_task(self._drain())
        return prompt, await future

    async def generate_chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        params: SamplingParams,
    ) -> ChatSample:
        """A chat generator's reply to ``messages`` (with ``tools``), in a thread; a failure is the sample's
        ``error``, as a token generator's is."""
        loop = asyncio.get_running_loop()
        sample = await loop.run_in_executor(self._threads, self._chat_call, messages, tools or [], params)
        self.calls += 1
        return sample

    def _chat_call(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]],
        params: SamplingParams,
    ) -> ChatSample:
        chat: Any = self.generator  # a chat generator: generate_chat, not the Generator protocol's generate
        try:
            replies = list(chat.generate_chat([messages], [tools], params))
        except Exception as error:
            return ChatSample({}, "", "error", error=f"{type(error).__name__}: {error}")
        if len(replies) != 1:
            return ChatSample({}, "", "error", error=f"the generator gave {len(replies)} replies for 1 chat")
        reply: ChatSample = replies[0]
        return reply

    def _prepare_and_call(
        self, prepare: Callable[[], tuple[list[int], SamplingParams]]
    ) -> tuple[list[int], Sample]:
        prompt, params = prepare()
        return prompt, self._call([prompt], params)[0]

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                groups: dict[SamplingParams, list[tuple[list[int], asyncio.Future[Sample]]]] = {}
                for prompt, params, future in batch:
                    groups.setdefault(params, []).append((prompt, future))
                for params, members in groups.items():
                    self.calls += 1
                    samples = await loop.run_in_executor(
                        self._threads, self._call, [prompt for prompt, _ in members], params
                    )
                    for (_, future), sample in zip(members, samples):
                        if not future.done():
                            future.set_result(sample)
        finally:
            self._running = False

    def _call(self, prompts: list[list[int]], params: SamplingParams) -> list[Sample]:
        """A generator failure is every sample's, as data (the rollouts end with its reason)."""
        try:
            samples = list(self.generator.generate(prompts, params))
        except Exception as error:
            return [Sample.failed(f"{type(error).__name__}: {error}") for _ in prompts]
        if len(samples) != len(prompts):
            return [
                Sample.failed(f"the generator gave {len(samples)} samples for {len(prompts)} prompts")
            ] * len(prompts)
        return samples

    def close(self) -> None:
        self._threads.shutdown(wait=False, cancel_futures=True)
