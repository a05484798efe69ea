"""Property-based: whatever text or tool-call message a model sends, ``step()`` returns an observation and the
episode goes on (or ends by the rules), on both envs and both backends. Lone surrogates, NUL bytes, huge and
deeply nested values, wrong types, unknown tools: each is a tool error the model can read, never an exception
and never a sandbox blamed for the policy's mistake."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.redteam.scripted import bash, make_env

ENVS = [("CodeDebug-v0", "GymSwe/0"), ("SWEGym-v0", "gymswe__inikit-1")]
# Quick commands only: random text runs as bash, and must not keep the test waiting.
TOOL_OPTIONS = {"bash": {"timeout": 2, "max_timeout": 2}}
EVERY_CHARACTER = st.characters(codec=None, blacklist_categories=())  # surrogates and NUL included
TEXT = st.text(EVERY_CHARACTER, max_size=300)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=4),
    max_leaves=12,
)
NAMES = st.sampled_from(["bash", "str_replace_editor", "submit", "python", ""]) | TEXT
EDITOR_ARGUMENTS = st.fixed_dictionaries(
    {"command": st.sampled_from(["view", "create", "str_replace", "insert", "undo_edit", "delete"]) | TEXT},
    optional={
        "path": st.sampled_from(["/workspace/solution.py", "/testbed/README.md", "relative", "/"]) | TEXT,
        "file_text": TEXT,
        "old_str": TEXT,
        "new_str": TEXT,
        "insert_line": JSONISH,
        "view_range": JSONISH,
    },
)
ARGUMENTS = (
    st.dictionaries(TEXT, JSONISH, max_size=4) | EDITOR_ARGUMENTS | st.fixed_dictionaries({"command": TEXT})
)


@st.composite
def tool_call_messages(draw: st.DrawFn) -> dict[str, Any]:
    calls = []
    for _ in range(draw(st.integers(0, 3))):
        arguments = draw(ARGUMENTS)
        encoded = draw(st.booleans())
        calls.append(
            {
                "id": draw(TEXT | st.none()),
                "type": "function",
                "function": {
                    "name": draw(NAMES),
                    "arguments": json.dumps(arguments) if encoded else arguments,
                },
            }
        )
    return {"role": "assistant", "content": draw(TEXT | st.none()), "tool_calls": calls}


def text_actions() -> st.SearchStrategy[str]:
    wrapped = st.builds(
        lambda name, args: "<tool_call>" + json.dumps({"name": name, "arguments": args}) + "</tool_call>",
        NAMES,
        ARGUMENTS,
    )
    raw = st.builds(lambda name, body: f'<tool_call>{{"name": "{name}", {body}</tool_call>', NAMES, TEXT)
    return TEXT | wrapped | raw | st.builds(lambda a, b: a + b, wrapped, TEXT)


@pytest.fixture(scope="module", params=[(env_id, task, backend) for env_id, task in ENVS for backend in ("local", "docker")],
                ids=lambda p: f"{p[0]}-{p[2]}")  # fmt: skip
def env(request):  # type: ignore[no-untyped-def]
    env_id, task_id, backend = request.param
    environment = make_env(
        env_id,
        backend,
        tool_options=TOOL_OPTIONS,
        max_turns=1000,
        max_episode_steps=-1,
        max_context_chars=10**8,
    )
    environment.unwrapped._fuzz_task = task_id
    environment.reset(options={"task_id": task_id})
    yield environment
    environment.close()


def step_anything(env, action: Any) -> None:  # type: ignore[no-untyped-def]
    if env.unwrapped.done:
        env.reset(options={"task_id": env.unwrapped._fuzz_task})
    observation, reward, terminated, truncated, info = env.step(action)
    assert isinstance(observation, str) and isinstance(reward, float)
    observation.encode("utf-8")  # what the model reads is valid text
    json.dumps(info["messages"], ensure_ascii=False).encode("utf-8")  # and the chat can be saved
    assert info.get("end_reason") != "sandbox_error", info.get("error")
    if terminated or truncated:
        assert "grade" in info and "error" not in info, info.get("error")
        return
    observation, *_ = env.step(bash("echo alive"))
    assert observation == "alive"


FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FUZZ
@given(action=text_actions())
def test_any_text_action(env, action: str) -> None:  # type: ignore[no-untyped-def]
    step_anything(env, action)


@FUZZ
@given(action=tool_call_messages())
def test_any_tool_call_message(env, action: dict[str, Any]) -> None:  # type: ignore[no-untyped-def]
    step_anything(env, action)


@pytest.mark.parametrize(
    "action",
    [
        '<tool_call>{"name": "str_replace_editor", "arguments": {"command": "create", '
        '"path": "WORKDIR/x.py", "file_text": "\\ud800"}}</tool_call>',
        '<tool_call>{"name": "bash", "arguments": {"command": "echo a\\u0000b"}}</tool_call>',
        '<tool_call>{"name": "str_replace_editor", "arguments": {"command": "view", "path": "WORKDIR/a\\u0000"}}'
        "</tool_call>",
        "<tool_call>"
        + json.dumps({"name": "bash", "arguments": {"command": "echo " + "x" * 5_000_000}})
        + "</tool_call>",
    ],
    ids=["lone surrogate", "NUL in a command", "NUL in a path", "5 MB action"],
)
def test_the_reported_crashes_are_tool_errors(env, action: str) -> None:  # type: ignore[no-untyped-def]
    if env.unwrapped.done:
        env.reset(options={"task_id": env.unwrapped._fuzz_task})
    action = action.replace("WORKDIR", env.unwrapped.sandbox.workdir)
    observation, _, terminated, truncated, info = env.step(action)
    assert not (terminated or truncated), info.get("error")
    assert "sandbox stopped working" not in observation
    lowered = observation.lower()
    assert any(word in lowered for word in ("surrogate", "nul byte", "refused", "characters, more than")), (
        observation
    )
    assert env.step(bash("echo alive"))[0] == "alive"


@pytest.mark.parametrize(
    "action",
    [
        '<tool_call>{"name": "ab\\udd4acd", "arguments": {"command": "ls"}}</tool_call>',
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "abcdefghi", "type": "function", "function": {"name": "b\udd4a", "arguments": "{}"}}]},
        {"role": "assistant", "content": "thinking \udd4a", "tool_calls": []},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "ab\udd4a", "type": "function",
                         "function": {"name": "bash", "arguments": '{"command": "echo \\udd4a"}'}}]},
    ],
    ids=["in a tool name", "in a message's tool name", "in a message's content", "in a call id and argument"],
)  # fmt: skip
def test_a_lone_surrogate_anywhere_leaves_valid_text(env, action: Any) -> None:  # type: ignore[no-untyped-def]
    """Found by the fuzzer in CI: an unknown tool's name was echoed with its lone surrogate, and the chat
    could no longer be saved or rendered for the rest of the episode."""
    step_anything(env, action)
