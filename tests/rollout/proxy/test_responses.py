"""The OpenAI Responses API through the proxy, with the real ``openai`` SDK as the harness (as Codex speaks it:
the whole conversation as input items each turn, the output items sent back as they came)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.rollout.proxy.harness import (
    PARAMETERS,
    REASONING,
    SYSTEM,
    TASK,
    THINK,
    assert_opening,
    assert_token_exact,
    bridged_text,
    default_tokenizer,
    qwen3,
    script,
    serving,
)

openai = pytest.importorskip("openai")

TOOLS = [{"type": "function", "name": "bash", "description": "Run a bash command", "parameters": PARAMETERS}]


def client_for(rollout: Any) -> Any:
    return openai.OpenAI(base_url=rollout.base_url_for("responses"), api_key=rollout.secret, max_retries=0)


def respond(client: Any, items: list[Any], stream: bool) -> Any:
    if not stream:
        return client.responses.create(model="any", instructions=SYSTEM, input=items, tools=TOOLS)
    with client.responses.stream(model="any", instructions=SYSTEM, input=items, tools=TOOLS) as events:
        for _ in events:
            pass
        return events.get_final_response()


def play(client: Any, turns: int, stream: bool = False, echo: str = "whole") -> tuple[list[Any], list[Any]]:
    """``turns`` requests, each the last one's input, its output items (``echo``: "whole"; "encrypted only":
    reasoning items without their readable content; "dropped": no reasoning items) and a result per call."""
    items: list[Any] = [{"role": "user", "content": TASK}]
    responses = []
    for turn in range(turns):
        response = respond(client, items, stream)
        responses.append(response)
        for item in response.output:
            sent = item.model_dump(exclude_none=True)
            if item.type == "reasoning" and echo != "whole":
                if echo == "dropped":
                    continue
                sent.pop("content")
            items.append(sent)
            if item.type == "function_call":
                items.append(
                    {"type": "function_call_output", "call_id": item.call_id, "output": f"output {turn}"}
                )
    return responses, items


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_tool_call_round_trip_is_token_exact(stream: bool) -> None:
    tokenizer = default_tokenizer()
    with serving(tokenizer, script(2)) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        responses, _ = play(client_for(rollout), 3, stream)
        trajectory = rollout.finish()
    first = responses[0]
    assert (first.status, first.model, [item.type for item in first.output]) == (
        "completed",
        "scripted",
        ["function_call"],
    )
    call = first.output[0]
    assert (call.name, json.loads(call.arguments), call.status) == (
        "bash",
        {"command": "ls # step 0"},
        "completed",
    )
    assert first.usage.output_tokens == len(generator.sampled[0])
    assert first.usage.input_tokens == len(generator.prompts[0])
    assert responses[-1].output_text == "Fixed it # step 2"
    assert_token_exact(trajectory, generator, 3)
    assert_opening(
        trajectory, tokenizer, [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    )
    assert "output 0" in bridged_text(tokenizer, trajectory, 0)


def test_streamed_events_are_the_apis_in_order() -> None:
    with serving(default_tokenizer(), script(1)) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        client = client_for(rollout)
        items: list[Any] = [{"role": "user", "content": TASK}]
        streams = []
        for _ in range(2):
            events = list(client.responses.create(model="any", input=items, tools=TOOLS, stream=True))
            streams.append(events)
            final = events[-1].response
            items += [item.model_dump(exclude_none=True) for item in final.output]
            items += [
                {"type": "function_call_output", "call_id": item.call_id, "output": "ok"}
                for item in final.output
                if item.type == "function_call"
            ]
        assert len(rollout.finish().turns) == 2
    lifecycle = ["response.created", "response.in_progress"]
    assert [event.type for event in streams[0]] == [
        *lifecycle,
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [event.type for event in streams[1]] == [
        *lifecycle,
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    for events in streams:
        assert [event.sequence_number for event in events] == list(range(len(events)))
        assert events[0].response.status == "in_progress" and events[0].response.output == []
        assert events[0].response.id == events[-1].response.id
    delta = streams[0][3]
    assert json.loads(delta.delta) == {"command": "ls # step 0"}
    assert streams[1][4].delta == generator.turns[1]


@pytest.mark.parametrize("echo", ["whole", "encrypted only", "dropped"])
def test_reasoning_round_trips(echo: str) -> None:
    """A Qwen3 turn's think block is a reasoning item (readable, and as encrypted_content for a harness that
    keeps only that); sent back either way, or dropped as some harnesses do, the turn still extends."""
    tokenizer = qwen3()
    with serving(tokenizer, script(2, THINK)) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        responses, _ = play(client_for(rollout), 3, echo=echo)
        trajectory = rollout.finish()
    reasoning = responses[0].output[0]
    assert (reasoning.type, [part.text for part in reasoning.content]) == ("reasoning", [REASONING])
    assert [item.type for item in responses[0].output] == ["reasoning", "function_call"]
    assert_token_exact(trajectory, generator, 3)
    kept = [m.get("reasoning_content") for m in trajectory.messages if m["role"] == "assistant"]
    assert kept[:2] == ([None, None] if echo == "dropped" else [REASONING, REASONING])


def test_a_request_it_cannot_represent_is_a_400_naming_the_field() -> None:
    image = {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}
    cases = {
        "input[0].content[1].type": {
            "input": [{"role": "user", "content": [{"type": "input_text", "text": "x"}, image]}]
        },
        "previous_response_id": {"input": TASK, "previous_response_id": "resp_1"},
        "tools[1].type": {"input": TASK, "tools": [*TOOLS, {"type": "web_search"}]},
        "input[1].type": {
            "input": [{"role": "user", "content": TASK}, {"type": "item_reference", "id": "msg_1"}]
        },
        "input[0].encrypted_content": {
            "input": [{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "c2VjcmV0"}]
        },
    }
    with serving(default_tokenizer(), script(1)) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        client = client_for(rollout)
        for field, request in cases.items():
            with pytest.raises(openai.BadRequestError) as caught:
                client.responses.create(model="any", **request)
            assert caught.value.status_code == 400 and field in caught.value.message, (field, caught.value)
            assert caught.value.body["param"] == field
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(
                base_url=rollout.base_url_for("responses"), api_key="wrong", max_retries=0
            ).responses.create(model="any", input=TASK)
        assert generator.prompts == []  # none reached the generator
        assert client.responses.create(model="any", input=TASK, tools=TOOLS).status == "completed"


def test_a_reply_cut_at_max_tokens_is_incomplete() -> None:
    tokenizer = default_tokenizer()
    with serving(tokenizer, ["word " * 400], return_stop=False) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        response = client_for(rollout).responses.create(model="any", input=TASK)
        assert rollout.finish().turns[0].finish_reason == "length"
    assert (response.status, response.incomplete_details.reason) == ("incomplete", "max_output_tokens")
    assert response.usage.output_tokens == len(generator.sampled[0]) == 256
