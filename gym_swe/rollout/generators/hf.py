"""The ``hf`` generator: transformers ``generate``, batched with left padding, on CPU or GPU.

Sampling is done by gym_swe, not by transformers: the last logits processor draws each row's next id from
the processed scores (after temperature, top-k and top-p) and ``generate`` runs greedy over what it leaves.
That is how a row gets its own ``torch.Generator``: transformers' own sampling draws every row from the
global RNG, and seeding that (``torch.manual_seed``) would replay one random stream at every call and
overwrite the caller's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gym_swe.errors import ConfigError, missing_dependency
from gym_swe.rollout.chat import stop_token_ids
from gym_swe.rollout.generators.base import Sample, SamplingParams, request_seeds
from gym_swe.rollout.generators.model_names import check_model_name
from gym_swe.rollout.generators.weights import (
    checkpoint_weights,
    tied_partners,
    unwrap_model,
    weight_mismatches,
)


class HFGenerator:
    """Generation with a transformers model.

    Args:
        model: a model (``PreTrainedModel``) or a path / hub id to load.
        tokenizer: its tokenizer (loaded from ``model`` when it is a path).
        device: where to run ("cpu", "cuda", ...); default: the model's.
        batch_size: prompts per ``generate`` call.

    Seeds: an unseeded prompt draws from torch's global RNG (so two calls with the same prompt differ, and
    ``torch.manual_seed`` before a call makes the call reproducible); a seeded one draws from a
    ``torch.Generator`` of its own, so the same prompt, parameters and seed give the same ids, whatever
    the other prompts of the call are (up to float rounding: a row's logits change in the last bits with
    the batch's padding, which could flip a near-tie between two ids), and the global RNG is not touched.
    """

    name = "hf"

    def __init__(
        self, model: Any, tokenizer: Any = None, device: str | None = None, batch_size: int = 16
    ) -> None:
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError:
            raise missing_dependency("transformers", "train") from None
        self._torch = torch
        if isinstance(model, (str, Path)):
            check_model_name("model", model)
            tokenizer = tokenizer or AutoTokenizer.from_pretrained(str(model))
            model = AutoModelForCausalLM.from_pretrained(str(model))
        if tokenizer is None:
            raise ValueError("HFGenerator needs a tokenizer when given a model object")
        self.model = model.to(device) if device else model
        self.model.eval()
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.stop_ids = sorted(stop_token_ids(tokenizer) | set(_generation_eos(model)))
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.stop_ids[0]

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        params: SamplingParams,
        seeds: Sequence[int | None] | None = None,
    ) -> list[Sample]:
        per_prompt = request_seeds(prompts, seeds)
        samples: list[Sample] = []
        for start in range(0, len(prompts), self.batch_size):
            batch = prompts[start : start + self.batch_size]
            try:
                samples += self._generate_batch(batch, params, per_prompt[start : start + self.batch_size])
            except Exception as error:  # an OOM or a bad prompt fails its batch's samples, not the run
                samples += [Sample.failed(f"hf generate failed: {type(error).__name__}: {error}")] * len(
                    batch
                )
        return samples

    def _generate_batch(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams, seeds: Sequence[int | None]
    ) -> list[Sample]:
        torch = self._torch
        width = max(len(p) for p in prompts)
        device = next(self.model.parameters()).device
        input_ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):  # left padding: every prompt ends where generation starts
            input_ids[row, width - len(prompt) :] = torch.tensor(list(prompt), dtype=torch.long)
            attention[row, width - len(prompt) :] = 1
        stops = sorted(set(self.stop_ids) | set(params.stop_token_ids))
        sampler = None
        if params.temperature > 0:
            generators = [
                None if seed is None else torch.Generator(device=device).manual_seed(seed) for seed in seeds
            ]
            sampler = _Sampler(torch, generators)
        with torch.no_grad():
            output = self.model.generate(
                input_ids=input_ids.to(device),
                attention_mask=attention.to(device),
                max_new_tokens=params.max_tokens,
                # Greedy over what the processors leave: with sampling, that is the one id _Sampler drew.
                # The model's own generation_config (its temperature, top_p, ...) is overridden, not merged.
                do_sample=False,
                temperature=None,
                top_p=None,
                top_k=None,
                logits_processor=_sampling_processors(params, sampler) if sampler else None,
                eos_token_id=stops,
                pad_token_id=self.pad_id,
                output_scores=sampler is None,  # greedy: the log-probabilities come from the raw scores
                return_dict_in_generate=True,
            )
        generated = output.sequences[:, width:]
        if sampler is not None:
            logprobs = torch.stack(sampler.logprobs, dim=1)  # (row, step): the sampled id's log-probability
        else:
            scores = torch.stack([torch.log_softmax(s.float(), dim=-1) for s in output.scores], dim=1)
            logprobs = scores.gather(2, generated[:, : scores.shape[1], None].to(scores.device))[..., 0]
        samples = []
        for row in range(len(prompts)):
            ids, lps = [], []
            finish = "length"
            for step, token in enumerate(generated[row].tolist()):
                ids.append(token)
                lps.append(float(logprobs[row, step]))
                if token in stops:
                    finish = "stop"
                    break
            text = self.tokenizer.decode(ids[:-1] if finish == "stop" else ids, skip_special_tokens=False)
            samples.append(Sample(token_ids=ids, logprobs=lps, text=text, finish_reason=finish))
        return samples

    def sync_weights(self, model: Any) -> None:
        """Copy ``model``'s weights into the generator's model; nothing to do when the generator generates
        with the trainer's own model object (wrapped or not: DDP's or accelerate's ``.module``).

        ``model``: a model or a state dict, in the generator's model's parameter names. Names, shapes and
        tensors tied to another are checked before anything is copied: a mismatch is a `ConfigError` and
        leaves the generator's weights as they were."""
        if not isinstance(model, Mapping) and unwrap_model(model) is self.model:
            return
        weights = checkpoint_weights(model)
        target = self.model.state_dict()
        tied = tied_partners(target)
        shapes = {name: tuple(tensor.shape) for name, tensor in target.items()}
        problem = weight_mismatches(weights, shapes, optional=frozenset(tied))
        for name, partner in tied.items():  # both given: one lands in the shared tensor, so they must agree
            given = not problem and name in weights and partner in weights
            if given and not self._torch.equal(weights[name].cpu(), weights[partner].cpu()):
                problem = f"{name!r} and {partner!r} are one tensor in the generator's model, not here."
        if problem:
            raise ConfigError(f"sync_weights: the weights do not fit the generator's model: {problem}")
        self.model.load_state_dict(weights, strict=False)

    def close(self) -> None:
        pass


def _sampling_processors(params: SamplingParams, sampler: _Sampler) -> Any:
    """Temperature, top-k, top-p (transformers' own warpers, in the order its sampling applies them), then
    the sampler."""
    from transformers import LogitsProcessorList
    from transformers.generation.logits_process import (
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    processors: list[Any] = []
    if params.temperature != 1.0:
        processors.append(TemperatureLogitsWarper(params.temperature))
    if params.top_k > 0:
        processors.append(TopKLogitsWarper(params.top_k))
    if params.top_p < 1.0:
        processors.append(TopPLogitsWarper(params.top_p))
    return LogitsProcessorList([*processors, sampler])


class _Sampler:
    """The last logits processor: draws each row's next id from the processed scores, with the row's own
    ``torch.Generator`` (``None``: torch's global RNG), records its log-probability, and leaves that id
    the only one greedy decoding can pick.

    A row draws one uniform number per step, from its own generator only, so what it samples does not depend
    on the other rows (transformers may run a step past the end and drop it; a draw after a row's end changes
    nothing). The id is where that number falls in the row's cumulative distribution: one random number per
    row instead of a vocabulary's worth, about ten times faster than ``torch.multinomial`` over a 150k
    vocabulary, and exactly a draw from the distribution.
    """

    def __init__(self, torch: Any, generators: Sequence[Any]) -> None:
        self._torch = torch
        self.generators = list(generators)
        self.logprobs: list[Any] = []
        """Per step, the (rows,) log-probabilities of the ids drawn."""

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        torch = self._torch
        logprobs = torch.log_softmax(scores.float(), dim=-1)
        cumulative = logprobs.exp().cumsum(dim=-1)
        if all(generator is None for generator in self.generators):
            uniform = torch.rand((scores.shape[0], 1), device=scores.device)
        else:
            uniform = torch.cat(
                [
                    torch.rand((1, 1), generator=g, device=g.device if g else scores.device)
                    for g in self.generators
                ]
            ).to(scores.device)
        # right=True: the first id whose cumulative probability exceeds the draw, never one of probability 0
        chosen = torch.searchsorted(cumulative, uniform * cumulative[:, -1:], right=True)
        chosen = chosen.clamp(max=scores.shape[-1] - 1)
        self.logprobs.append(logprobs.gather(1, chosen)[:, 0])
        return torch.full_like(scores, float("-inf")).scatter_(1, chosen, 0.0)


def _generation_eos(model: Any) -> list[int]:
    config = getattr(model, "generation_config", None)
    eos = getattr(config, "eos_token_id", None)
    if eos is None:
        return []
    return [eos] if isinstance(eos, int) else list(eos)
