"""OpenAI chat completions through the proxy, with the real ``openai`` SDK as the harness (Pi, OpenCode and
mini-swe-agent speak it). The wider behaviour of the proxy over this dialect (forks, retries, budgets,
bounds) is tested in tests/rollout/test_proxy.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.rollout.proxy.harness import (
    BASH,
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
OPENING = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]


def client_for(rollout: Any) -> Any:
    return openai.OpenAI(
        base_url=rollout.base_url_for("chat_completions"), api_key=rollout.secret, max_retries=0
    )


def complete(client: Any, messages: list[Any], stream: bool) -> Any:
    if not stream:
        return client.chat.completions.create(model="any", messages=messages, tools=[BASH])
    options = {"include_usage": True}
    with client.chat.completions.stream(
        model="any", messages=messages, tools=[BASH], stream_options=options
    ) as events:
        for _ in events:
            pass
        return events.get_final_completion()


def play(client: Any, turns: int, stream: bool = False) -> list[Any]:
    messages: list[Any] = list(OPENING)
    completions = []
    for turn in range(turns):
        completion = complete(client, messages, stream)
        completions.append(completion)
        message = completion.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls or []:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": f"output {turn}"})
    return completions


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_tool_call_round_trip_is_token_exact(stream: bool) -> None:
    tokenizer = default_tokenizer()
    with serving(tokenizer, script(2)) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        completions = play(client_for(rollout), 3, stream)
        trajectory = rollout.finish()
    first = completions[0].choices[0]
    call = first.message.tool_calls[0]
    assert (first.finish_reason, call.function.name) == ("tool_calls", "bash")
    assert json.loads(call.function.arguments) == {"command": "ls # step 0"}
    assert completions[0].usage.completion_tokens == len(generator.sampled[0])
    assert completions[-1].choices[0].message.content == "Fixed it # step 2"
    assert_token_exact(trajectory, generator, 3)
    assert_opening(trajectory, tokenizer, OPENING)
    assert "output 0" in bridged_text(tokenizer, trajectory, 0)


def test_reasoning_is_apart_from_the_content_of_a_tool_call() -> None:
    """A Qwen3 turn that calls a tool: its think block is the message's reasoning_content (where vLLM puts
    it), not its content; sent back with it, the turn extends."""
    tokenizer = qwen3()
    with serving(tokenizer, script(2, THINK)) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        completions = play(client_for(rollout), 3)
        trajectory = rollout.finish()
    message = completions[0].choices[0].message
    assert (message.content, message.reasoning_content) == (None, REASONING)
    assert_token_exact(trajectory, generator, 3)


def test_a_request_it_cannot_represent_is_a_400_naming_the_field() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    parts = [{"type": "text", "text": TASK}, image]
    with serving(default_tokenizer(), script(1)) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        client = client_for(rollout)
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(model="any", messages=[{"role": "user", "content": parts}])
        assert "messages[0].content[1].type" in caught.value.message
        assert caught.value.body["param"] == "messages[0].content[1].type"
        assert generator.prompts == []
        text_parts = [
            {"type": "text", "text": "Fix "},
            {"type": "text", "text": "it."},
        ]  # text parts: one text
        client.chat.completions.create(model="any", messages=[{"role": "user", "content": text_parts}])
        assert "Fix it." in generator.tokenizer.decode(generator.prompts[0])
        rollout.finish()


def test_each_dialect_has_its_base_url_and_a_wrong_name_is_one_clear_error() -> None:
    from gym_swe.errors import ConfigError

    with serving(default_tokenizer(), script(1)) as (proxy, _):
        rollout = proxy.open_rollout("task")
        urls = {name: rollout.base_url_for(name) for name in ("chat_completions", "responses")}
        assert urls == {"chat_completions": rollout.base_url, "responses": rollout.base_url}
        assert (
            rollout.base_url_for("anthropic_messages") == rollout.root_url == rollout.base_url[: -len("/v1")]
        )
        with pytest.raises(ConfigError, match="Did you mean 'responses'"):
            rollout.base_url_for("response")
        rollout.finish()
