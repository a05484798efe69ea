"""Black-box mode: the proxy over ``openai-chat`` (a hosted model: the scripted OpenAI-compatible endpoint of
``hosted.py``, over real HTTP), with each dialect's real client SDK as the harness. A turn goes to the endpoint
as messages and comes back in the harness's dialect, whole or streamed; the trajectory is the messages, with
no token ids; the budgets, the generator's failures and the registry are the token mode's."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from gym_swe.errors import ConfigError
from gym_swe.rollout.generators import SamplingParams, make_generator
from gym_swe.rollout.proxy import ProxyServer
from gym_swe.rollout.trajectory import Trajectory
from tests.rollout.proxy.harness import SYSTEM, TASK, script
from tests.rollout.proxy.hosted import Failure, HostedModel, Plan

requests = pytest.importorskip("requests")
pytest.importorskip("aiohttp")

DIALECTS = ("chat_completions", "responses", "anthropic_messages", "google_generate")


@pytest.fixture(scope="module")
def hosted() -> Iterator[HostedModel]:
    server = HostedModel()
    yield server
    server.close()


def proxy_over(hosted: HostedModel, model: str, max_tokens: int = 256, **options: Any) -> ProxyServer:
    generator = make_generator("openai-chat", base_url=hosted.base_url, model=model, api_key="hosted-key")
    return ProxyServer(generator, SamplingParams(max_tokens=max_tokens), **options)


def player(dialect: str) -> Callable[[Any, int, bool], list[Any]]:
    """Each dialect's own test harness (a real SDK client re-sending the conversation with the tool results):
    ``play(rollout, turns, stream)``."""
    if dialect == "chat_completions":
        from tests.rollout.proxy import test_chat_completions as chat

        return lambda rollout, turns, stream: chat.play(chat.client_for(rollout), turns, stream)
    if dialect == "responses":
        from tests.rollout.proxy import test_responses as responses

        return lambda rollout, turns, stream: responses.play(responses.client_for(rollout), turns, stream)[0]
    if dialect == "anthropic_messages":
        from tests.rollout.proxy import test_anthropic_messages as anthropic

        return lambda rollout, turns, stream: anthropic.play(anthropic.client_for(rollout), turns, stream)
    from tests.rollout.proxy import test_google_generate as google

    return lambda rollout, turns, stream: google.play(google.client_for(rollout), turns, stream)


def chat_post(rollout: Any, body: dict[str, Any]) -> Any:
    headers = {"Authorization": f"Bearer {rollout.secret}"}
    return requests.post(rollout.base_url + "/chat/completions", json=body, headers=headers, timeout=60)


def request(turn: int) -> dict[str, Any]:
    """A chat completions request after ``turn`` turns of the plan, each a call and its result."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
    ]
    for step in range(turn):
        call = {"id": f"call{step:03d}00", "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": f"ls # step {step}"})}}  # fmt: skip
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": f"output {step}"},
        ]
    return {"model": "any", "messages": messages}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_hosted_model_plays_each_dialect(hosted: HostedModel, dialect: str, stream: bool) -> None:
    """Two tool calls and a final answer: the harness sees the hosted model's calls in its dialect (with the
    proxy's call ids), its results reach the model as tool messages, and the trajectory is the messages."""
    model = hosted.plan(f"{dialect}-{stream}", Plan(script(2), reasoning=True))
    with proxy_over(hosted, model) as proxy:
        rollout = proxy.open_rollout("task")
        player(dialect)(rollout, 3, stream)
        trajectory = rollout.finish()
    assert trajectory.error is None, trajectory.error
    assert (trajectory.has_token_ids, trajectory.token_ids, trajectory.logprobs) == (False, [], [])
    assert [(turn.length, turn.finish_reason) for turn in trajectory.turns] == [
        (0, "tool_calls"),
        (0, "tool_calls"),
        (0, "stop"),
    ]
    assert (trajectory.forks, trajectory.generator, trajectory.rerender_matches) == (0, "openai-chat", None)
    assert [turn.observation for turn in trajectory.turns[:2]] == ["output 0", "output 1"]
    assert trajectory.tools[0]["function"]["name"] == "bash"
    assistant = [m for m in trajectory.messages if m["role"] == "assistant"]
    assert [call["id"] for m in assistant[:2] for call in m["tool_calls"]] == ["call00000", "call00100"]
    assert json.loads(assistant[1]["tool_calls"][0]["function"]["arguments"]) == {"command": "ls # step 1"}
    assert "Fixed it # step 2" in assistant[2]["content"]
    assert assistant[2]["reasoning_content"] == "Thinking about step 2."  # the endpoint's, apart
    # What the endpoint was sent last: the conversation so far, the harness's tools, its results.
    sent = hosted.requests_for(model)
    assert len(sent) == 3 and sent[-1]["tools"][0]["function"]["name"] == "bash"
    roles = [m["role"] for m in sent[-1]["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert sent[-1]["messages"][-1] == {"role": "tool", "tool_call_id": "call00100", "content": "output 1"}
    call = {"id": "call00000", "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": "ls # step 0"})}}  # fmt: skip
    assert sent[-1]["messages"][2]["tool_calls"] == [call]  # as the endpoint takes it: no SDK extras
    assert sent[-1]["messages"][4]["reasoning_content"] == "Thinking about step 1."  # round-tripped


def test_usage_is_the_endpoints_and_the_context_budget_is_counted_by_it(hosted: HostedModel) -> None:
    """Each turn's max_tokens is what the endpoint's count leaves of max_model_len; a request continuing a
    conversation that has taken all of it is a 400 context_length_exceeded, and the rollout ends there."""
    model = hosted.plan("budget", Plan(script(5)))
    with proxy_over(hosted, model, max_tokens=100, max_model_len=16) as proxy:
        rollout = proxy.open_rollout("task")
        first = chat_post(rollout, request(0))
        assert first.status_code == 200, first.text
        assert first.json()["usage"] == {"prompt_tokens": 5, "completion_tokens": 10, "total_tokens": 15}
        second = chat_post(rollout, request(1))
        assert second.status_code == 200, second.text
        assert second.json()["usage"]["total_tokens"] >= 16
        third = chat_post(rollout, request(2))
        assert (third.status_code, third.json()["error"]["code"]) == (400, "context_length_exceeded")
        assert rollout.end_reason == "max_model_len"
        trajectory = rollout.finish()
    assert [body["max_tokens"] for body in hosted.requests_for(model)] == [16, 1]  # 16, then 16 - 15
    assert len(trajectory.turns) == 2 and trajectory.error is None


def test_max_turns_and_a_rewritten_history_are_as_in_token_mode(hosted: HostedModel) -> None:
    model = hosted.plan("turns", Plan(script(5)))
    with proxy_over(hosted, model) as proxy:
        rollout = proxy.open_rollout("task", max_turns=2)
        assert chat_post(rollout, request(0)).status_code == 200
        rewritten = request(1)
        rewritten["messages"][0]["content"] = "A compacted history."
        assert chat_post(rollout, rewritten).status_code == 200
        refused = chat_post(rollout, request(2))
        assert (refused.status_code, refused.json()["error"]["code"]) == (403, "max_turns")
        trajectory = rollout.finish()
    assert (trajectory.forks, len(trajectory.turns), trajectory.end_reason) == (1, 2, "max_turns")
    assert trajectory.messages[0]["content"] == "A compacted history."  # the last conversation


def test_a_failing_endpoint_is_a_502_and_its_context_limit_a_budget(hosted: HostedModel) -> None:
    failing = hosted.plan("failing", Failure(401, "invalid api key", "invalid_api_key"))
    overflowing = hosted.plan(
        "overflowing",
        Failure(400, "This model's maximum context length is 32 tokens.", "context_length_exceeded"),
    )
    with proxy_over(hosted, failing) as proxy:
        rollout = proxy.open_rollout("task")
        answer = chat_post(rollout, request(0))
        assert (answer.status_code, answer.json()["error"]["code"]) == (502, "generator_error")
        assert "invalid api key" in answer.json()["error"]["message"]
        trajectory = rollout.finish()
    assert (trajectory.end_reason, trajectory.turns) == ("generator_error", [])
    assert trajectory.error is not None and trajectory.error.startswith("generator: HTTP 401")
    with proxy_over(hosted, overflowing) as proxy:
        rollout = proxy.open_rollout("task")
        answer = chat_post(rollout, request(0))
        assert (answer.status_code, answer.json()["error"]["code"]) == (400, "context_length_exceeded")
        trajectory = rollout.finish()
    assert (trajectory.end_reason, trajectory.error) == ("max_model_len", None)  # the agent's limit


def test_counting_tokens_needs_a_tokenizer_and_says_so(hosted: HostedModel) -> None:
    with proxy_over(hosted, hosted.plan("count", Plan(script(1)))) as proxy:
        rollout = proxy.open_rollout("task")
        headers = {"x-api-key": rollout.secret}
        body = {"model": "any", "messages": [{"role": "user", "content": TASK}]}
        answer = requests.post(
            rollout.root_url + "/v1/messages/count_tokens", json=body, headers=headers, timeout=60
        )
        assert answer.status_code == 400
        assert "needs the model's tokenizer" in answer.json()["error"]["message"]
        assert not rollout.ended  # the rollout goes on
        rollout.finish()


def test_a_knob_that_would_do_nothing_is_refused(hosted: HostedModel) -> None:
    with pytest.raises(ConfigError, match="template_kwargs would do nothing"):
        proxy_over(hosted, "any", template_kwargs={"enable_thinking": False})


def test_an_old_chat_trajectory_file_still_says_it_has_no_token_ids() -> None:
    """Written before the field: a chat generator's turns (length 0, no ids) read as having none."""
    data = Trajectory(task_id="t", generator="openai-chat").to_dict()
    data.pop("has_token_ids")
    data["turns"] = [{"start": 0, "length": 0, "text": "hi", "finish_reason": "stop"}]
    assert Trajectory.from_dict(data).has_token_ids is False
    data.update(token_ids=[1, 2], loss_mask=[0, 1], logprobs=[None, -0.5])
    data["turns"] = [{"start": 1, "length": 1, "text": "hi", "finish_reason": "stop"}]
    assert Trajectory.from_dict(data).has_token_ids is True
