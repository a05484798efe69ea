"""The ``vllm`` generator: an in-process ``vllm.LLM``, generating from token-id prompts.

The engine is made with ``logprobs_mode="processed_logprobs"`` so the log-probabilities it returns are those
of the distribution it sampled from (after temperature, top-k and top-p), as GRPO's importance ratios need.

A seed goes with a request only when the caller gives one. vLLM's CPU build kills its engine on a seeded
request whose prefill is split into chunks (``RuntimeError: CPU Generator does not use offset``: undoing a
partial prefill's draw needs a generator offset, which CPU generators lack), and which request gets chunked
depends on the whole batch. So on CPU the engine is made without chunked prefill unless the caller tunes
chunking (``enable_chunked_prefill`` or ``max_num_batched_tokens``); an engine that chunks on CPU refuses
seeds with a `ConfigError` before anything reaches it.

Weight sync. By default the engine runs in this process: its engine core and its one worker are made with
``VLLM_ENABLE_V1_MULTIPROCESSING=0`` (set while the engine is made, then put back), so `sync_weights`
hands the trainer's tensors to the worker's ``reload_weights`` as they are: no copy through another
process, no file. With vLLM's default engine (``engine_in_process=False``: engine core and worker in
processes of their own) tensors cannot travel that way (vLLM's RPC decodes them as plain lists, and the
failed load leaves the engine dead), so such an engine syncs through a file: ``model.safetensors`` in a
directory of the generator's, which the worker reloads (``via="disk"`` does the same for any engine).

The price of the in-process engine: vLLM's scheduling and the model share this process (no overlap
between the two), and on CPU its worker binds this process's OpenMP threads to cores and turns
``torch.set_num_threads`` into a no-op (vLLM's CPU backend does that in whatever process it runs). vLLM
seeds the global RNGs when it makes an engine; the generator puts the caller's RNG states back.

On CPU, vLLM's linear kernels pack a copy of their weights, and an in-place reload re-packs only the
layers it loads: a head tied to the embeddings is loaded through them and would keep its old weights. So
after every sync on CPU gym_swe's worker extension (`WeightSyncExtension`, given to the engine as
``worker_extension_cls``) re-packs it.

Sleep mode (``sleep_mode=True``; CUDA and ROCm only): `VLLMGenerator.release_memory` frees the engine's
accelerator memory while the trainer updates the model, `VLLMGenerator.resume` takes it back. Ask
`sleep_mode_refusal` before making an engine whether this platform has it.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from gym_swe.errors import ConfigError, GeneratorError, missing_dependency, unknown_name
from gym_swe.rollout.chat import stop_token_ids
from gym_swe.rollout.generators.base import Sample, SamplingParams, request_seeds
from gym_swe.rollout.generators.weights import (
    bounded,
    checked_against_checkpoint,
    checkpoint_shapes,
    save_weights,
)

CHUNKING_KWARGS = ("enable_chunked_prefill", "max_num_batched_tokens")
SYNC_VIAS = ("auto", "memory", "disk")
"""How `VLLMGenerator.sync_weights` moves weights: "memory" (tensors straight into the engine's model,
the default where the engine is in this process), "disk" (a file the engine reloads), "auto"."""
WORKER_EXTENSION = "gym_swe.rollout.generators.vllm_local.WeightSyncExtension"
"""`WeightSyncExtension` by qualified name, as vLLM's ``worker_extension_cls`` takes it."""


class VLLMGenerator:
    """Args:
    model: a model path or hub id for ``vllm.LLM``.
    tokenizer: its tokenizer (default: loaded from ``model`` with transformers).
    max_model_len: the engine's context length.
    engine_in_process: run vLLM's engine core and worker in this process (see the module's docstring), so
        that `sync_weights` goes through memory; False: vLLM's default processes, synced through a file.
    sleep_mode: make the engine with vLLM's sleep mode, for `release_memory` / `resume`. Where the
        platform lacks it (CPU) this is a `ConfigError` at once; `sleep_mode_refusal` says so beforehand.
    sync_timeout: seconds a `sync_weights` may take before it fails with a `GeneratorError`.
    engine_kwargs: anything else ``vllm.LLM`` takes (``dtype``, ``gpu_memory_utilization``, ...). On CPU,
        ``enable_chunked_prefill`` defaults to False so that seeded requests are safe (see the module's
        docstring); a caller that sets it or ``max_num_batched_tokens`` gets vLLM's chunking, without seeds.

    An engine whose weights are undefined (a sync that failed or timed out after the load began) is
    broken: `generate` and `sync_weights` then raise `GeneratorError` (``broken`` says why) rather than
    sample from a half-loaded model; make a new generator.
    """

    name = "vllm"

    def __init__(
        self,
        model: str,
        tokenizer: Any = None,
        max_model_len: int = 8192,
        engine_in_process: bool = True,
        sleep_mode: bool = False,
        sync_timeout: float = 600.0,
        **engine_kwargs: Any,
    ) -> None:
        try:
            from vllm import LLM
            from vllm.platforms import current_platform
            from vllm.v1.executor.uniproc_executor import UniProcExecutor
        except ImportError:
            raise missing_dependency("vllm", "vllm") from None
        if tokenizer is None:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(model)
        self.tokenizer = tokenizer
        self.model = model
        self.sync_timeout = sync_timeout
        sleep_mode = sleep_mode or bool(engine_kwargs.pop("enable_sleep_mode", False))
        if sleep_mode:
            refusal = sleep_mode_refusal()
            if refusal:
                raise ConfigError(f"sleep_mode=True: {refusal}. Make the generator without sleep_mode.")
            engine_kwargs["enable_sleep_mode"] = True
        engine_kwargs.setdefault("logprobs_mode", "processed_logprobs")
        engine_kwargs.setdefault("worker_extension_cls", WORKER_EXTENSION)
        on_cpu = current_platform.is_cpu()
        if on_cpu and not any(name in engine_kwargs for name in CHUNKING_KWARGS):
            engine_kwargs["enable_chunked_prefill"] = False  # whole prefills: seeded requests are safe
        with _environment(VLLM_ENABLE_V1_MULTIPROCESSING="0" if engine_in_process else None), _rng_kept():
            self.llm = LLM(model=model, max_model_len=max_model_len, **engine_kwargs)
        config = self.llm.llm_engine.vllm_config
        self.seeds_refused = on_cpu and bool(config.scheduler_config.enable_chunked_prefill)
        """True where a seeded request could kill the engine (CPU, chunked prefill): seeds are refused."""
        self.in_process = isinstance(getattr(self.llm.llm_engine, "model_executor", None), UniProcExecutor)
        """Whether the engine's worker runs in this process (vLLM reads the setting once per process: an
        earlier engine can have fixed it), which `sync_weights` needs to go through memory."""
        self.sleep_mode = sleep_mode
        self.asleep = False
        self.broken: str | None = None
        """Why the engine can no longer be used, or None."""
        self.last_sync: dict[str, Any] = {}
        """How the last `sync_weights` went: ``via`` ("memory" or "disk") and ``seconds``."""
        self.engine_dtype = config.model_config.dtype
        text_config = config.model_config.hf_text_config
        self.tied_embeddings = bool(getattr(text_config, "tie_word_embeddings", False))
        self._head_refresh = on_cpu and self.tied_embeddings  # see the module's docstring
        self._extension = engine_kwargs["worker_extension_cls"] == WORKER_EXTENSION
        self.checkpoint_shapes = checkpoint_shapes(config.model_config.model)
        """The engine's checkpoint tensors' names and shapes (None where they cannot be read): what a sync
        is checked against before anything is loaded."""
        self.max_model_len = max_model_len
        self.stop_ids = sorted(stop_token_ids(tokenizer))
        self._weights_dir: str | None = None

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        params: SamplingParams,
        seeds: Sequence[int | None] | None = None,
    ) -> list[Sample]:
        from vllm import SamplingParams as VLLMSamplingParams
        from vllm.inputs import TokensPrompt

        self._check_usable("generate")
        per_prompt = request_seeds(prompts, seeds)
        if self.seeds_refused and any(seed is not None for seed in per_prompt):
            raise ConfigError(
                "seeds need an engine without chunked prefill on CPU: vLLM's CPU build kills its engine on "
                "a seeded request whose prefill is chunked ('CPU Generator does not use offset'). Make the "
                "generator without enable_chunked_prefill=True and max_num_batched_tokens (chunked prefill "
                "is then off), or sample without seeds."
            )
        settings = [
            VLLMSamplingParams(
                n=1,
                temperature=params.temperature,
                top_p=params.top_p,
                top_k=params.top_k if params.top_k > 0 else -1,
                max_tokens=params.max_tokens,
                stop_token_ids=sorted(set(self.stop_ids) | set(params.stop_token_ids)),
                logprobs=0,  # the sampled token's own log-probability only
                seed=seed,
                skip_special_tokens=False,
            )
            for seed in per_prompt
        ]
        samples: list[Sample | None] = [None] * len(prompts)
        fits = [i for i, p in enumerate(prompts) if len(p) < self.max_model_len]
        for i in set(range(len(prompts))) - set(fits):
            samples[i] = Sample([], [], "", "length", details={"context_exceeded": True})
        try:
            outputs = self.llm.generate(
                [TokensPrompt(prompt_token_ids=list(prompts[i])) for i in fits],
                [settings[i] for i in fits],
                use_tqdm=False,
            )
        except Exception as error:
            for i in fits:
                samples[i] = Sample.failed(f"vllm generate failed: {type(error).__name__}: {error}")
            return samples  # type: ignore[return-value]
        for i, output in zip(fits, outputs):
            samples[i] = _sample(output.outputs[0], self.tokenizer)
        return samples  # type: ignore[return-value]

    # -- weight sync -----------------------------------------------------------------------------------------
    def sync_weights(self, model: Any, via: str = "auto") -> None:
        """Load ``model``'s current weights into the engine, then reset its prefix cache (cached prompts
        were computed with the old weights).

        ``model``: the trainer's model (unwrapped from DDP, accelerate, DeepSpeed or ``torch.compile``) or
        a state dict, in Hugging Face checkpoint names (vLLM maps them onto its fused layers). Tensors are
        converted to the engine's dtype; with tied embeddings ``lm_head.weight`` may be absent, and when
        present must equal the embeddings. ``via``: "memory" (needs `in_process`), "disk", or "auto"
        (memory where the engine is in this process).

        Raises `ConfigError` when the weights do not fit the engine's checkpoint (names, shapes), before
        anything is loaded: the engine keeps its weights and keeps generating. Raises `GeneratorError`
        when the load fails or outlasts ``sync_timeout`` once begun: the engine is then `broken`."""
        self._check_usable("sync_weights")
        if via not in SYNC_VIAS:
            raise ConfigError(unknown_name("weight sync path", via, SYNC_VIAS))
        if via == "memory" and not self.in_process:
            raise ConfigError(
                "sync_weights(via='memory') needs the engine's worker in this process: make the generator "
                "with engine_in_process=True (and no earlier engine in this process made without it), or "
                "sync via='disk'."
            )
        if self._head_refresh and not self._extension:
            raise ConfigError(
                "sync_weights on CPU with tied embeddings needs gym_swe's worker extension to re-pack the "
                "head (see the module's docstring): make the generator without worker_extension_cls."
            )
        weights = self._checked_weights(model)
        if via == "auto":
            via = "memory" if self.in_process else "disk"
        started = time.monotonic()
        deadline = started + self.sync_timeout
        if via == "memory":
            dtype = self.engine_dtype
            pairs = ((name, tensor.to(dtype)) for name, tensor in weights.items())  # one converted at a time
            self._bounded(lambda: self._reload(weights_iterator=pairs), "loading the weights", deadline)
        else:
            if self._weights_dir is None:
                self._weights_dir = tempfile.mkdtemp(prefix="gym_swe-weights-")
            directory = self._weights_dir  # vLLM now names it as the model's path: it stays until close()
            self._bounded(
                lambda: save_weights(weights, directory, dtype=self.engine_dtype),
                "saving the weights",
                deadline,
                breaks_engine=False,
            )
            self._bounded(lambda: self._reload(weights_path=directory), "reloading the weights", deadline)
        if not self.llm.reset_prefix_cache():
            raise GeneratorError(
                "sync_weights: the weights are loaded but vLLM did not reset its prefix cache (requests were "
                "still running), so cached prompts may still use the old weights."
            )
        self.last_sync = {"via": via, "seconds": time.monotonic() - started}

    def _reload(self, **source: Any) -> None:
        self.llm.collective_rpc("reload_weights", kwargs=source)
        if self._head_refresh:
            self.llm.collective_rpc("gym_swe_refresh_tied_head")

    def _checked_weights(self, model: Any) -> dict[str, Any]:
        """``model``'s weights by checkpoint name, checked against the engine's checkpoint; the tied head
        dropped (vLLM reads the embeddings for it)."""
        return checked_against_checkpoint(
            model, self.checkpoint_shapes, self.tied_embeddings, holder="engine", model=self.model
        )

    def _bounded(
        self, step: Callable[[], object], what: str, deadline: float, breaks_engine: bool = True
    ) -> None:
        """`bounded` ``step``: a failure or a timeout is a `GeneratorError`, and when ``breaks_engine``
        (the engine's weights were being replaced) marks the engine broken."""
        reason = bounded(step, deadline - time.monotonic(), what, self.sync_timeout)
        if reason is None:
            return
        if breaks_engine:
            self.broken = f"a weight sync broke off ({reason}): the engine's weights are undefined"
            raise GeneratorError(f"sync_weights: {self.broken}. Make a new generator.")
        raise GeneratorError(f"sync_weights: {reason}. The engine keeps its previous weights.")

    # -- sleep mode ------------------------------------------------------------------------------------------
    def release_memory(self) -> None:
        """Free the engine's accelerator memory while the trainer updates (vLLM's sleep, level 1: weights
        offloaded to CPU memory, KV cache discarded). `resume` before generating or syncing again."""
        self._check_usable("release_memory")
        if not self.sleep_mode:
            refusal = sleep_mode_refusal()
            raise ConfigError(
                "release_memory needs an engine made with sleep_mode=True"
                + (f", which this platform cannot have: {refusal}" if refusal else "")
            )
        self.llm.sleep(level=1)
        self.asleep = True

    def resume(self) -> None:
        """Take back the memory `release_memory` freed: weights back on the device, a fresh KV cache."""
        if self.asleep:
            self.llm.wake_up()
            self.asleep = False

    def _check_usable(self, action: str) -> None:
        if self.broken:
            raise GeneratorError(f"{action}: the vLLM engine is broken: {self.broken}. Make a new generator.")
        if self.asleep:
            raise GeneratorError(f"{action}: the vLLM engine is asleep (release_memory); resume() first.")

    def close(self) -> None:
        del self.llm
        if self._weights_dir:
            shutil.rmtree(self._weights_dir, ignore_errors=True)


class WeightSyncExtension:
    """What gym_swe adds to vLLM's workers (vLLM's ``worker_extension_cls``; `VLLMGenerator` and
    `gym_swe.rollout.generators.vllm_server.VLLMServer` pass it), for ``collective_rpc`` by name."""

    def gym_swe_refresh_tied_head(self) -> bool:
        """Re-pack a head tied to the embeddings after a reload, on CPU (see `refresh_tied_head`)."""
        return refresh_tied_head(self)


def refresh_tied_head(worker: Any) -> bool:
    """On vLLM's CPU build, re-pack ``worker``'s output head from the embeddings it is tied to, and return
    True; elsewhere, or without a tied unquantized head, do nothing and return False.

    vLLM's CPU linear kernels (oneDNN, sgl) pack a copy of their weights when the model loads, and its
    in-place reload re-packs only the layers it loads. A tied head is loaded through the embeddings (vLLM
    skips its alias), so without this it keeps computing logits with the old weights."""
    from vllm.model_executor.layers.vocab_parallel_embedding import (
        ParallelLMHead,
        UnquantizedEmbeddingMethod,
        VocabParallelEmbedding,
    )
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        return False
    model = worker.model_runner.get_model()
    head = getattr(model, "lm_head", None)
    method = getattr(head, "quant_method", None)
    if not isinstance(head, ParallelLMHead) or not isinstance(method, UnquantizedEmbeddingMethod):
        return False
    tied = any(
        module.weight is head.weight
        for module in model.modules()
        if isinstance(module, VocabParallelEmbedding) and not isinstance(module, ParallelLMHead)
    )
    if tied:
        method.process_weights_after_loading(head)
    return tied


def sleep_mode_refusal() -> str | None:
    """Why vLLM's sleep mode (`VLLMGenerator.release_memory`) cannot be had here, or None where it can.
    Cheap: asks vLLM's platform, makes no engine."""
    try:
        from vllm.platforms import current_platform
    except ImportError:
        return str(missing_dependency("vllm", "vllm", feature="vLLM's sleep mode"))
    if not current_platform.is_sleep_mode_available():
        return f"vLLM has sleep mode on CUDA, ROCm and XPU only, not on {current_platform.device_type}"
    return None


@contextlib.contextmanager
def _environment(**values: str | None) -> Iterator[None]:
    """``os.environ`` with ``values`` set (None: left as it is), put back on exit."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update({name: value for name, value in values.items() if value is not None})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def _rng_kept() -> Iterator[None]:
    """The global RNGs (Python's, NumPy's, torch's) as they were before: vLLM seeds them when it makes an
    engine, and a generator never reseeds its caller's RNG."""
    import numpy
    import torch

    python, legacy, cpu = random.getstate(), numpy.random.get_state(), torch.get_rng_state()
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    try:
        yield
    finally:
        random.setstate(python)
        numpy.random.set_state(legacy)
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


def _sample(completion: Any, tokenizer: Any) -> Sample:
    ids = list(completion.token_ids)
    logprobs = None
    if completion.logprobs is not None:
        logprobs = [float(step[token].logprob) for step, token in zip(completion.logprobs, ids)]
    finish = "stop" if completion.finish_reason == "stop" else "length"
    text = completion.text
    if not text and ids:
        text = tokenizer.decode(ids, skip_special_tokens=False)
    return Sample(token_ids=ids, logprobs=logprobs, text=text, finish_reason=finish)
