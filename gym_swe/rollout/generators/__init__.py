"""Generators: models behind one surface (`Generator`), made by name with `make_generator`.

- ``hf``: transformers ``generate`` (CPU or GPU), batched with left padding.
- ``vllm``: an in-process ``vllm.LLM``.
- ``vllm-server``: an OpenAI-compatible vLLM server (token-id prompts over ``/v1/completions``).
- ``openai-chat``: any OpenAI-compatible chat endpoint with server-side tool calls; evaluation only.

Every backend takes per-request seeds (``generate(prompts, params, seeds=[...])``) and sends none unless
given; see `gym_swe.rollout.generators.base`. Beside the backends: `factory` (the user's options into a
generator, checked once), `http` (the server backends' client and its one retry policy), `weights` (what a
``sync_weights`` checks and writes), `model_names` (a model's name checked, its load failing in one line),
and `nccl_sync` (weights to a server over NCCL: experimental, untested here).
"""

from __future__ import annotations

from gym_swe.rollout.generators.base import Generator, Sample, SamplingParams
from gym_swe.rollout.generators.factory import GENERATORS, make_generator

__all__ = ["GENERATORS", "Generator", "Sample", "SamplingParams", "make_generator"]
