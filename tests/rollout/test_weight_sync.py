"""Weight sync: after `sync_weights` a generator samples with the new weights, whichever way they travelled
(shared object, state dict, memory, disk), and weights that do not fit are refused before anything changes.

The in-process vLLM engine is checked in vLLM's own environment (vllm_inprocess_check.py, mode "sync"); the
server and transformers here. The NCCL path to a server needs GPUs on both sides and is not exercised."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gym_swe.errors import ConfigError
from gym_swe.rollout.generators import SamplingParams, make_generator
from gym_swe.rollout.generators.nccl_sync import nccl_refusal
from gym_swe.rollout.generators.vllm_server import VLLMServerGenerator
from tests.rollout.conftest import run_vllm_inprocess_check
from tests.rollout.test_generators import chat_prompt, processed_logprobs

torch = pytest.importorskip("torch")


def noisy(model_dir: Path, seed: int):  # type: ignore[no-untyped-def]
    """The tiny model with noise on every weight and one layer's MLP zeroed: clearly other weights."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(model_dir))
    torch.manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.5)
        model.model.layers[1].mlp.down_proj.weight.zero_()
    return model


def weights_equal(a, b) -> bool:  # type: ignore[no-untyped-def]
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


# -- hf -------------------------------------------------------------------------------------------------------
def test_hf_sync_with_the_trainers_own_model_is_nothing_to_do(tiny_model: Path) -> None:
    generator = make_generator("hf", model=str(tiny_model))
    before = {name: tensor.clone() for name, tensor in generator.model.state_dict().items()}
    generator.sync_weights(generator.model)
    generator.sync_weights(torch.nn.DataParallel(generator.model))  # wrapped by the trainer: still the same
    assert all(torch.equal(before[name], t) for name, t in generator.model.state_dict().items())


@pytest.mark.parametrize("source", ["model", "wrapped", "state_dict", "wrapped_float64_state_dict"])
def test_hf_sync_takes_models_wrapped_or_not_and_state_dicts(tiny_model: Path, source: str) -> None:
    generator = make_generator("hf", model=str(tiny_model))
    trainer = noisy(tiny_model, seed=1)
    given = {
        "model": trainer,
        "wrapped": torch.nn.DataParallel(trainer),
        "state_dict": trainer.state_dict(),
        "wrapped_float64_state_dict": torch.nn.DataParallel(trainer.double()).state_dict(),  # "module." names
    }[source]
    generator.sync_weights(given)
    assert weights_equal(generator.model, trainer.float())
    prompt = [chat_prompt(generator.tokenizer, "hi")]
    sample = generator.generate(prompt, SamplingParams(max_tokens=6, temperature=1.0))[0]
    assert sample.logprobs == pytest.approx(
        processed_logprobs(trainer, prompt[0], sample.token_ids, 1.0, 1.0), abs=1e-4
    )


def test_hf_sync_refuses_weights_that_do_not_fit_and_changes_nothing(tiny_model: Path) -> None:
    generator = make_generator("hf", model=str(tiny_model))
    before = {name: tensor.clone() for name, tensor in generator.model.state_dict().items()}
    state = noisy(tiny_model, seed=2).state_dict()
    cases = {
        "shape(s) differ": {**state, "model.layers.0.self_attn.q_proj.weight": torch.zeros(3, 3)},
        "unknown name": {k.replace("self_attn", "attn"): v for k, v in state.items()},
        "missing": {k: v for k, v in state.items() if "layers.1." not in k},
        "one tensor in the generator's model": {**state, "lm_head.weight": state["lm_head.weight"] + 1},
        "PEFT": {f"base_model.model.{k}": v for k, v in state.items()},
    }
    for expected, weights in cases.items():
        with pytest.raises(ConfigError, match=re.escape(expected)):
            generator.sync_weights(weights)
    assert all(torch.equal(before[name], t) for name, t in generator.model.state_dict().items())


# -- vllm (in-process) ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def vllm_sync_report(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One engine in vLLM's environment, put through every sync (an engine start costs ~20 s)."""
    return run_vllm_inprocess_check(tiny_model, tmp_path_factory.mktemp("vllm-sync"), mode="sync")


def test_vllm_in_memory_sync_matches_transformers_on_the_new_weights(vllm_sync_report: dict) -> None:
    report = vllm_sync_report
    assert report["in_process"] and report["rng_kept"]
    assert report["prefix_caching"] and report["prompts_fill_a_block"]  # a stale cache would be seen
    assert report["memory"]["via"] == "memory"
    assert report["memory"]["error"] < 2e-3 < report["memory"]["error_vs_old"]
    assert report["wrapped_float64"]["error"] < 2e-3


def test_vllm_disk_sync_gives_what_the_memory_sync_gives(vllm_sync_report: dict) -> None:
    disk = vllm_sync_report["disk"]
    assert disk["via"] == "disk" and disk["error"] < 2e-3
    assert all(disk["same_as_memory"]) and disk["max_gap_to_memory"] < 1e-4


def test_vllm_refuses_weights_that_do_not_fit_and_keeps_generating(vllm_sync_report: dict) -> None:
    refusals = vllm_sync_report["refusals"]
    assert "shape(s) differ" in refusals["wrong_shape"] and "(3, 3)" in refusals["wrong_shape"]
    assert "unknown name" in refusals["renamed"] and "nearest" in refusals["renamed"]
    assert "ties lm_head" in refusals["untied_head"]
    assert "Unknown weight sync path 'nccl'" in refusals["unknown_via"]
    assert all(vllm_sync_report["unchanged_after_refusals"])


def test_vllm_sync_that_breaks_off_is_reported(vllm_sync_report: dict) -> None:
    report = vllm_sync_report
    assert "did not finish within the sync timeout" in report["timeout"]
    assert "keeps its previous weights" in report["timeout"]
    assert report["broken_after_timeout"] is None and all(report["unchanged_after_timeout"])
    assert "loading the weights failed" in report["failed_load"] and "undefined" in report["failed_load"]
    assert "broken" in report["generate_when_broken"]


def test_vllm_sleep_mode_is_refused_on_cpu(vllm_sync_report: dict) -> None:
    report = vllm_sync_report
    assert "not on cpu" in report["sleep_mode_refusal"]
    assert "sleep_mode=True: vLLM has sleep mode on CUDA" in report["sleep_mode_true_refusal"]
    assert "made with sleep_mode=True" in report["release_memory_refusal"]


# -- vllm-server ----------------------------------------------------------------------------------------------
def test_vllm_server_sync_from_disk_and_refusals(vllm_server, tiny_model: Path, tmp_path: Path) -> None:
    """On the shared server: its weights are put back at the end, for the other tests."""
    from transformers import AutoModelForCausalLM

    url, model = vllm_server.base_url, str(tiny_model)
    generator = VLLMServerGenerator(url, model, model, weights_dir=str(tmp_path))
    prompts = [chat_prompt(generator.tokenizer, text) for text in ("hello", "fix the bug please")]
    hot = SamplingParams(max_tokens=8, temperature=1.0)
    original = AutoModelForCausalLM.from_pretrained(str(tiny_model))
    trainer = noisy(tiny_model, seed=3)
    try:
        generator.generate(prompts, hot)  # cached prefixes of the old weights, which the sync must drop
        generator.sync_weights(torch.nn.DataParallel(trainer))
        assert generator.last_sync["via"] == "disk"  # "auto" on a CPU server: no NCCL
        for prompt, sample in zip(prompts, generator.generate(prompts, hot)):
            expected = processed_logprobs(trainer, prompt, sample.token_ids, 1.0, 1.0)
            assert sample.logprobs == pytest.approx(expected, abs=2e-3)

        with pytest.raises(ConfigError, match="no CUDA device"):
            generator.sync_weights(trainer, via="nccl")
        with pytest.raises(ConfigError, match="shape"):
            generator.sync_weights({**trainer.state_dict(), "model.norm.weight": torch.ones(7)})
        with pytest.raises(ConfigError, match="weights_dir"):
            VLLMServerGenerator(url, model, generator.tokenizer).sync_weights(trainer)
    finally:
        generator.sync_weights(original)
    for prompt, sample in zip(prompts, generator.generate(prompts, hot)):
        expected = processed_logprobs(original, prompt, sample.token_ids, 1.0, 1.0)
        assert sample.logprobs == pytest.approx(expected, abs=2e-3)
    generator.close()


def test_nccl_refusal_says_what_is_missing() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the refusal names the server's side instead")
    assert "no CUDA device" in nccl_refusal({"vllm_config": {"device_config": {"device": "cuda"}}})
