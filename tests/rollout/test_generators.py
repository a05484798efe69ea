"""Generators against real models: transformers on the tiny model, and real vLLM on CPU (server and
in-process). Log-probabilities must be those of the distribution actually sampled from."""

from __future__ import annotations

import math
import socket
import threading
import time
from pathlib import Path

import pytest

from gym_swe.errors import ConfigError
from gym_swe.rollout.generators import GENERATORS, Generator, SamplingParams, make_generator
from gym_swe.rollout.generators.vllm_server import VLLMServerGenerator, parse_completion
from tests.rollout.scripted_http import Answer, scripted_server

torch = pytest.importorskip("torch")


def chat_prompt(tokenizer, text: str) -> list[int]:  # type: ignore[no-untyped-def]
    return tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                         tokenize=True, return_dict=False)  # fmt: skip


def processed_logprobs(
    model, prompt: list[int], sampled: list[int], temperature: float, top_p: float
) -> list[float]:  # type: ignore[no-untyped-def]
    """What the sampling distribution gave each sampled id, recomputed with transformers' own warpers."""
    from transformers.generation.logits_process import TemperatureLogitsWarper, TopPLogitsWarper

    ids = torch.tensor([prompt + sampled])
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt) - 1 : -1].float()
    values = []
    for step, token in enumerate(sampled):
        scores = logits[step : step + 1]
        scores = TemperatureLogitsWarper(temperature)(ids[:, : len(prompt) + step], scores)
        if top_p < 1:
            scores = TopPLogitsWarper(top_p)(ids[:, : len(prompt) + step], scores)
        values.append(float(torch.log_softmax(scores, dim=-1)[0, token]))
    return values


def test_unknown_generator_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="Did you mean 'vllm-server'"):
        make_generator("vllm_server")
    assert set(GENERATORS) == {"hf", "vllm", "vllm-server", "openai-chat"}


@pytest.mark.parametrize(("name", "kwargs", "message"), [
    ("hf", {"model": "/no/such/model"}, "model '/no/such/model': no such directory"),
    ("hf", {"model": "./no-such-model"}, "no such directory"),
    ("vllm-server", {}, r"generator 'vllm-server' needs base_url, model, tokenizer: make_generator\("),
    ("vllm-server", {"model": "m", "tokenizer": "t"}, "'vllm-server' needs base_url:"),
])  # fmt: skip
def test_a_missing_model_or_argument_is_one_line_naming_it(name: str, kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        make_generator(name, **kwargs)
    assert "\n" not in str(raised.value)


def kebab(option: str) -> str:
    return "--" + option.replace("_", "-")


def test_a_command_line_is_told_in_its_own_flags() -> None:
    with pytest.raises(ConfigError) as raised:
        make_generator("vllm-server", model="m", tokenizer="t", flags=kebab)
    assert str(raised.value) == "--generator vllm-server needs --base-url (the server's address)"
    with pytest.raises(ConfigError, match=r"^--model '/no/such/model': no such directory"):
        make_generator("hf", model="/no/such/model", flags=kebab)


def test_an_option_the_kind_does_not_take_is_refused_with_the_nearest() -> None:
    with pytest.raises(
        ConfigError, match=r"make_generator\('hf'\): Unknown option 'devcie'. Did you mean 'device'"
    ):
        make_generator("hf", model="gpt2", devcie="cpu")


def test_a_vllm_server_that_does_not_answer_fails_before_the_tokenizer_loads(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    started = time.monotonic()
    with pytest.raises(ConfigError) as raised:  # tmp_path holds no tokenizer: loading it would fail too
        make_generator(
            "vllm-server", base_url=url, model="m", tokenizer=str(tmp_path), flags=lambda o: "--" + o
        )
    assert str(raised.value).startswith(f"--base_url {url}: no vLLM server answers there (")
    assert "Connection refused" in str(raised.value) and "\n" not in str(raised.value)
    assert time.monotonic() - started < 5  # one attempt: a dead server is not waited for
    refused = pytest.raises(ConfigError, match=r"no vLLM server answers there \(HTTP 404 at /v1/models\)")
    with scripted_server(Answer(404, {"detail": "Not Found"})) as server, refused:
        make_generator("vllm-server", base_url=server.url + "/v1/", model="m", tokenizer=str(tmp_path))
    assert server.paths == ["/v1/models"]


def test_hf_is_a_generator_that_shares_the_trainers_model(tiny_model: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    trainer = AutoModelForCausalLM.from_pretrained(str(tiny_model))
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model))
    generator = make_generator(
        "hf", model="/not/loaded", trainer_model=trainer, tokenizer=tokenizer, batch_size=3
    )
    assert isinstance(generator, Generator) and generator.model is trainer and generator.batch_size == 3


def test_openai_chat_retries_a_429_and_sends_its_key() -> None:
    reply = {"choices": [{"message": {"content": "hi", "tool_calls": None}, "finish_reason": "stop"}]}
    models = Answer(200, {"data": [{"id": "m"}]})  # the probe make_generator sends first
    with scripted_server(
        models, Answer(429, {"error": "slow down"}, headers={"Retry-After": "0"}), Answer(200, reply)
    ) as server:
        generator = make_generator("openai-chat", base_url=server.url, model="m", api_key="k")
        assert isinstance(generator, Generator)
        [sample] = generator.generate_chat(
            [[{"role": "user", "content": "x"}]], [[]], SamplingParams(max_tokens=4)
        )
        generator.close()
    assert sample.error is None and sample.message["content"] == "hi" and sample.finish_reason == "stop"
    assert server.paths == ["/v1/models"] + ["/v1/chat/completions"] * 2
    assert server.authorizations == ["Bearer k"] * 3
    assert server.bodies[1]["model"] == "m" and "tools" not in server.bodies[1]


def test_openai_chat_checks_its_endpoint_first() -> None:
    """A dead endpoint and a refused key are one line at once; an endpoint without a model list is trusted."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    with pytest.raises(ConfigError, match=r"^base_url http://127.0.0.1:\d+/v1: no server answers there \("):
        make_generator("openai-chat", base_url=url, model="m")
    refused = pytest.raises(
        ConfigError, match=r"refused the API key \(HTTP 401 at /v1/models\): give api_key"
    )
    with scripted_server(Answer(401, {"error": "bad key"})) as server, refused:
        make_generator("openai-chat", base_url=server.url, model="m", api_key="wrong")
    with scripted_server(Answer(404, {"detail": "Not Found"})) as server:
        make_generator("openai-chat", base_url=server.url, model="m").close()


def test_hf_samples_with_the_logprobs_of_the_sampling_distribution(tiny_model: Path) -> None:
    generator = make_generator("hf", model=str(tiny_model))
    prompts = [
        chat_prompt(generator.tokenizer, "hello"),
        chat_prompt(generator.tokenizer, "a longer message here"),
    ]
    params = SamplingParams(max_tokens=12, temperature=0.7, top_p=0.9)
    samples = generator.generate(prompts, params, seeds=[3, 4])
    assert len(samples) == 2
    for prompt, sample in zip(prompts, samples):
        assert sample.error is None and sample.finish_reason in ("stop", "length")
        assert 0 < len(sample.token_ids) <= 12 and len(sample.logprobs) == len(sample.token_ids)
        expected = processed_logprobs(generator.model, prompt, sample.token_ids, 0.7, 0.9)
        assert sample.logprobs == pytest.approx(expected, abs=1e-4)
        # Not the raw distribution: temperature and top-p changed it.
        raw = processed_logprobs(generator.model, prompt, sample.token_ids, 1.0, 1.0)
        assert max(abs(a - b) for a, b in zip(raw, sample.logprobs)) > 1e-3
    again = generator.generate(prompts, params, seeds=[3, 4])
    assert [s.token_ids for s in again] == [s.token_ids for s in samples]  # the seeds make it reproducible


def test_hf_greedy_logprobs_are_the_models(tiny_model: Path) -> None:
    generator = make_generator("hf", model=str(tiny_model))
    prompts = [chat_prompt(generator.tokenizer, "hi"), chat_prompt(generator.tokenizer, "a longer one here")]
    for prompt, sample in zip(
        prompts, generator.generate(prompts, SamplingParams(max_tokens=6, temperature=0))
    ):
        assert len(sample.token_ids) == len(sample.logprobs) > 0
        expected = processed_logprobs(generator.model, prompt, sample.token_ids, 1.0, 1.0)
        assert sample.logprobs == pytest.approx(expected, abs=1e-4)


def test_hf_sync_weights_changes_generation(tiny_model: Path) -> None:
    from transformers import AutoModelForCausalLM

    generator = make_generator("hf", model=str(tiny_model))
    prompt = [chat_prompt(generator.tokenizer, "hi")]
    greedy = SamplingParams(max_tokens=6, temperature=0.0)
    before = generator.generate(prompt, greedy)[0]
    other = AutoModelForCausalLM.from_pretrained(str(tiny_model))
    with torch.no_grad():
        for parameter in other.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.5)
    generator.sync_weights(other)
    after = generator.generate(prompt, greedy)[0]
    assert after.logprobs != pytest.approx(before.logprobs, abs=1e-3)


# -- what real servers send ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("choice", "ids", "logprobs", "details"), [
    ({"text": "ab", "finish_reason": "stop", "token_ids": [5, 6], "logprobs": {"token_logprobs": [-0.1, -0.2]}},
     [5, 6], [-0.1, -0.2], {}),
    ({"text": "ab", "finish_reason": "length", "logprobs": {"tokens": ["token_id:7", "token_id:8"], "token_logprobs": [-1.0, -2.0]}},
     [7, 8], [-1.0, -2.0], {}),
    ({"text": "ab", "finish_reason": "stop", "token_ids": [5, 6], "logprobs": None}, [5, 6], None, {"logprobs_missing": True}),
    ({"text": "ab", "finish_reason": "stop", "token_ids": [5, 6], "logprobs": {"token_logprobs": [None, -0.2]}},
     [5, 6], None, {"logprobs_missing": True}),
])  # fmt: skip
def test_parse_completion_variants(choice, ids, logprobs, details) -> None:
    sample = parse_completion({"choices": [choice]})
    assert sample.token_ids == ids and sample.logprobs == logprobs and sample.details == details


def test_a_completion_without_token_ids_is_refused() -> None:
    with pytest.raises(ValueError, match="no token ids"):
        parse_completion({"choices": [{"text": "x", "finish_reason": "stop", "logprobs": None}]})


# -- real vLLM on CPU --------------------------------------------------------------------------------------------
def test_vllm_server_generates_with_processed_logprobs(vllm_server, tiny_model: Path) -> None:
    from transformers import AutoModelForCausalLM

    generator = VLLMServerGenerator(vllm_server.base_url, str(tiny_model), str(tiny_model))
    prompts = [chat_prompt(generator.tokenizer, f"message {i}") for i in range(3)]
    samples = generator.generate(prompts, SamplingParams(max_tokens=8, temperature=0.8))
    model = AutoModelForCausalLM.from_pretrained(str(tiny_model))
    for prompt, sample in zip(prompts, samples):
        assert sample.error is None and len(sample.token_ids) == len(sample.logprobs) > 0
        expected = processed_logprobs(model, prompt, sample.token_ids, 0.8, 1.0)
        assert sample.logprobs == pytest.approx(expected, abs=2e-3)
    generator.close()


def test_vllm_server_too_long_prompt_is_a_truncation_not_an_error(vllm_server, tiny_model: Path) -> None:
    generator = VLLMServerGenerator(vllm_server.base_url, str(tiny_model), str(tiny_model))
    good = chat_prompt(generator.tokenizer, "short")
    samples = generator.generate([[100] * 5000, good], SamplingParams(max_tokens=4))
    assert samples[0].details.get("context_exceeded") and samples[0].error is None
    assert samples[1].error is None and samples[1].token_ids
    generator.close()


class FlakyProxy:
    """A TCP proxy to the server that drops its first ``drops`` connections without a reply."""

    def __init__(self, port: int, drops: int) -> None:
        self.target, self.drops = port, drops
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            if self.connections <= self.drops:
                client.close()
                continue
            upstream = socket.create_connection(("127.0.0.1", self.target))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.listener.close()


def test_vllm_server_dropped_connections_are_retried(vllm_server, tiny_model: Path) -> None:
    proxy = FlakyProxy(vllm_server.port, drops=2)
    generator = VLLMServerGenerator(
        f"http://127.0.0.1:{proxy.port}", str(tiny_model), str(tiny_model), max_retries=3
    )
    sample = generator.generate([chat_prompt(generator.tokenizer, "hi")], SamplingParams(max_tokens=4))[0]
    assert sample.error is None and sample.token_ids and proxy.connections == 3
    hopeless = FlakyProxy(vllm_server.port, drops=100)
    generator = VLLMServerGenerator(
        f"http://127.0.0.1:{hopeless.port}", str(tiny_model), str(tiny_model), max_retries=1
    )
    sample = generator.generate([chat_prompt(generator.tokenizer, "hi")], SamplingParams(max_tokens=4))[0]
    assert sample.finish_reason == "error" and "after 2 tries" in sample.error
    proxy.close()
    hopeless.close()


def test_vllm_in_process_and_weight_sync(vllm_inprocess_report: dict) -> None:
    """vllm.LLM in vLLM's own environment: token-id prompts, processed logprobs, and sync_weights."""
    report = vllm_inprocess_report
    assert report["samples"] == 2 and report["logprobs_match_tokens"]
    assert report["max_logprob_error"] < 2e-3
    assert report["changed_after_sync"] and report["restored_after_sync"]


def test_collect_with_the_vllm_server(vllm_server, tiny_model: Path) -> None:
    import gymnasium

    import gym_swe  # noqa: F401
    from gym_swe.rollout.collector import collect
    from tests.conftest import require_bwrap

    require_bwrap()
    generator = VLLMServerGenerator(vllm_server.base_url, str(tiny_model), str(tiny_model))
    trajectories = collect(lambda: gymnasium.make("CodeDebug-v0", max_turns=2, max_episode_steps=2), generator,
                           ["GymSwe/0", "GymSwe/1"], samples_per_task=2, max_model_len=4096,
                           sampling=SamplingParams(max_tokens=16, temperature=1.0))  # fmt: skip
    assert len(trajectories) == 4
    for trajectory in trajectories:
        assert trajectory.error is None and trajectory.end_reason == "max_turns"
        sampled = [lp for lp, m in zip(trajectory.logprobs, trajectory.loss_mask) if m]
        assert sampled and all(isinstance(v, float) and math.isfinite(v) for v in sampled)
        assert len(trajectory.turns) == 2 and trajectory.grade is not None
    generator.close()


def test_openai_chat_against_vllms_chat_endpoint(vllm_server, tiny_model: Path) -> None:
    """Evaluation-only: messages in, assistant messages out, no tokens (a random model calls no tools)."""
    import gymnasium

    import gym_swe  # noqa: F401
    from gym_swe.rollout.collector import collect
    from tests.conftest import require_bwrap

    require_bwrap()
    generator = make_generator("openai-chat", base_url=vllm_server.base_url, model=str(tiny_model))
    trajectories = collect(lambda: gymnasium.make("CodeDebug-v0", max_turns=2, max_episode_steps=2), generator,
                           ["GymSwe/0"], sampling=SamplingParams(max_tokens=16))  # fmt: skip
    trajectory = trajectories[0]
    assert trajectory.error is None and trajectory.token_ids == [] and len(trajectory.turns) == 2
    assert trajectory.end_reason == "max_turns" and trajectory.grade is not None
