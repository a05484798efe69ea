"""Google generateContent through the proxy, with the real ``google-genai`` SDK as the harness (as Gemini CLI
speaks it: the contents re-sent each turn, the model's content as it came, ``functionResponse`` parts)."""

from __future__ import annotations

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

pytest.importorskip("google.genai")
from google import genai
from google.genai import errors, types

requests = pytest.importorskip("requests")


def client_for(rollout: Any, key: str | None = None) -> Any:
    options = types.HttpOptions(base_url=rollout.base_url_for("google_generate"))
    return genai.Client(api_key=key or rollout.secret, http_options=options)


def config(**extra: Any) -> Any:
    tool = types.Tool(
        function_declarations=[
            types.FunctionDeclaration(
                name="bash", description="Run a bash command", parameters_json_schema=PARAMETERS
            )
        ]
    )
    manual = types.AutomaticFunctionCallingConfig(disable=True)  # the harness runs the calls, not the SDK
    return types.GenerateContentConfig(
        system_instruction=SYSTEM, tools=[tool], automatic_function_calling=manual, **extra
    )


def generate(client: Any, contents: list[Any], stream: bool) -> tuple[Any, list[Any]]:
    """The model's content (what a harness keeps) and the responses it came in."""
    if not stream:
        response = client.models.generate_content(model="any", contents=contents, config=config())
        return response.candidates[0].content, [response]
    chunks = list(client.models.generate_content_stream(model="any", contents=contents, config=config()))
    parts = [part for chunk in chunks for part in chunk.candidates[0].content.parts]
    return types.Content(role="model", parts=parts), chunks


def play(client: Any, turns: int, stream: bool = False, ids: bool = True, thoughts: bool = True) -> list[Any]:
    """``turns`` requests, each the last one's contents, the model's content (without call ids when not
    ``ids``, without thought parts when not ``thoughts``) and a content of function responses."""
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=TASK)])]
    replies = []
    for turn in range(turns):
        content, responses = generate(client, contents, stream)
        replies.append(responses)
        parts = [part for part in content.parts if thoughts or not part.thought]
        if not ids:
            for part in parts:
                if part.function_call:
                    part.function_call.id = None
        contents.append(types.Content(role="model", parts=parts))
        results = [
            types.FunctionResponse(
                id=part.function_call.id, name=part.function_call.name, response={"output": f"output {turn}"}
            )
            for part in parts
            if part.function_call
        ]
        if results:
            contents.append(
                types.Content(role="user", parts=[types.Part(function_response=r) for r in results])
            )
    return replies


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_tool_call_round_trip_is_token_exact(stream: bool) -> None:
    tokenizer = default_tokenizer()
    with serving(tokenizer, script(2)) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        replies = play(client_for(rollout), 3, stream)
        trajectory = rollout.finish()
    first = replies[0][-1]
    assert first.candidates[0].finish_reason == types.FinishReason.STOP and first.model_version == "scripted"
    call = first.function_calls[0]
    assert (call.name, call.args, call.id) == ("bash", {"command": "ls # step 0"}, "call00000")
    usage = first.usage_metadata
    assert (usage.prompt_token_count, usage.candidates_token_count) == (
        len(generator.prompts[0]),
        len(generator.sampled[0]),
    )
    assert "".join(chunk.text or "" for chunk in replies[-1]) == "Fixed it # step 2"
    assert_token_exact(trajectory, generator, 3)
    assert_opening(
        trajectory, tokenizer, [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    )
    assert "output 0" in bridged_text(tokenizer, trajectory, 0)
    assert "{" not in bridged_text(tokenizer, trajectory, 0)  # {"output": text} is rendered as its text


def test_calls_sent_back_without_ids_are_found_again() -> None:
    """Gemini's calls may come back without ids: a call gets the id of its position, a response the id of
    the call of its name: the same ids, so the turn still extends."""
    with serving(default_tokenizer(), script(2)) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        play(client_for(rollout), 3, ids=False)
        trajectory = rollout.finish()
    assert_token_exact(trajectory, generator, 3)
    calls = [m["tool_calls"][0]["id"] for m in trajectory.messages if m.get("tool_calls")]
    results = [m["tool_call_id"] for m in trajectory.messages if m["role"] == "tool"]
    assert calls == results == ["call00000", "call00100"]


def test_streamed_chunks_are_the_apis() -> None:
    """Over the wire as Gemini CLI's JavaScript SDK sends it (camel-cased fields): a part a chunk, the last
    with the finish reason and the usage."""
    tokenizer = qwen3()
    declaration = {"name": "bash", "description": "Run a bash command", "parametersJsonSchema": PARAMETERS}
    body = {
        "contents": [{"role": "user", "parts": [{"text": TASK}]}],
        "tools": [{"functionDeclarations": [declaration]}],
    }
    with serving(tokenizer, script(1, THINK)) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        response = requests.post(
            rollout.base_url_for("google_generate") + "/v1beta/models/any:streamGenerateContent?alt=sse",
            json=body,
            headers={"x-goog-api-key": rollout.secret},
            timeout=60,
        )
        trajectory = rollout.finish()
    assert response.headers["Content-Type"].startswith("text/event-stream")
    lines = [line[len("data: ") :] for line in response.text.splitlines() if line.startswith("data: ")]
    chunks = [types.GenerateContentResponse.model_validate_json(line) for line in lines]
    assert [len(chunk.candidates[0].content.parts) for chunk in chunks] == [1, 1]  # the thought, the call
    thought, call = (chunk.candidates[0].content.parts[0] for chunk in chunks)
    assert (thought.thought, thought.text) == (True, REASONING)
    assert (call.function_call.name, call.function_call.args) == ("bash", {"command": "ls # step 0"})
    assert [chunk.candidates[0].finish_reason for chunk in chunks] == [None, types.FinishReason.STOP]
    assert chunks[0].usage_metadata is None
    assert chunks[-1].usage_metadata.candidates_token_count == len(generator.sampled[0])
    assert trajectory.tools == [BASH]


@pytest.mark.parametrize("thoughts", [True, False], ids=["thoughts sent back", "thoughts dropped"])
def test_thoughts_round_trip(thoughts: bool) -> None:
    tokenizer = qwen3()
    with serving(tokenizer, script(2, THINK)) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        replies = play(client_for(rollout), 3, thoughts=thoughts)
        trajectory = rollout.finish()
    parts = replies[0][0].candidates[0].content.parts
    assert (parts[0].thought, parts[0].text, parts[1].function_call.name) == (True, REASONING, "bash")
    assert_token_exact(trajectory, generator, 3)
    kept = [m.get("reasoning_content") for m in trajectory.messages if m["role"] == "assistant"]
    assert kept[:2] == ([REASONING, REASONING] if thoughts else [None, None])


def test_the_secret_as_header_or_query_and_token_counts() -> None:
    tokenizer = default_tokenizer()
    with serving(tokenizer, script(1)) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        wrong = client_for(rollout, key="wrong")  # held: a Client closes its connections when collected
        with pytest.raises(errors.ClientError) as caught:
            wrong.models.generate_content(model="any", contents=TASK)
        assert caught.value.code == 401 and "x-goog-api-key" in caught.value.message
        by_query = requests.post(
            rollout.base_url_for("google_generate")
            + f"/v1beta/models/any:generateContent?key={rollout.secret}",
            json={"contents": [{"parts": [{"text": TASK}]}]},
            timeout=60,
        )
        assert by_query.status_code == 200 and by_query.json()["candidates"][0]["content"]["role"] == "model"
        client = client_for(rollout)
        counted = client.models.count_tokens(model="any", contents=TASK)
        rendered = ChatFormat(tokenizer, None).prompt_ids([{"role": "user", "content": TASK}])
        assert counted.total_tokens == len(rendered)
        assert len(rollout.finish().turns) == 1 and len(generator.prompts) == 1


def test_a_request_it_cannot_represent_is_a_400_naming_the_field() -> None:
    image = types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG"))
    text = types.Part(text=TASK)
    cases = {
        "contents[0].parts[1].inlineData": ([types.Content(role="user", parts=[text, image])], None),
        "tools[0].googleSearch": (
            TASK,
            types.GenerateContentConfig(tools=[types.Tool(google_search=types.GoogleSearch())]),
        ),
        "generationConfig.candidateCount": (TASK, types.GenerateContentConfig(candidate_count=2)),
    }
    with serving(default_tokenizer(), script(1)) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        client = client_for(rollout)
        for field, (contents, extra) in cases.items():
            with pytest.raises(errors.ClientError) as caught:
                client.models.generate_content(model="any", contents=contents, config=extra)
            assert caught.value.code == 400 and field in caught.value.message, (field, caught.value)
            assert caught.value.status == "INVALID_ARGUMENT"
        assert generator.prompts == []
        assert (
            client.models.generate_content(model="any", contents=TASK).text == generator.turns[0]
        )  # no tools


def test_a_reply_cut_at_max_tokens_finishes_for_max_tokens() -> None:
    with serving(default_tokenizer(), ["word " * 400], return_stop=False) as (proxy, generator):
        rollout = proxy.open_rollout("task")
        client = client_for(rollout)
        response = client.models.generate_content(model="any", contents=TASK)
        rollout.finish()
    assert response.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert response.usage_metadata.candidates_token_count == len(generator.sampled[0])


def test_a_gemini_schema_is_read_as_json_schema() -> None:
    """``parameters`` in Gemini's own schema (upper-case types, sent by the Python SDK in the proto's
    spelling): the template gets the same JSON schema as from ``parametersJsonSchema``, the request intact."""
    command = types.Schema(type=types.Type.STRING)
    schema = types.Schema(type=types.Type.OBJECT, properties={"command": command}, required=["command"])
    declaration = types.FunctionDeclaration(name="bash", description="Run a bash command", parameters=schema)
    settings = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[declaration])])
    with serving(default_tokenizer(), script(1)) as (proxy, _):
        rollout = proxy.open_rollout("task")
        client = client_for(rollout)
        response = client.models.generate_content(model="any", contents=TASK, config=settings)
        trajectory = rollout.finish()
    assert trajectory.tools == [BASH]
    assert response.function_calls[0].args == {"command": "ls # step 0"}
