"""Run by the rollout tests inside vLLM's own environment: the in-process ``vllm`` generator on the tiny model.
Prints one line: RESULT <json>.

    python vllm_inprocess_check.py MODEL_DIR SCRATCH_DIR          # the generator as made by default
    python vllm_inprocess_check.py MODEL_DIR SCRATCH_DIR chunked  # an engine that chunks prefills on CPU
    python vllm_inprocess_check.py MODEL_DIR SCRATCH_DIR sync     # weight sync, in depth

Default: its samples and log-probabilities checked against transformers, its weight sync, and seeds: the
samples of one prompt differ unseeded, a seed repeats, and a seeded batch too long for one prefill step of
vLLM's CPU defaults (whose chunking would kill the engine) runs whole. ``chunked``: such an engine refuses
seeds, and still generates after refusing. ``sync``: after each sync (in memory, from disk, from a wrapped
float64 state dict) the engine's log-probabilities are those transformers computes with the new weights;
mismatched weights are refused and leave the engine as it was; a sync that breaks off leaves the engine
reported broken; sleep mode is refused on CPU.
"""

from __future__ import annotations

import json
import sys


def chat_prompts(tokenizer, texts):  # type: ignore[no-untyped-def]
    return [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True, return_dict=False
        )
        for text in texts
    ]


def check_default(model_dir: str) -> dict:
    import torch
    from transformers import AutoModelForCausalLM

    from gym_swe.rollout.generators import SamplingParams, make_generator

    generator = make_generator(
        "vllm", model=model_dir, max_model_len=2048, dtype="float32", enforce_eager=True
    )
    tokenizer = generator.tokenizer
    prompts = chat_prompts(tokenizer, ("hello", "fix the bug please"))
    samples = generator.generate(prompts, SamplingParams(max_tokens=8, temperature=0.8))
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    error = 0.0
    for prompt, sample in zip(prompts, samples):
        ids = torch.tensor([prompt + sample.token_ids])
        with torch.no_grad():
            logits = model(ids).logits[0, len(prompt) - 1 : -1].float() / 0.8
        expected = torch.log_softmax(logits, dim=-1)[range(len(sample.token_ids)), sample.token_ids]
        error = max(error, float((expected - torch.tensor(sample.logprobs)).abs().max()))

    # Seeds. A group of one prompt, unseeded, at temperature 1: independent draws.
    hot = SamplingParams(max_tokens=8, temperature=1.0)
    group = generator.generate([prompts[0]] * 4, hot)
    seeded = generator.generate([prompts[0]] * 3, hot, seeds=[1, 2, 1])
    again = generator.generate([prompts[0]], hot, seeds=[1])[0]
    # 3 x 1500 prompt ids: more than one prefill step of vLLM's CPU default (4096 tokens) holds, so with
    # chunked prefill the last prompt would be chunked, and with a seed, kill the engine.
    long_prompts = [[100 + (i * 7 + k) % 1000 for i in range(1500)] for k in range(3)]
    long_seeds = [11, 12, 13]
    long_first = generator.generate(long_prompts, SamplingParams(max_tokens=4), seeds=long_seeds)
    long_again = generator.generate(long_prompts, SamplingParams(max_tokens=4), seeds=long_seeds)

    greedy = SamplingParams(max_tokens=6, temperature=0.0)
    before = generator.generate(prompts[:1], greedy)[0]
    perturbed = AutoModelForCausalLM.from_pretrained(model_dir)
    with torch.no_grad():
        for parameter in perturbed.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.5)
    generator.sync_weights(perturbed)
    changed = generator.generate(prompts[:1], greedy)[0]
    generator.sync_weights(model)
    restored = generator.generate(prompts[:1], greedy)[0]
    return {
        "samples": len(samples),
        "logprobs_match_tokens": all(len(s.logprobs) == len(s.token_ids) > 0 for s in samples),
        "max_logprob_error": error,
        "changed_after_sync": changed.logprobs != before.logprobs,
        "restored_after_sync": restored.token_ids == before.token_ids
        and max(abs(a - b) for a, b in zip(restored.logprobs, before.logprobs)) < 1e-3,
        "chunked_prefill": bool(generator.llm.llm_engine.vllm_config.scheduler_config.enable_chunked_prefill),
        "group": [s.token_ids for s in group],
        "seeded": [s.token_ids for s in seeded],
        "seeded_again": again.token_ids,
        "long_errors": [s.error for s in long_first + long_again],
        "long_first": [s.token_ids for s in long_first],
        "long_again": [s.token_ids for s in long_again],
    }


def logprob_error(model, prompts, samples, temperature: float) -> float:  # type: ignore[no-untyped-def]
    """The largest gap between the samples' log-probabilities and transformers' on ``model``."""
    import torch

    error = 0.0
    for prompt, sample in zip(prompts, samples):
        ids = torch.tensor([prompt + sample.token_ids])
        with torch.no_grad():
            logits = model(ids).logits[0, len(prompt) - 1 : -1].float() / temperature
        expected = torch.log_softmax(logits, dim=-1)[range(len(sample.token_ids)), sample.token_ids]
        error = max(error, float((expected - torch.tensor(sample.logprobs)).abs().max()))
    return error


def refusal(action) -> str | None:  # type: ignore[no-untyped-def]
    """The message of the `ConfigError` ``action()`` raises, or None when it raises none."""
    from gym_swe.errors import ConfigError

    try:
        action()
    except ConfigError as error:
        return str(error)
    return None


def check_sync(model_dir: str) -> dict:
    import torch
    from transformers import AutoModelForCausalLM

    from gym_swe.errors import GeneratorError
    from gym_swe.rollout.generators import SamplingParams, make_generator
    from gym_swe.rollout.generators.vllm_local import VLLMGenerator, sleep_mode_refusal

    torch.manual_seed(7)
    rng_before = torch.get_rng_state()
    generator = make_generator(
        "vllm", model=model_dir, max_model_len=2048, dtype="float32", enforce_eager=True
    )
    report: dict = {
        "rng_kept": bool(torch.equal(rng_before, torch.get_rng_state())),
        "in_process": generator.in_process,
        "prefix_caching": bool(generator.llm.llm_engine.vllm_config.cache_config.enable_prefix_caching),
        "sleep_mode_refusal": sleep_mode_refusal(),
        "release_memory_refusal": refusal(generator.release_memory),
        "sleep_mode_true_refusal": refusal(lambda: VLLMGenerator(model_dir, sleep_mode=True)),
    }
    # Longer than one KV-cache block (128 tokens on CPU): only full blocks are cached for reuse.
    prompts = chat_prompts(generator.tokenizer, ("hello " * 200, "fix the bug please " * 60))
    report["prompts_fill_a_block"] = (
        min(map(len, prompts)) > generator.llm.llm_engine.vllm_config.cache_config.block_size
    )
    hot, greedy = SamplingParams(max_tokens=8, temperature=0.8), SamplingParams(max_tokens=6, temperature=0.0)
    original = AutoModelForCausalLM.from_pretrained(model_dir)

    def noisy(seed: int):  # type: ignore[no-untyped-def]
        model = AutoModelForCausalLM.from_pretrained(model_dir)
        torch.manual_seed(seed)
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.add_(torch.randn_like(parameter) * 0.5)
            model.model.layers[1].mlp.down_proj.weight.zero_()
        return model

    # In memory. The prompts were just run with the old weights: a prefix cache kept across the sync would
    # reuse their old keys and values, and the log-probabilities would no longer match the new weights.
    generator.generate(prompts, hot)
    first = noisy(1)
    generator.sync_weights(first)
    samples = generator.generate(prompts, hot)
    report["memory"] = {
        "via": generator.last_sync["via"],
        "error": logprob_error(first, prompts, samples, 0.8),
        "error_vs_old": logprob_error(original, prompts, samples, 0.8),
    }
    in_memory = generator.generate(prompts, greedy)

    # The same weights from disk: the same generations.
    generator.sync_weights(original)
    generator.sync_weights(first, via="disk")
    samples = generator.generate(prompts, hot)
    from_disk = generator.generate(prompts, greedy)
    report["disk"] = {
        "via": generator.last_sync["via"],
        "error": logprob_error(first, prompts, samples, 0.8),
        "same_as_memory": [a.token_ids == b.token_ids for a, b in zip(in_memory, from_disk)],
        "max_gap_to_memory": max(
            abs(x - y) for a, b in zip(in_memory, from_disk) for x, y in zip(a.logprobs, b.logprobs)
        ),
    }

    # A wrapped model's float64 state dict ("module." names): unwrapped and converted to the engine's dtype.
    second = noisy(2).double()
    generator.sync_weights(torch.nn.DataParallel(second).state_dict())
    samples = generator.generate(prompts, hot)
    report["wrapped_float64"] = {"error": logprob_error(second.float(), prompts, samples, 0.8)}

    # Mismatched weights are refused before anything is loaded: the engine generates as before.
    before = generator.generate(prompts, greedy)
    state = second.state_dict()
    wrong_shape = {**state, "model.layers.0.self_attn.q_proj.weight": torch.zeros(3, 3)}
    renamed = {("model.layers.0.attn.q_proj.weight" if "q_proj" in n and ".0." in n else n): t
               for n, t in state.items()}  # fmt: skip
    untied = {**state, "lm_head.weight": state["lm_head.weight"] + 1}
    report["refusals"] = {
        "wrong_shape": refusal(lambda: generator.sync_weights(wrong_shape)),
        "renamed": refusal(lambda: generator.sync_weights(renamed)),
        "untied_head": refusal(lambda: generator.sync_weights(untied)),
        "unknown_via": refusal(lambda: generator.sync_weights(second, via="nccl")),
    }
    after = generator.generate(prompts, greedy)
    report["unchanged_after_refusals"] = [a.token_ids == b.token_ids and a.logprobs == b.logprobs
                                          for a, b in zip(before, after)]  # fmt: skip

    # Out of time while saving: the engine keeps its weights.
    generator.sync_timeout = 0.0
    try:
        generator.sync_weights(original, via="disk")
        report["timeout"] = None
    except GeneratorError as error:
        report["timeout"] = str(error)
    generator.sync_timeout = 600.0
    report["broken_after_timeout"] = generator.broken
    again = generator.generate(prompts, greedy)
    report["unchanged_after_timeout"] = [a.token_ids == b.token_ids for a, b in zip(before, again)]

    # A load that fails halfway (the check against the checkpoint turned off): the engine is broken.
    generator.checkpoint_shapes = None
    try:
        generator.sync_weights(wrong_shape)
        report["failed_load"] = None
    except GeneratorError as error:
        report["failed_load"] = str(error)
    try:
        generator.generate(prompts, greedy)
        report["generate_when_broken"] = None
    except GeneratorError as error:
        report["generate_when_broken"] = str(error)
    generator.close()  # its directory of synced weights goes with it
    return report


def check_chunked(model_dir: str) -> dict:
    from gym_swe.errors import ConfigError
    from gym_swe.rollout.generators import SamplingParams, make_generator

    generator = make_generator(
        "vllm",
        model=model_dir,
        max_model_len=2048,
        dtype="float32",
        enforce_eager=True,
        enable_chunked_prefill=True,
        max_num_batched_tokens=256,
    )
    long_prompt = [100 + i % 1000 for i in range(600)]  # more than a step's 256 tokens: prefilled in chunks
    try:
        generator.generate([long_prompt], SamplingParams(max_tokens=4), seeds=[5])
        refusal = None
    except ConfigError as error:
        refusal = str(error)
    after = generator.generate([long_prompt, long_prompt], SamplingParams(max_tokens=4))
    return {
        "chunked_prefill": bool(generator.llm.llm_engine.vllm_config.scheduler_config.enable_chunked_prefill),
        "refusal": refusal,
        "unseeded_after": [s.token_ids for s in after],
        "unseeded_errors": [s.error for s in after],
    }


if __name__ == "__main__":  # vLLM spawns worker processes that re-import this file
    mode = sys.argv[3] if len(sys.argv) > 3 else "default"
    checks = {"default": check_default, "chunked": check_chunked, "sync": check_sync}
    report = checks[mode](sys.argv[1])
    print("RESULT " + json.dumps(report), flush=True)
