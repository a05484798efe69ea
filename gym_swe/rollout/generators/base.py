"""The Generator surface: token-id prompts in, sampled token ids with their log-probabilities out.

Every backend returns, per prompt, exactly the ids it sampled (a stop token included when the backend keeps
it), the log-probability of each under the distribution it was sampled from (after temperature, top-k and
top-p, not the raw model distribution), the text, and why it stopped. A failure of one prompt is a `Sample`
with ``finish_reason="error"`` and the reason, never an exception for the whole batch.

Seeds are per request, never per call: ``generate(prompts, params, seeds=[...])`` gives each prompt its own
seed (``None``: unseeded). Without seeds every request is an independent draw, so G samples of one prompt
differ, as GRPO groups and pass@k need; a seed shared by every request would make them all alike. No backend
reseeds a global RNG: a caller's ``torch.manual_seed`` state is its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from gym_swe.errors import ConfigError

FINISH_REASONS = ("stop", "length", "error")


@dataclass(frozen=True)
class SamplingParams:
    """How to sample. ``max_tokens`` is per turn; the collector lowers it to fit ``max_model_len``.

    There is no seed here: one seed for a whole call would make every sample alike. Seeds are per request,
    `Generator.generate`'s ``seeds`` (``collect(seed=...)`` derives them for a run)."""

    max_tokens: int = 1024
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    """-1: no top-k."""
    stop_token_ids: tuple[int, ...] = ()
    """Extra stop ids; the backends also stop at the model's end-of-turn tokens."""

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if self.temperature < 0:
            raise ConfigError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"top_p must be in (0, 1], got {self.top_p}")

    def with_max_tokens(self, max_tokens: int) -> SamplingParams:
        values = {**self.__dict__, "max_tokens": max_tokens}
        return SamplingParams(**values)


@dataclass
class Sample:
    """One generation."""

    token_ids: list[int]
    """The sampled ids, exactly as generated."""
    logprobs: list[float] | None
    """Per sampled id, its log-probability under the sampling distribution (None: the backend gave none)."""
    text: str
    finish_reason: str
    """"stop" (a stop token or string), "length" (max_tokens or the context limit), or "error"."""
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.logprobs is not None and len(self.logprobs) != len(self.token_ids):
            raise ValueError(f"{len(self.logprobs)} logprobs for {len(self.token_ids)} tokens")

    @classmethod
    def failed(cls, reason: str, finish_reason: str = "error") -> Sample:
        return cls(token_ids=[], logprobs=[], text="", finish_reason=finish_reason, error=reason)


@runtime_checkable
class Generator(Protocol):
    """A model behind one surface: the collector batches every active trajectory's prompt into one call."""

    name: str
    tokenizer: Any

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        params: SamplingParams,
        seeds: Sequence[int | None] | None = None,
    ) -> list[Sample]:
        """One sample per prompt, in order.

        ``seeds``: one per prompt (``None``: that prompt is unseeded), or ``None`` for no seeds at all. A
        seeded prompt samples the same ids whenever its backend gets the same prompt, parameters and seed
        (exactly on ``hf``; on vLLM as far as its kernels are deterministic). A backend that cannot honour a
        seed raises `ConfigError` rather than ignore it."""
        ...

    def sync_weights(self, model: Any) -> None:
        """Make generation use ``model``'s current weights (after a training step).

        ``model``: the trainer's model, wrapped or not (DDP's, accelerate's or DeepSpeed's ``.module``,
        ``torch.compile``'s ``._orig_mod``), or its state dict, in Hugging Face checkpoint names. Tensors are
        converted to the backend's dtype; names and shapes are checked before anything is loaded, and a
        mismatch is a `ConfigError` that leaves the backend's weights as they were. A sync clears what the
        backend cached from the old weights (vLLM's prefix cache). The vLLM backends bound every sync in
        time (``sync_timeout``); one that fails once the load has begun, or runs out of time, raises
        `GeneratorError` and leaves the generator broken: later calls raise `GeneratorError` too rather than
        sample from half-loaded weights. They take ``via=`` to pick how weights travel ("memory", "disk",
        "nccl": see each)."""
        ...

    def close(self) -> None: ...


def request_seeds(prompts: Sequence[object], seeds: Sequence[int | None] | None) -> list[int | None]:
    """``seeds`` checked against ``prompts`` (one each), or all ``None`` when there are none."""
    if seeds is None:
        return [None] * len(prompts)
    if len(seeds) != len(prompts):
        raise ConfigError(f"seeds: one (or None) per prompt, got {len(seeds)} for {len(prompts)} prompts")
    for seed in seeds:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ConfigError(f"a seed must be an int >= 0 or None, got {seed!r}")
    return list(seeds)


def finite_or_none(values: Sequence[float | None]) -> list[float] | None:
    """Logprobs as floats, or None when any is missing (the trainer then recomputes them)."""
    if any(value is None or (isinstance(value, float) and math.isnan(value)) for value in values):
        return None
    return [float(value) for value in values]  # type: ignore[arg-type]
