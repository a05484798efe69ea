"""Samples of one task must differ, and a seeded run must repeat.

No request carries a seed by default, so G samples of one prompt are independent draws on every backend; a
run seed gives each (task, sample, turn) a seed of its own; no generator reseeds a global RNG. On vLLM's CPU
build a seeded request whose prefill is chunked kills the engine: the in-process generator runs whole
prefills on CPU, and an engine or server that chunks refuses seeds.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium
import pytest

import gym_swe  # noqa: F401
from gym_swe.errors import ConfigError
from gym_swe.rollout.collector import collect, turn_seed
from gym_swe.rollout.generators import SamplingParams, make_generator
from gym_swe.rollout.generators.base import request_seeds
from gym_swe.rollout.generators.hf import HFGenerator
from gym_swe.rollout.generators.vllm_server import VLLMServerGenerator
from gym_swe.rollout.trajectory import Trajectory
from tests.conftest import require_bwrap
from tests.rollout.conftest import run_vllm_inprocess_check
from tests.rollout.scripted import ScriptedGenerator
from tests.rollout.vllm_server import VLLMServer

torch = pytest.importorskip("torch")

HOT = SamplingParams(max_tokens=12, temperature=1.0)


def chat_prompt(tokenizer, text: str) -> list[int]:  # type: ignore[no-untyped-def]
    return tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                         tokenize=True, return_dict=False)  # fmt: skip


def all_differ(samples: list) -> bool:
    return len({tuple(ids) for ids in samples}) == len(samples)


# -- the seeds ----------------------------------------------------------------------------------------------
def test_turn_seeds_are_distinct_and_the_same_in_every_run() -> None:
    seeds = [turn_seed(7, task, sample, turn) for task in ("GymSwe/0", "GymSwe/1") for sample in range(8)
             for turn in range(8)]  # fmt: skip
    assert len(set(seeds)) == len(seeds) and all(0 <= seed < 2**31 for seed in seeds)
    assert turn_seed(8, "GymSwe/0", 0, 0) != turn_seed(7, "GymSwe/0", 0, 0)
    # A hash of the values, not Python's per-process salted hash(): this number holds in every process.
    assert turn_seed(7, "GymSwe/0", 1, 2) == 746299643


@pytest.mark.parametrize("seeds", [[1], [1, 2, 3], [-1, 2], [True, 2], ["1", 2], [1.0, 2]])
def test_seeds_are_one_int_or_none_per_prompt(seeds: list) -> None:
    with pytest.raises(ConfigError, match="seed"):
        request_seeds([[1], [2]], seeds)
    assert request_seeds([[1], [2]], None) == [None, None]
    assert request_seeds([[1], [2]], [None, 3]) == [None, 3]


def test_a_run_seed_with_a_generator_that_takes_no_seeds_fails_loudly() -> None:
    """A seed the generator would drop is an error, not a silently unseeded run."""
    require_bwrap()
    from gym_swe.rollout.tiny import make_tiny_bpe_tokenizer
    from tests.rollout.conftest import MODELS

    path = make_tiny_bpe_tokenizer(MODELS)
    transformers = pytest.importorskip("transformers")
    generator = ScriptedGenerator(transformers.AutoTokenizer.from_pretrained(str(path)), ["no tool call"])
    with pytest.raises(TypeError, match="seeds"):
        collect(lambda: gymnasium.make("CodeDebug-v0", max_turns=1, max_episode_steps=1), generator,
                ["GymSwe/0"], sampling=SamplingParams(max_tokens=8), seed=1)  # fmt: skip


# -- hf ------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def hf(tiny_model: Path) -> HFGenerator:
    return make_generator("hf", model=str(tiny_model))


def test_hf_samples_of_one_prompt_differ(hf: HFGenerator) -> None:
    prompt = chat_prompt(hf.tokenizer, "fix the bug")
    assert all_differ([sample.token_ids for sample in hf.generate([prompt] * 4, HOT)])


def test_hf_unseeded_calls_draw_afresh_from_the_global_rng(hf: HFGenerator) -> None:
    """Turn 2 is not a replay of turn 1's random stream: each unseeded call goes on drawing."""
    prompt = chat_prompt(hf.tokenizer, "fix the bug")
    first, second = (hf.generate([prompt], HOT)[0].token_ids for _ in range(2))
    assert first != second
    # Unseeded draws are the caller's global RNG's: seeding it (the caller's choice) repeats them.
    torch.manual_seed(5)
    first = hf.generate([prompt], HOT)[0].token_ids
    torch.manual_seed(5)
    assert hf.generate([prompt], HOT)[0].token_ids == first


def test_hf_seeds_follow_each_prompt_and_leave_the_global_rng_alone(hf: HFGenerator) -> None:
    short = chat_prompt(hf.tokenizer, "hello")
    long = chat_prompt(hf.tokenizer, "a much longer message, with many more words in it")
    state = torch.get_rng_state()
    batch = [s.token_ids for s in hf.generate([short, short, long, short], HOT, seeds=[1, 2, 3, 1])]
    assert torch.equal(torch.get_rng_state(), state)
    assert batch[0] == batch[3] and batch[0] != batch[1]
    # A seeded prompt samples the same ids whatever else is in the batch: here alone, so unpadded.
    assert hf.generate([short], HOT, seeds=[2])[0].token_ids == batch[1]
    assert hf.generate([long], HOT, seeds=[3])[0].token_ids == batch[2]
    # Beside an unseeded prompt (which draws from the global RNG, not from the seeded one's stream).
    mixed = hf.generate([long, short], HOT, seeds=[None, 1])
    assert mixed[1].token_ids == batch[0] and mixed[0].token_ids != batch[2]


def test_a_seeded_collect_repeats_exactly_on_hf_and_its_samples_differ(hf: HFGenerator) -> None:
    require_bwrap()

    def run(seed: int | None) -> list[Trajectory]:
        return collect(lambda: gymnasium.make("CodeDebug-v0", max_turns=2, max_episode_steps=2), hf,
                       ["GymSwe/0"], samples_per_task=3, sampling=HOT, seed=seed)  # fmt: skip

    def turns(trajectory: Trajectory) -> list[list[int]]:
        return [trajectory.token_ids[turn.start : turn.start + turn.length] for turn in trajectory.turns]

    first, again, unseeded = run(7), run(7), run(None)
    for trajectory in first + unseeded:
        assert trajectory.error is None and len(trajectory.turns) == 2
        assert all_differ(turns(trajectory))  # turn 2 is not turn 1 again
    assert [t.token_ids for t in again] == [t.token_ids for t in first]
    assert [t.logprobs for t in again] == [t.logprobs for t in first]
    for group in (first, unseeded):
        assert all_differ([turns(t)[0] for t in group])  # one prompt, three different first turns


# -- vLLM in-process, on CPU --------------------------------------------------------------------------------
def test_vllm_in_process_samples_differ_and_seeds_repeat(vllm_inprocess_report: dict) -> None:
    report = vllm_inprocess_report
    assert all_differ(report["group"])
    seeded = report["seeded"]
    assert seeded[0] == seeded[2] == report["seeded_again"] and seeded[0] != seeded[1]
    # On CPU the generator runs whole prefills, so a seeded batch too long for one prefill step, whose
    # chunking would kill the engine ("CPU Generator does not use offset"), samples and repeats.
    assert report["chunked_prefill"] is False
    assert report["long_errors"] == [None] * 6 and all(report["long_first"])
    assert report["long_again"] == report["long_first"]


def test_vllm_in_process_chunking_on_cpu_refuses_seeds(tiny_model: Path, tmp_path: Path) -> None:
    """A vLLM engine of its own (chunked prefill on, which the shared server has off): its start on CPU is
    most of the time."""
    report = run_vllm_inprocess_check(tiny_model, tmp_path, "chunked")
    assert report["chunked_prefill"] is True
    assert report["refusal"] and "CPU Generator does not use offset" in report["refusal"]
    # Refused before anything reached the engine: it still serves unseeded requests, chunked and all.
    assert report["unseeded_errors"] == [None, None] and all_differ(report["unseeded_after"])


# -- vLLM server, on CPU -------------------------------------------------------------------------------------
def test_vllm_server_samples_of_one_prompt_differ(vllm_server: VLLMServer, tiny_model: Path) -> None:
    generator = VLLMServerGenerator(vllm_server.base_url, str(tiny_model), str(tiny_model))
    samples = generator.generate([chat_prompt(generator.tokenizer, "fix the bug")] * 4, HOT)
    assert [s.error for s in samples] == [None] * 4 and all_differ([s.token_ids for s in samples])
    generator.close()


def test_vllm_server_chunking_on_cpu_refuses_seeds(vllm_server: VLLMServer, tiny_model: Path) -> None:
    """The test server chunks prefills (vLLM's default): a seeded request chunked there would kill it."""
    generator = VLLMServerGenerator(vllm_server.base_url, str(tiny_model), str(tiny_model))
    prompt = chat_prompt(generator.tokenizer, "fix the bug")
    with pytest.raises(ConfigError, match="--no-enable-chunked-prefill"):
        generator.generate([prompt, prompt], HOT, seeds=[1, 2])
    assert generator.generate([prompt], HOT)[0].error is None
    generator.close()


def test_openai_chat_samples_differ_and_seeds_repeat(vllm_server: VLLMServer, tiny_model: Path) -> None:
    generator = make_generator("openai-chat", base_url=vllm_server.base_url, model=str(tiny_model))
    conversation = [{"role": "user", "content": "fix the bug"}]
    group = generator.generate_chat([conversation] * 3, [[]] * 3, HOT)
    assert [s.error for s in group] == [None] * 3 and all_differ([s.text for s in group])
    # One short request at a time: its prefill fits one step, so a seed is safe even on this CPU server.
    seeded = [generator.generate_chat([conversation], [[]], HOT, seeds=[seed])[0] for seed in (1, 2, 1)]
    assert [s.error for s in seeded] == [None] * 3
    assert seeded[0].text == seeded[2].text != seeded[1].text
    generator.close()


def test_the_hf_sampler_draws_from_the_distribution_it_is_given() -> None:
    """Inverse-CDF sampling: frequencies match the probabilities, an id of probability 0 never comes."""
    import torch

    from gym_swe.rollout.generators.hf import _Sampler

    probabilities = torch.tensor([0.1, 0.2, 0.3, 0.4, 0.0])
    scores = torch.log(probabilities).expand(20_000, 5).clone()
    generator = torch.Generator().manual_seed(7)
    seeded = _Sampler(torch, [generator] * 20_000)
    counts = torch.zeros(5)
    for sampler in (seeded, _Sampler(torch, [None] * 20_000)):
        chosen = sampler(None, scores).argmax(dim=-1)
        counts += torch.bincount(chosen, minlength=5)
        assert torch.allclose(sampler.logprobs[0], torch.log(probabilities[chosen]))
    frequencies = counts / counts.sum()
    assert frequencies[4] == 0
    assert torch.allclose(frequencies[:4], probabilities[:4], atol=0.01), frequencies
