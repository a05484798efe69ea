"""Generators: models behind one surface (`Generator`), picked by name with `make_generator`.

- ``hf``: transformers ``generate`` (CPU or GPU), batched with left padding.
- ``vllm``: an in-process ``vllm.LLM``.
- ``vllm-server``: an OpenAI-compatible vLLM server (token-id prompts over ``/v1/completions``).
- ``openai-chat``: any OpenAI-compatible chat endpoint with server-side tool calls; evaluation only.

Every backend takes per-request seeds (``generate(prompts, params, seeds=[...])``) and sends none unless
given; see `gym_swe.rollout.generators.base`.
"""

from __future__ import annotations

import importlib
from typing import Any

from gym_swe.errors import ConfigError, unknown_name
from gym_swe.rollout.generators.base import Generator, Sample, SamplingParams

GENERATORS = {
    "hf": "gym_swe.rollout.generators.hf:HFGenerator",
    "vllm": "gym_swe.rollout.generators.vllm_local:VLLMGenerator",
    "vllm-server": "gym_swe.rollout.generators.vllm_server:VLLMServerGenerator",
    "openai-chat": "gym_swe.rollout.generators.openai_chat:OpenAIChatGenerator",
}


def make_generator(name: str, **kwargs: Any) -> Any:
    """``make_generator("hf", model="path")``, ``make_generator("vllm-server", base_url=..., model=...,
    tokenizer=...)``; an unknown name lists the known ones."""
    if name not in GENERATORS:
        raise ConfigError(unknown_name("generator", name, GENERATORS))
    module, _, attribute = GENERATORS[name].partition(":")
    return getattr(importlib.import_module(module), attribute)(**kwargs)


__all__ = ["GENERATORS", "Generator", "Sample", "SamplingParams", "make_generator"]
