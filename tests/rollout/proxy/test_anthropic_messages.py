"""Anthropic Messages through the proxy, with the real ``anthropic`` SDK as the harness (as Claude Code speaks
it: the conversation re-sent each turn, the assistant's content blocks as they came, tool results as
``tool_result`` blocks)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gym_swe.rollout.chat import ChatFormat
from tests.rollout.proxy.harness import (
    BASH,
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

anthropic = pytest.importorskip("anthropic")

TOOLS = [{"name": "bash", "description": "Run a bash command", "input_schema": PARAMETERS}]


def client_for(rollout: Any, **auth: str) -> Any:
    auth = auth or {"api_key": rollout.secret}
    return anthropic.Anthropic(base_url=rollout.base_url_for("anthropic_messages"), max_retries=0, **auth)


def reply(client: Any, messages: list[Any], stream: bool) -> Any:
    request = {"model": "any", "max_tokens": 1024, "system": SYSTEM, "messages": messages, "tools": TOOLS}
    if not stream:
        return client.messages.create(**request)
    with client.messages.stream(**request) as events:
        for _ in events:
            pass
        return events.get_final_message()


def play(client: Any, turns: int, stream: bool = False, keep_thinking: bool = True) -> list[Any]:
    """``turns`` requests, each the last one's messages, the assistant's blocks (without thinking blocks
    when not ``keep_thinking``) and a user message of tool results, one per call."""
    messages: list[Any] = [{"role": "user", "content": TASK}]
    replies = []
    for turn in range(turns):
        message = reply(client, messages, stream)
        replies.append(message)
        blocks = [
            b.model_dump(exclude_none=True) for b in message.content if keep_thinking or b.type != "thinking"
        ]
        messages.append({"role": "assistant", "content": blocks})
        results = [
            {"type": "tool_result", "tool_use_id": block.id, "content": f"output {turn}"}
            for block in message.content
            if block.type == "tool_use"
        ]
        if results:
            messages.append({"role": "user", "content": results})
    return replies


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_tool_call_round_trip_is_token_exact(stream: bool) -> None:
    tokenizer = default_tokenizer()
    with serving(tokenizer, script(2)) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        replies = play(client_for(rollout), 3, stream)
        trajectory = rollout.finish()
    first = replies[0]
    assert (first.stop_reason, first.model, [block.type for block in first.content]) == (
        "tool_use",
        "scripted",
        ["tool_use"],
    )
    assert (first.content[0].name, first.content[0].input) == ("bash", {"command": "ls # step 0"})
    assert (first.usage.input_tokens, first.usage.output_tokens) == (
        len(generator.prompts[0]),
        len(generator.sampled[0]),
    )
    last = replies[-1]
    assert (last.stop_reason, last.content[0].text) == ("end_turn", "Fixed it # step 2")
    assert_token_exact(trajectory, generator, 3)
    assert_opening(
        trajectory, tokenizer, [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    )
    assert "output 0" in bridged_text(tokenizer, trajectory, 0)


def test_streamed_events_are_the_apis_in_order() -> None:
    tokenizer = qwen3()
    with serving(tokenizer, script(1, THINK)) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        client = client_for(rollout)
        request = {
            "model": "any",
            "max_tokens": 1024,
            "messages": [{"role": "user", "content": TASK}],
            "tools": TOOLS,
        }
        events = list(client.messages.create(**request, stream=True))
        assert len(rollout.finish().turns) == 1
    assert [event.type for event in events] == [
        "message_start",
        *[
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
        ],  # thinking
        *["content_block_start", "content_block_delta", "content_block_stop"],  # tool_use
        "message_delta",
        "message_stop",
    ]
    assert [events[i].delta.type for i in (2, 3, 6)] == [
        "thinking_delta",
        "signature_delta",
        "input_json_delta",
    ]
    assert events[2].delta.thinking == REASONING
    assert json.loads(events[6].delta.partial_json) == {"command": "ls # step 0"}
    assert events[0].message.usage.input_tokens == len(generator.prompts[0])
    assert (events[-2].delta.stop_reason, events[-2].usage.output_tokens) == (
        "tool_use",
        len(generator.sampled[0]),
    )


@pytest.mark.parametrize("keep_thinking", [True, False], ids=["thinking sent back", "thinking dropped"])
def test_thinking_round_trips(keep_thinking: bool) -> None:
    tokenizer = qwen3()
    with serving(tokenizer, script(2, THINK)) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        replies = play(client_for(rollout), 3, keep_thinking=keep_thinking)
        trajectory = rollout.finish()
    thinking = replies[0].content[0]
    assert (thinking.type, thinking.thinking) == ("thinking", REASONING) and thinking.signature
    assert [block.type for block in replies[0].content] == ["thinking", "tool_use"]
    assert_token_exact(trajectory, generator, 3)
    kept = [m.get("reasoning_content") for m in trajectory.messages if m["role"] == "assistant"]
    assert kept[:2] == ([REASONING, REASONING] if keep_thinking else [None, None])


def test_claude_codes_request_shape_a_system_turn_deferred_tools_and_thinking_display() -> None:
    """As Claude Code sends it: a system message among the messages (its environment notes) rendered where it
    stands; a tool with ``defer_loading`` kept out of the model's context, as the API keeps it; a context
    edit that clears old thinking accepted; thinking asked for with ``"display": "omitted"`` answered
    without its text."""
    tokenizer = qwen3()
    note = "# Environment\nPrimary working directory: /workspace"
    deferred = {**TOOLS[0], "name": "Placeholder", "defer_loading": True}
    messages = [
        {"role": "user", "content": TASK},
        {"role": "system", "content": [{"type": "text", "text": note}]},
    ]
    with serving(tokenizer, script(1, THINK)) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        message = client_for(rollout).messages.create(
            model="any",
            max_tokens=1024,
            system=SYSTEM,
            messages=messages,  # type: ignore[arg-type]
            tools=[*TOOLS, deferred],  # type: ignore[list-item]
            extra_body={
                "thinking": {"type": "adaptive", "display": "omitted"},
                "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
            },
        )
        trajectory = rollout.finish()
    expected = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
        {"role": "system", "content": note},
    ]
    assert generator.prompts[0] == ChatFormat(tokenizer, [BASH]).prompt_ids(expected)
    assert trajectory.tools == [BASH]
    assert [(block.type, getattr(block, "thinking", None)) for block in message.content] == [
        ("thinking", ""),
        ("tool_use", None),
    ]


def test_the_secret_as_api_key_or_bearer_token_and_token_counts() -> None:
    tokenizer = default_tokenizer()
    with serving(tokenizer, script(1)) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        bearer = client_for(rollout, auth_token=rollout.secret)  # ANTHROPIC_AUTH_TOKEN
        assert bearer.messages.create(
            model="any", max_tokens=64, messages=[{"role": "user", "content": TASK}]
        )
        with pytest.raises(anthropic.AuthenticationError) as caught:
            client_for(rollout, api_key="wrong").messages.create(model="any", max_tokens=64, messages=[])
        assert "x-api-key" in caught.value.message
        messages = [{"role": "user", "content": TASK}]
        counted = client_for(rollout).messages.count_tokens(
            model="any", system=SYSTEM, messages=messages, tools=TOOLS
        )
        rendered = ChatFormat(tokenizer, [BASH]).prompt_ids(
            [{"role": "system", "content": SYSTEM}, *messages]
        )
        assert counted.input_tokens == len(rendered)
        assert rollout.finish().turns and len(generator.prompts) == 1  # counting generated nothing


def test_a_request_it_cannot_represent_is_a_400_naming_the_field() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    cases = {
        "messages[0].content[1].type": {
            "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}, image]}]
        },
        "tools[0].type": {
            "messages": [{"role": "user", "content": TASK}],
            "tools": [{"type": "web_search_20250305", "name": "web_search"}],
        },
        "messages[1].content[0].type": {
            "messages": [
                {"role": "user", "content": TASK},
                {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "abc"}]},
            ]
        },
        "context_management.edits[0].type": {
            "messages": [{"role": "user", "content": TASK}],
            "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
        },
        "messages[2].content[0].content[0].type": {
            "messages": [
                {"role": "user", "content": TASK},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [image]}],
                },
            ]
        },
    }
    with serving(default_tokenizer(), script(1)) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        client = client_for(rollout)
        for field, request in cases.items():
            with pytest.raises(anthropic.BadRequestError) as caught:
                known = {key: value for key, value in request.items() if key in ("messages", "tools")}
                extra = {key: value for key, value in request.items() if key not in known}
                client.messages.create(model="any", max_tokens=64, **known, extra_body=extra)
            assert caught.value.status_code == 400 and field in caught.value.message, (field, caught.value)
            assert caught.value.body["error"]["type"] == "invalid_request_error"
        assert generator.prompts == []
        assert client.messages.create(
            model="any", max_tokens=64, messages=[{"role": "user", "content": TASK}]
        )


def test_a_reply_cut_at_max_tokens_stops_for_max_tokens() -> None:
    with serving(default_tokenizer(), ["word " * 400], return_stop=False) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        message = client_for(rollout).messages.create(
            model="any", max_tokens=64, messages=[{"role": "user", "content": TASK}]
        )
        rollout.finish()
    assert (message.stop_reason, message.usage.output_tokens) == ("max_tokens", len(generator.sampled[0]))
