"""A scripted policy behind a real OpenAI-compatible chat endpoint on loopback, for the stacks' tests: a stack
(its client, its harness, its interception server) runs unchanged against it, and the policy's moves are
known, so the rewards it must earn are known too.

The policy: on a task it is told to fix, its first reply writes the task's known fix into the workspace and
its next one submits; on any other task it runs ``true`` for ``idle_turns`` replies, then submits. Replies
are text with ``<tool_call>`` blocks, as a Hermes-format model writes them.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from gym_swe.tasks.functions import load_function_tasks
from tests.integrations.scripted_tool_calls import ChatEndpoint, text_of

SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'
IDLE = '<tool_call>{"name": "bash", "arguments": {"command": "true"}}</tool_call>'


def fix_turn(task_id: str) -> str:
    code = load_function_tasks("bundled").get(task_id).fixed_code
    encoded = base64.b64encode(code.encode()).decode()
    call = {"name": "bash", "arguments": {"command": f"echo {encoded} | base64 -d > /workspace/solution.py"}}
    return "I will fix it.\n<tool_call>" + json.dumps(call) + "</tool_call>"


class ScriptedChatServer(ChatEndpoint):
    """``fixes``: the CodeDebug task ids the policy fixes; other tasks it submits unfixed, after
    ``idle_turns`` turns that change nothing. The task of a conversation is told by its function's name in the
    first user message. ``requests`` counts the chat completions answered."""

    def __init__(self, fixes: Sequence[str], idle_turns: int = 0) -> None:
        tasks = load_function_tasks("bundled")
        self.fixes = {tasks.get(task_id).entry_point: fix_turn(task_id) for task_id in fixes}
        self.idle_turns = idle_turns
        super().__init__()

    def reply(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        users = [m for m in messages if m.get("role") == "user"]
        opening = text_of(users[0].get("content")) if users else ""
        fix = next((turn for name, turn in self.fixes.items() if f"`{name}`" in opening), None)
        replied = sum(1 for m in messages if m.get("role") == "assistant")
        if fix is not None:
            text = fix if replied == 0 else SUBMIT
        else:
            text = IDLE if replied < self.idle_turns else SUBMIT
        return {"role": "assistant", "content": text}

    def stream_events(self, completion: dict[str, Any]) -> list[dict[str, Any]]:
        """The text, then the finish reason with the usage (these stacks' clients read it there)."""
        choice = completion["choices"][0]
        head = {key: completion[key] for key in ("id", "created", "model")}
        chunks = [
            {"index": 0, "delta": {"role": "assistant", "content": choice["message"]["content"]},
             "finish_reason": None},
            {"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]},
        ]  # fmt: skip
        events = [{**head, "object": "chat.completion.chunk", "choices": [chunk]} for chunk in chunks]
        events[-1]["usage"] = completion["usage"]
        return events
