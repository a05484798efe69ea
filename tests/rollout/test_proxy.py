"""The interception proxy over real HTTP (aiohttp server, requests and the OpenAI SDK as clients), with real
tokenizers and chat templates: token-exact trajectories, forks, streaming, retries, budgets, security."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("transformers")
requests = pytest.importorskip("requests")

from gym_swe.errors import ConfigError  # noqa: E402
from gym_swe.rollout.chat import ChatFormat  # noqa: E402
from gym_swe.rollout.generators.base import SamplingParams  # noqa: E402
from gym_swe.rollout.proxy import ProxyServer  # noqa: E402
from gym_swe.rollout.proxy.recorder import sampled_ids  # noqa: E402
from tests.rollout.conftest import MODELS, TOKENIZERS  # noqa: E402
from tests.rollout.scripted import ScriptedGenerator  # noqa: E402
from tests.rollout.test_trajectories import hermes, llama, mistral  # noqa: E402

BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a bash command",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}
OPENING = [{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "Fix solution.py."}]


class RecordingGenerator(ScriptedGenerator):
    """The scripted model, keeping every prompt it got, the ids it sampled and the parameters it was asked
    to sample with: what the trajectory must hold exactly."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.prompts: list[list[int]] = []
        self.sampled: list[list[int]] = []
        self.params: list[SamplingParams] = []
        self.batch_sizes: list[int] = []
        self._lock = threading.Lock()

    def generate(self, prompts, params):  # type: ignore[no-untyped-def]
        samples = super().generate(prompts, params)
        with self._lock:
            self.prompts += [list(p) for p in prompts]
            self.sampled += [s.token_ids for s in samples]
            self.params.append(params)
            self.batch_sizes.append(len(prompts))
        return samples


def tokenizer_for(name: str):  # type: ignore[no-untyped-def]
    from transformers import AutoTokenizer

    if name == "tiny-bpe":
        from gym_swe.rollout.tiny import make_tiny_bpe_tokenizer

        path = make_tiny_bpe_tokenizer(MODELS)
        return AutoTokenizer.from_pretrained(path)
    if not (TOKENIZERS / name).is_dir():
        pytest.skip(f"the shared tokenizer {name} is absent ({TOKENIZERS})")
    return AutoTokenizer.from_pretrained(TOKENIZERS / name)


@pytest.fixture(scope="module")
def tokenizer():  # type: ignore[no-untyped-def]
    """The real Qwen2.5 tokenizer where the shared data is, else the small one trained here."""
    return tokenizer_for("qwen2.5-instruct" if (TOKENIZERS / "qwen2.5-instruct").is_dir() else "tiny-bpe")


def commands(n: int) -> list[str]:
    return [hermes(f"echo turn # step {i}") for i in range(n)]


@pytest.fixture
def proxy(tokenizer) -> Iterator[ProxyServer]:  # type: ignore[no-untyped-def]
    generator = RecordingGenerator(tokenizer, commands(6))
    with ProxyServer(
        generator, SamplingParams(max_tokens=256, temperature=0.7), max_model_len=4096
    ) as server:
        yield server


def post(rollout, body: dict | bytes, secret: str | None = None, path: str = "/chat/completions"):  # type: ignore[no-untyped-def]
    headers = {"Authorization": f"Bearer {secret if secret is not None else rollout.secret}"}
    if isinstance(body, bytes):
        return requests.post(rollout.base_url + path, data=body, headers=headers, timeout=60)
    return requests.post(rollout.base_url + path, json=body, headers=headers, timeout=60)


def play(rollout, turns: int, tools: list | None = None, opening: list | None = None) -> list[dict]:  # type: ignore[no-untyped-def]
    """A harness: ``turns`` requests, each the last plus the answer plus one result per tool call."""
    messages = list(opening or OPENING)
    for index in range(turns):
        response = post(rollout, {"model": "gpt-4o", "messages": messages, "tools": tools or [BASH]})
        assert response.status_code == 200, response.text
        message = response.json()["choices"][0]["message"]
        messages.append(message)
        for call in message.get("tool_calls") or []:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": f"output {index}"})
        if not message.get("tool_calls"):
            messages.append({"role": "user", "content": "Use the bash tool."})
    return messages


# -- token-exactness -------------------------------------------------------------------------------------------
FAMILIES = {
    # tokenizer: (how that family writes a call, whether its template re-renders a history to the same ids)
    "tiny-bpe": (hermes, True),
    "qwen2.5-instruct": (hermes, True),
    "qwen3": (lambda c: hermes(c, "<think>\nLook.\n</think>\n\n"), None),
    "llama-3.1-instruct": (llama, None),
    "mistral-7b-instruct-v0.3": (mistral, None),
}


@pytest.mark.parametrize("family", FAMILIES)
def test_trajectory_holds_the_generators_ids_and_bridges_exactly(family: str) -> None:
    tokenizer = tokenizer_for(family)
    write, rerenders = FAMILIES[family]
    generator = RecordingGenerator(tokenizer, [write(f"ls -la # step {i}") for i in range(3)])
    with ProxyServer(generator, SamplingParams(max_tokens=256), max_model_len=8192) as server:
        rollout = server.open_rollout("task")
        messages = play(rollout, 3)
        trajectory = rollout.finish()
    assert all(m.get("tool_calls") for m in messages if m["role"] == "assistant"), messages
    # The sampled ids are exactly the generator's, turn by turn, with their logprobs and a loss mask of 1.
    assert sampled_ids(trajectory) == generator.sampled
    for turn in trajectory.turns:
        assert trajectory.loss_mask[turn.start : turn.start + turn.length] == [1] * turn.length
        assert trajectory.logprobs[turn.start : turn.start + turn.length] == [-0.5] * turn.length
    # What the generator saw at each turn is the trajectory up to that turn: no re-tokenization in between.
    for prompt, turn in zip(generator.prompts, trajectory.turns):
        assert prompt == trajectory.token_ids[: turn.start]
    # The opening is the template's own rendering of the first request; the bridges are the template's.
    chat = ChatFormat(tokenizer, [BASH])
    assert trajectory.token_ids[: trajectory.prompt_length] == chat.prompt_ids(OPENING)
    assert (trajectory.forks, trajectory.segment_count) == (0, 1)
    if rerenders:  # a prefix-preserving template re-renders the whole history to the same ids
        assert trajectory.rerender_matches is True
        assert chat.rerender_ids(messages[:-2], add_generation_prompt=True) == generator.prompts[-1]


def test_a_rewritten_history_is_a_counted_fork_not_wrong_ids(proxy, tokenizer) -> None:  # type: ignore[no-untyped-def]
    rollout = proxy.open_rollout("task")
    messages = play(rollout, 2)
    # The harness compacts its context: the first assistant turn and its result become one user message.
    rewritten = [*OPENING, {"role": "user", "content": "Earlier you ran a command."}, *messages[-2:]]
    response = post(rollout, {"messages": rewritten, "tools": [BASH]})
    assert response.status_code == 200, response.text
    trajectory = rollout.finish()
    generator = proxy.generator
    assert (trajectory.forks, trajectory.segment_count) == (1, 2)
    start = trajectory.segment_starts[0]
    # The new segment is the template's rendering of the rewritten history, and what the generator saw.
    assert generator.prompts[-1] == ChatFormat(tokenizer, [BASH]).prompt_ids(rewritten)
    assert trajectory.token_ids[start : trajectory.turns[-1].start] == generator.prompts[-1]
    assert sampled_ids(trajectory) == generator.sampled
    kinds = [kind for kind, _ in trajectory.segments()]
    assert kinds == ["prompt", "sampled", "bridge", "sampled", "prompt", "sampled"]
    assert [i for _, ids in trajectory.segments() for i in ids] == trajectory.token_ids
    assert [b - a for a, b in trajectory.segment_bounds()] == [start, len(trajectory.token_ids) - start]


def test_reserialized_tool_arguments_and_sdk_fields_still_extend(proxy) -> None:  # type: ignore[no-untyped-def]
    rollout = proxy.open_rollout("task")
    messages = play(rollout, 1)
    call = messages[2]["tool_calls"][0]
    arguments = json.loads(call["function"]["arguments"])
    messages[2] = {  # what an SDK echoes back: compact JSON, extra null fields
        **messages[2],
        "function_call": None,
        "refusal": None,
        "tool_calls": [
            {
                **call,
                "function": {**call["function"], "arguments": json.dumps(arguments, separators=(",", ":"))},
            }
        ],
    }
    assert post(rollout, {"messages": messages, "tools": [BASH]}).status_code == 200
    trajectory = rollout.finish()
    assert (trajectory.forks, len(trajectory.turns)) == (0, 2)
    assert trajectory.turns[0].bridge_length > 0


# -- the OpenAI surface ------------------------------------------------------------------------------------------
def test_trainer_sampling_and_model_override_the_harness(proxy) -> None:  # type: ignore[no-untyped-def]
    rollout = proxy.open_rollout("task")
    body = {"model": "gpt-4o", "messages": OPENING, "tools": [BASH], "temperature": 0.0, "max_tokens": 5000}
    response = post(rollout, body).json()
    assert response["model"] == proxy.model_name == "scripted"
    params = proxy.generator.params[-1]
    assert (params.temperature, params.max_tokens) == (0.7, 256)
    models = requests.get(rollout.base_url + "/models", headers={"Authorization": f"Bearer {rollout.secret}"})
    assert [m["id"] for m in models.json()["data"]] == ["scripted"]
    message = response["choices"][0]["message"]
    assert response["choices"][0]["finish_reason"] == "tool_calls"
    assert message["tool_calls"][0]["function"]["name"] == "bash"
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == {"command": "echo turn # step 0"}


def test_asking_again_after_the_answer_extends(proxy) -> None:  # type: ignore[no-untyped-def]
    rollout = proxy.open_rollout("task")
    answer = post(rollout, {"messages": OPENING}).json()["choices"][0]["message"]
    assert post(rollout, {"messages": [*OPENING, answer]}).status_code == 200  # no new message: go on
    trajectory = rollout.finish()
    assert (len(trajectory.turns), trajectory.forks) == (2, 0)
    assert proxy.generator.prompts[1] == trajectory.token_ids[: trajectory.turns[1].start]


def test_a_text_harness_gets_plain_content(proxy) -> None:  # type: ignore[no-untyped-def]
    rollout = proxy.open_rollout("task")
    response = post(rollout, {"messages": OPENING}).json()  # no tools: a text-based harness
    assert response["choices"][0]["message"] == {"role": "assistant", "content": proxy.generator.turns[0]}
    assert response["choices"][0]["finish_reason"] == "stop"


def test_streaming_with_the_openai_sdk(proxy) -> None:  # type: ignore[no-untyped-def]
    openai = pytest.importorskip("openai")
    rollout = proxy.open_rollout("task")
    client = openai.OpenAI(base_url=rollout.base_url, api_key=rollout.secret, max_retries=0)
    chunks = list(
        client.chat.completions.create(
            model="any", messages=OPENING, tools=[BASH], stream=True, stream_options={"include_usage": True}
        )
    )
    calls = [call for chunk in chunks if chunk.choices for call in chunk.choices[0].delta.tool_calls or []]
    assert [c.function.name for c in calls] == ["bash"]
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == [
        "tool_calls"
    ]
    assert chunks[-1].usage.completion_tokens == len(proxy.generator.sampled[0])
    # The non-streaming answer of the same client is an ordinary completion.
    followup = client.chat.completions.create(model="any", messages=OPENING, tools=[BASH])
    assert followup.choices[0].message.tool_calls[0].id == calls[0].id  # a replay: the same answer
    assert rollout.turns == 1


def test_a_retried_request_is_answered_from_the_record(proxy) -> None:  # type: ignore[no-untyped-def]
    rollout = proxy.open_rollout("task")
    body = {"messages": OPENING, "tools": [BASH]}
    first, again = post(rollout, body).json(), post(rollout, body).json()
    assert first == again
    assert rollout.turns == 1 and len(proxy.generator.sampled) == 1
    assert len(rollout.finish().turns) == 1


class SlowGenerator(RecordingGenerator):
    def generate(self, prompts, params):  # type: ignore[no-untyped-def]
        time.sleep(1.5)
        return super().generate(prompts, params)


def test_an_sdk_retry_after_a_client_timeout_gets_the_turn_once(tokenizer) -> None:  # type: ignore[no-untyped-def]
    """The client gives up before the answer (as an SDK with a short timeout does) and sends the same request
    again: the turn is generated and recorded once, and the retry gets its answer."""
    generator = SlowGenerator(tokenizer, commands(2))
    with ProxyServer(generator, SamplingParams(max_tokens=64)) as server:
        rollout = server.open_rollout("task")
        body = {"messages": OPENING, "tools": [BASH]}
        with pytest.raises(requests.exceptions.ReadTimeout):
            requests.post(rollout.base_url + "/chat/completions", json=body, timeout=0.3,
                          headers={"Authorization": f"Bearer {rollout.secret}"})  # fmt: skip
        retry = post(rollout, body)
        assert retry.status_code == 200
        assert retry.json()["choices"][0]["message"]["tool_calls"]
        trajectory = rollout.finish()
    assert len(generator.sampled) == 1 and len(trajectory.turns) == 1
    assert trajectory.token_ids == generator.prompts[0] + generator.sampled[0]


def test_concurrent_rollouts_are_batched_and_kept_apart(proxy) -> None:  # type: ignore[no-untyped-def]
    rollouts = [proxy.open_rollout(f"task-{i}") for i in range(8)]
    barrier = threading.Barrier(8)

    def harness(rollout):  # type: ignore[no-untyped-def]
        barrier.wait()
        opening = [OPENING[0], {"role": "user", "content": f"Fix bug {rollout.id}."}]
        return play(rollout, 3, opening=opening)

    threads = [threading.Thread(target=harness, args=(r,)) for r in rollouts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(proxy.registry) == 8
    trajectories = [r.finish() for r in rollouts]
    assert len(proxy.registry) == 0  # finished records are the caller's, not kept by the proxy
    assert all(len(t.turns) == 3 and t.forks == 0 for t in trajectories)
    for rollout, trajectory in zip(rollouts, trajectories):
        assert rollout.id in proxy.generator.tokenizer.decode(
            trajectory.token_ids[: trajectory.prompt_length]
        )
    assert max(proxy.generator.batch_sizes) > 1  # requests that arrived together shared a generator call


# -- budgets -----------------------------------------------------------------------------------------------------
def test_the_turn_budget_ends_the_rollout_with_a_403(proxy) -> None:  # type: ignore[no-untyped-def]
    rollout = proxy.open_rollout("task", max_turns=2)
    messages = play(rollout, 2)
    response = post(rollout, {"messages": messages, "tools": [BASH]})
    assert response.status_code == 403 and response.json()["error"]["code"] == "max_turns"
    assert rollout.ended and rollout.end_reason == "max_turns"
    assert post(rollout, {"messages": messages, "tools": [BASH]}).status_code == 404
    assert len(rollout.finish().turns) == 2


def test_max_tokens_is_capped_to_the_context_left_then_the_rollout_ends(tokenizer) -> None:  # type: ignore[no-untyped-def]
    generator = RecordingGenerator(tokenizer, commands(3), return_stop=False)
    room = 8
    length = len(ChatFormat(tokenizer, [BASH]).prompt_ids(OPENING)) + room
    with ProxyServer(generator, SamplingParams(max_tokens=256), max_model_len=length) as server:
        rollout = server.open_rollout("task")
        first = post(rollout, {"messages": OPENING, "tools": [BASH]})
        assert first.status_code == 200
        assert generator.params[-1].max_tokens == room and len(generator.sampled[-1]) <= room
        assert first.json()["choices"][0]["finish_reason"] == "length"
        message = first.json()["choices"][0]["message"]
        followup = [*OPENING, message, {"role": "user", "content": "go on"}]
        response = post(rollout, {"messages": followup, "tools": [BASH]})
        assert response.status_code == 400, response.text
        assert response.json()["error"]["code"] == "context_length_exceeded"
        assert "maximum context length" in response.json()["error"]["message"]
        assert rollout.end_reason == "max_model_len"


class ServerBackendGenerator(RecordingGenerator):
    """Batches concurrent requests itself, as vllm-server does: each request renders and generates in one
    thread of the proxy."""

    concurrent = True


def test_a_server_backend_gets_the_same_exact_ids_and_budget_errors(tokenizer) -> None:  # type: ignore[no-untyped-def]
    generator = ServerBackendGenerator(tokenizer, commands(4))
    with ProxyServer(generator, SamplingParams(max_tokens=256), max_model_len=4096) as server:
        rollout = server.open_rollout("task")
        messages = play(rollout, 3)
        trajectory = rollout.finish()
        assert sampled_ids(trajectory) == generator.sampled and len(generator.batch_sizes) == 3
        for prompt, turn in zip(generator.prompts, trajectory.turns):
            assert prompt == trajectory.token_ids[: turn.start]
        assert (trajectory.forks, trajectory.segment_count) == (0, 1)
        rollout = server.open_rollout("task")
        # The context budget, checked in the generating thread, still ends the rollout with its 400.
        long = [OPENING[0], {"role": "user", "content": "word " * 5000}]
        response = post(rollout, {"messages": long, "tools": [BASH]})
        assert response.status_code == 400 and response.json()["error"]["code"] == "context_length_exceeded"
        assert rollout.end_reason == "max_model_len" and len(generator.batch_sizes) == 3
    assert messages[-1]["role"] == "tool"


# -- security ----------------------------------------------------------------------------------------------------
def test_bad_requests_get_clear_errors_and_the_others_are_still_served(tokenizer) -> None:  # type: ignore[no-untyped-def]
    generator = RecordingGenerator(tokenizer, commands(10))
    with ProxyServer(generator, SamplingParams(max_tokens=64), max_body_bytes=64 * 1024) as server:
        mine, other, bystander = (server.open_rollout(f"t{i}") for i in range(3))
        body = {"messages": OPENING, "tools": [BASH]}
        cases = {
            "wrong secret": (post(mine, body, secret="not-the-secret"), 401, "invalid_api_key"),
            "no secret": (
                requests.post(mine.base_url + "/chat/completions", json=body, timeout=30),
                401,
                None,
            ),
            "another rollout's id": (post(other, body, secret=mine.secret), 401, "invalid_api_key"),
            "unknown rollout": (
                requests.post(
                    f"{server.url}/rollout/feedfacefeedface/v1/chat/completions",
                    json=body,
                    headers={"Authorization": f"Bearer {mine.secret}"},
                    timeout=30,
                ),
                404,
                "not_found",
            ),
            "oversized body": (
                post(mine, {"messages": [{"role": "user", "content": "x" * 100_000}]}),
                413,
                "request_too_large",
            ),
            "malformed JSON": (
                post(mine, b'{"messages": [{"role": "user", "content": "hi"'),
                400,
                "invalid_json",
            ),
            "not an object": (post(mine, b"[1, 2]"), 400, None),
            "bad role": (post(mine, {"messages": [{"role": "wizard", "content": "hi"}]}), 400, None),
            "n > 1": (post(mine, {**body, "n": 3}), 400, None),
        }
        for name, (response, status, code) in cases.items():
            assert response.status_code == status, (name, response.text)
            error = response.json()["error"]
            assert error["message"], name
            if code:
                assert error["code"] == code, name
        assert "system, developer, user, assistant, tool" in cases["bad role"][0].json()["error"]["message"]
        assert generator.prompts == []  # none of them reached the generator
        other_models = requests.get(
            other.base_url + "/models", headers={"Authorization": f"Bearer {mine.secret}"}
        )
        assert other_models.status_code == 401
        # The proxy still serves everyone, the offending rollout included; nothing leaked into other records.
        for rollout in (mine, other, bystander):
            assert post(rollout, body).status_code == 200
        mine.finish()
        after = post(mine, body)
        assert after.status_code == 404 and after.json()["error"]["code"] == "rollout_ended"
        assert (
            post(bystander, {**body, "messages": [*OPENING, {"role": "user", "content": "more"}]}).status_code
            == 200
        )
        assert [len(r.finish().turns) for r in (other, bystander)] == [1, 2]


def test_a_large_body_under_the_limit_is_served(tokenizer) -> None:  # type: ignore[no-untyped-def]
    generator = RecordingGenerator(tokenizer, commands(1))
    big = "line of tool output\n" * 150_000  # 3 MB: a long log pasted back by a harness
    with ProxyServer(generator, SamplingParams(max_tokens=64), max_model_len=2_000_000) as server:
        rollout = server.open_rollout("task")
        response = post(rollout, {"messages": [*OPENING, {"role": "user", "content": big}], "tools": [BASH]})
        assert response.status_code == 200, response.text[:500]
        assert big in generator.tokenizer.decode(generator.prompts[0])


def test_bad_configuration_is_refused(tokenizer) -> None:  # type: ignore[no-untyped-def]
    generator = RecordingGenerator(tokenizer, commands(1))
    with pytest.raises(ConfigError, match="max_body_bytes"):
        ProxyServer(generator, max_body_bytes=10)
    with pytest.raises(ConfigError, match="not running"):
        ProxyServer(generator).open_rollout("t")
    with ProxyServer(generator) as server, pytest.raises(ConfigError, match="max_turns"):
        server.open_rollout("t", max_turns=0)


def test_unix_socket(tokenizer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    aiohttp = pytest.importorskip("aiohttp")
    import asyncio

    generator = RecordingGenerator(tokenizer, commands(1))
    socket_path = str(tmp_path / "proxy.sock")
    with ProxyServer(generator, unix_socket=socket_path) as server:
        rollout = server.open_rollout("t")

        async def ask() -> tuple[int, dict]:
            connector = aiohttp.UnixConnector(path=socket_path)
            async with (
                aiohttp.ClientSession(connector=connector) as session,
                session.post(
                    f"http://localhost/rollout/{rollout.id}/v1/chat/completions",
                    json={"messages": OPENING, "tools": [BASH]},
                    headers={"Authorization": f"Bearer {rollout.secret}"},
                ) as response,
            ):
                return response.status, await response.json()

        status, body = asyncio.run(ask())
        assert status == 200 and body["choices"][0]["message"]["tool_calls"]


# -- bounded like a server facing untrusted clients ----------------------------------------------------------------
# Run in a bubblewrap jail, as an agent's own code would: connections to the proxy's socket (no secret needed),
# half of them sending nothing, half their headers a byte at a time. "hold": open TARGET connections, once;
# "reconnect": keep TARGET open, reopening at once each one the proxy closes (a client as fast as it can be).
FLOOD = r"""
import os, resource, selectors, socket, sys
path, target, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # more connections than the proxy's process may hold
selector, slow = selectors.DefaultSelector(), {}
HEAD = b"POST /rollout/0/v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
opened = closed = 0
print(os.getpid(), flush=True)
while True:
    budget = 500
    while budget and (len(selector.get_map()) < target if mode == "reconnect" else opened < target):
        budget -= 1
        connection = socket.socket(socket.AF_UNIX)
        connection.setblocking(False)
        if connection.connect_ex(path):  # the backlog is full: again later
            connection.close()
            continue
        selector.register(connection, selectors.EVENT_READ)
        opened += 1
        if opened % 2:
            slow[connection] = 0
    for key, _ in selector.select(timeout=0.2):
        try:
            data = key.fileobj.recv(4096)
        except OSError:
            data = b""
        if not data:  # the proxy closed it
            selector.unregister(key.fileobj)
            slow.pop(key.fileobj, None)
            key.fileobj.close()
            closed += 1
    for connection, sent in list(slow.items()):
        if sent < len(HEAD):
            try:
                connection.send(HEAD[sent : sent + 1])
                slow[connection] = sent + 1
            except OSError:
                pass
    print(f"opened {opened} closed {closed}", flush=True)
"""
DESCRIPTORS = 1024  # this process's descriptor limit during the flood tests: a flood of 3,000 is more


@pytest.fixture
def few_descriptors() -> Iterator[int]:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, DESCRIPTORS), hard))
    try:
        yield min(soft, DESCRIPTORS)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


class Flood:
    """FLOOD running in the background in a jail of its own that has ``socket_dir`` (and nothing else of the
    proxy's) at /run/gym-swe-proxy."""

    def __init__(self, socket_dir: Path, mode: str, target: int = 3000) -> None:
        from gym_swe.sandbox import make_sandbox
        from tests.conftest import require_bwrap

        require_bwrap()
        self.jail = make_sandbox("local", ro_binds={str(socket_dir): "/run/gym-swe-proxy"})
        self.jail.write_file("/tmp/flood.py", FLOOD)
        command = (
            f"python3 /tmp/flood.py /run/gym-swe-proxy/proxy.sock {target} {mode} > /tmp/flood.log 2>&1 &"
        )
        assert self.jail.exec(command).exit_code == 0

    def counts(self) -> dict[str, int]:
        lines = self.jail.exec("tail -n 1 /tmp/flood.log").output.split()
        return (
            {"opened": int(lines[1]), "closed": int(lines[3])}
            if len(lines) == 4
            else {"opened": 0, "closed": 0}
        )

    def wait(self, opened: int) -> dict[str, int]:
        while (counts := self.counts())["opened"] < opened:
            time.sleep(0.1)
        return counts

    def stop(self) -> None:
        pid = self.jail.exec("head -n 1 /tmp/flood.log").output.strip()
        self.jail.exec(f"kill {pid}")

    def close(self) -> None:
        self.jail.close()


def play_over_socket(socket_path: str, rollout, turns: int) -> None:  # type: ignore[no-untyped-def]
    """A harness on the OpenAI SDK (its own retries) over the proxy's unix socket: ``turns`` requests, each
    the last plus the answer and its tool results."""
    import httpx
    from openai import OpenAI

    http = httpx.Client(transport=httpx.HTTPTransport(uds=socket_path))
    client = OpenAI(
        base_url=f"http://localhost/rollout/{rollout.id}/v1", api_key=rollout.secret, http_client=http
    )
    messages = list(OPENING)
    for index in range(turns):
        reply = client.chat.completions.create(model="any", messages=messages, tools=[BASH])
        message = reply.choices[0].message.model_dump(exclude_none=True)
        messages.append(message)
        for call in message.get("tool_calls") or []:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": f"output {index}"})
    http.close()


def test_unbounded_a_flood_from_a_jail_takes_every_descriptor_of_the_process(  # type: ignore[no-untyped-def]
    tokenizer, tmp_path: Path, few_descriptors: int
) -> None:
    """The control: with the bounds lifted, the attack below is real (the process cannot open a file)."""
    generator = RecordingGenerator(tokenizer, commands(1))
    proxy = ProxyServer(generator, unix_socket=str(tmp_path / "proxy.sock"), max_connections=10**6,
                        idle_timeout=3600).start()  # fmt: skip
    flood = None
    try:
        flood = Flood(tmp_path, "hold")
        flood.wait(opened=few_descriptors)
        with pytest.raises(OSError, match="Too many open files"):
            open(tmp_path / "any", "w").close()
    finally:
        proxy.close()  # its connections first: then the process has descriptors to close the jail with
        if flood is not None:
            flood.close()


@pytest.mark.parametrize("where", ["the harness's socket", "a socket of its own"])
def test_a_flood_from_a_jail_starves_no_rollout_and_no_descriptor(  # type: ignore[no-untyped-def]
    tokenizer, tmp_path: Path, few_descriptors: int, where: str
) -> None:
    """3,000 connections that send nothing or their headers slowly, more than the process has descriptors:
    an honest harness's rollout on the same proxy still gets its exact ids, and the process can still open
    files and start processes. On the harness's own socket the flood opens its connections once; on a socket
    of its own (`ProxyServer.listen`, one per sandbox), it reopens each one the proxy closes, at once."""
    import subprocess

    (tmp_path / "jail").mkdir()
    generator = RecordingGenerator(tokenizer, commands(6))
    harness_socket = str(tmp_path / "proxy.sock")
    flood = None
    with ProxyServer(generator, SamplingParams(max_tokens=64), unix_socket=harness_socket) as proxy:
        assert proxy.connections.max_connections == few_descriptors // 4  # the default: a quarter
        try:
            if where == "a socket of its own":
                proxy.listen(str(tmp_path / "jail" / "proxy.sock"))
                flood = Flood(tmp_path / "jail", "reconnect")
                flood.wait(opened=3000)
            else:
                flood = Flood(tmp_path, "hold")
                flood.wait(opened=3000)
            rollout = proxy.open_rollout("t")
            play_over_socket(harness_socket, rollout, turns=5)
            open(tmp_path / "still", "w").close()  # descriptors are left to the process
            assert subprocess.run(["true"]).returncode == 0
            counts = flood.counts()
        finally:
            if flood is not None:
                flood.close()
        trajectory = rollout.finish()
        assert sampled_ids(trajectory) == generator.sampled and len(trajectory.turns) == 5
        assert [trajectory.token_ids[: turn.start] for turn in trajectory.turns] == generator.prompts
        assert trajectory.forks == 0 and trajectory.rerender_matches is True
        # What made room: the flood's connections, closed by the proxy (the honest one's were served).
        assert counts["closed"] >= 3000 - proxy.connections.max_connections - 128  # 128: the kernel's backlog
        assert proxy.connections.evicted >= counts["closed"]
        assert proxy.connections.open_connections <= proxy.connections.max_connections


def raw_request(address: tuple[str, int], rollout_id: str, secret: str, body: bytes, sent: int | None = None):  # type: ignore[no-untyped-def]
    """A connection that sends a request's headers and the first ``sent`` bytes of ``body`` (all: None)."""
    import socket

    connection = socket.create_connection(address)
    head = (
        f"POST /rollout/{rollout_id}/v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n"
        f"Authorization: Bearer {secret}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    connection.sendall(head + body[: len(body) if sent is None else sent])
    return connection


def status_of(connection) -> int:  # type: ignore[no-untyped-def]
    reply = b""
    while b"\r\n" not in reply:
        chunk = connection.recv(4096)
        if not chunk:
            break
        reply += chunk
    connection.close()
    return int(reply.split()[1]) if reply else 0


def test_one_rollout_cannot_take_more_than_its_share_of_requests(tokenizer) -> None:  # type: ignore[no-untyped-def]
    """An agent that knows its own rollout's secret opens requests whose bodies never finish: past
    max_connections_per_rollout they get a 429, each a 408 once idle_timeout has passed, and no other
    rollout waits meanwhile. Requests without the secret, however slow, hold nothing of anyone's."""
    generator = RecordingGenerator(tokenizer, commands(3))
    with ProxyServer(generator, SamplingParams(max_tokens=64), max_connections_per_rollout=2,
                     idle_timeout=2) as proxy:  # fmt: skip
        mine, other = proxy.open_rollout("mine"), proxy.open_rollout("other")
        address = (proxy.url.split("//")[1].split(":")[0], int(proxy.url.rsplit(":", 1)[1]))
        body = json.dumps({"messages": OPENING, "tools": [BASH]}).encode()
        stalled = [raw_request(address, mine.id, mine.secret, body, sent=10) for _ in range(2)]
        while proxy.connections.requests_of(mine.id) < 2:
            time.sleep(0.01)
        assert status_of(raw_request(address, mine.id, mine.secret, body)) == 429
        squatters = [raw_request(address, other.id, "guess", body, sent=10) for _ in range(4)]
        assert [status_of(connection) for connection in squatters] == [401] * 4
        assert post(other, {"messages": OPENING, "tools": [BASH]}).status_code == 200
        assert [status_of(connection) for connection in stalled] == [408, 408]
        assert post(mine, {"messages": OPENING, "tools": [BASH]}).status_code == 200  # its share is back
        assert proxy.connections.over_rollout == 1


def test_a_connection_that_sends_no_whole_request_in_time_is_closed(tokenizer) -> None:  # type: ignore[no-untyped-def]
    import socket

    with ProxyServer(RecordingGenerator(tokenizer, commands(1)), idle_timeout=1) as proxy:
        address = (proxy.url.split("//")[1].split(":")[0], int(proxy.url.rsplit(":", 1)[1]))
        silent = socket.create_connection(address)
        assert silent.recv(1) == b""  # closed by the proxy, having sent nothing
        trickling = socket.create_connection(address)
        trickling.settimeout(0.1)
        head, closed = b"POST /rollout/x/v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n" * 50, False
        for byte in range(len(head)):  # one byte at a time, the headers never done
            try:
                trickling.send(head[byte : byte + 1])
                closed = trickling.recv(1) == b""
            except TimeoutError:
                continue
            except OSError:
                closed = True
            if closed:
                break
        assert closed
        silent.close()
        trickling.close()


class Recorded:
    """A real generator, its calls kept: what the trajectory must hold exactly."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.name, self.tokenizer = inner, inner.name, inner.tokenizer
        self.concurrent = getattr(inner, "concurrent", False)
        self.calls: list[tuple[list[int], list[int], list[float] | None]] = []
        self._lock = threading.Lock()

    def generate(self, prompts, params):  # type: ignore[no-untyped-def]
        samples = self.inner.generate(prompts, params)
        with self._lock:
            self.calls += [(list(p), s.token_ids, s.logprobs) for p, s in zip(prompts, samples)]
        return samples

    def close(self) -> None:
        self.inner.close()


def test_rollouts_through_a_real_vllm_server(vllm_server, tiny_model: Path) -> None:  # type: ignore[no-untyped-def]
    """Concurrent harnesses, each request its own call to a real vLLM (CPU) server: the trajectories hold
    exactly the ids vLLM sampled, with its log-probabilities, and what it was prompted with."""
    from gym_swe.rollout.generators.vllm_server import VLLMServerGenerator

    generator = Recorded(VLLMServerGenerator(vllm_server.base_url, str(tiny_model), str(tiny_model)))
    assert generator.concurrent
    with ProxyServer(generator, SamplingParams(max_tokens=16, temperature=0.8), max_model_len=4096) as server:
        rollouts = [server.open_rollout(f"t{i}") for i in range(4)]
        openings = [[OPENING[0], {"role": "user", "content": f"Fix bug {i}."}] for i in range(4)]
        threads = [threading.Thread(target=play, args=(r, 2, None, o)) for r, o in zip(rollouts, openings)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        trajectories = [r.finish() for r in rollouts]
    generator.close()
    calls = {tuple(prompt): (ids, logprobs) for prompt, ids, logprobs in generator.calls}
    assert len(calls) == 8
    for trajectory in trajectories:
        assert len(trajectory.turns) == 2 and trajectory.forks == 0
        for turn in trajectory.turns:
            ids, logprobs = calls[tuple(trajectory.token_ids[: turn.start])]
            assert trajectory.token_ids[turn.start : turn.start + turn.length] == ids
            assert trajectory.logprobs[turn.start : turn.start + turn.length] == logprobs
            assert logprobs is not None and all(isinstance(lp, float) for lp in logprobs)
