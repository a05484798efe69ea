"""OpenEnv's own clients against a served gym_swe env, unchanged: run in the serve environment (where OpenEnv
is installed) by tests/serve/test_clients.py, which reads what it prints (one JSON object).

    python openenv_clients.py URL TASK_ID FIX_ACTION
"""

from __future__ import annotations

import asyncio
import json
import sys

from openenv.core import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient

from gym_swe.serve.openenv_client import SweAction, SweEnvClient

URL, TASK, FIX = sys.argv[1], sys.argv[2], sys.argv[3]
LS = '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>'
SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'


def generic() -> dict:
    """OpenEnv's untyped client, sync: dictionaries in, dictionaries out."""
    with GenericEnvClient(base_url=URL).sync() as env:
        opened = env.reset(task_id=TASK)
        looked = env.step({"text": LS})
        env.step({"text": FIX})
        ended = env.step({"text": SUBMIT})
        return {
            "opening_roles": [m["role"] for m in opened.observation["messages"]],
            "ls": looked.observation["text"],
            "grade_before_end": looked.observation["grade"],
            "reward": ended.reward,
            "done": ended.done,
            "resolved": ended.observation["grade"]["resolved"],
            "state": env.state(),
        }


async def typed() -> dict:
    """gym_swe's EnvClient subclass, async, with typed actions and observations."""
    async with SweEnvClient(base_url=URL) as env:
        opened = await env.reset(task_id=TASK)
        looked = await env.step(SweAction(text=LS))
        ended = await env.step(SweAction(truncate="budget"))
        state = await env.state()
        return {
            "observation_type": type(opened.observation).__name__,
            "tools": [tool["function"]["name"] for tool in opened.observation.tools],
            "ls": looked.observation.text,
            "end_reason": ended.observation.end_reason,
            "truncated": ended.observation.truncated,
            "state_type": type(state).__name__,
            "state_running": state.running,
        }


async def mcp() -> dict:
    """OpenEnv's MCP client: an HTTP MCP session, reset over the WebSocket, tools over /mcp."""
    async with MCPToolClient(base_url=URL) as env:
        await env.reset(task_id=TASK)
        tools = [tool.name for tool in await env.list_tools()]
        ls = await env.call_tool("bash", command="ls")
        submitted = await env.call_tool("submit")
        return {"tools": tools, "ls": ls, "submitted": submitted}


print(json.dumps({"generic": generic(), "typed": asyncio.run(typed()), "mcp": asyncio.run(mcp())}))
