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
import inspect
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
    tokenizer=...)``; an unknown name lists the known ones, a missing argument is named."""
    if name not in GENERATORS:
        raise ConfigError(unknown_name("generator", name, GENERATORS))
    module, _, attribute = GENERATORS[name].partition(":")
    backend = getattr(importlib.import_module(module), attribute)
    required = [
        parameter.name
        for parameter in inspect.signature(backend).parameters.values()
        if parameter.default is parameter.empty
        and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
    ]
    missing = [parameter for parameter in required if parameter not in kwargs]
    if missing:
        raise ConfigError(
            f"generator {name!r} needs {', '.join(missing)}: make_generator({name!r}, "
            + ", ".join(f"{parameter}=..." for parameter in required)
            + ")"
        )
    return backend(**kwargs)


__all__ = ["GENERATORS", "Generator", "Sample", "SamplingParams", "make_generator"]
