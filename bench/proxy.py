"""The interception proxy's cost: harness rollouts over HTTP against the same generator called directly.

    python bench/proxy.py [--rollouts 1,8,32] [--turns 4] [--latency 0.5] [--repeats 3]
                          [--harness threads|processes] [--dialects chat_completions,responses,...]

A scripted generator with a realistic latency (``--latency`` seconds per call, whatever the batch: a server
decoding a turn of ~100 tokens) answers every turn with a bash tool call. Two arms, in the same run, with the
same prompts and the same generator:

- **direct**: each rollout is a thread that renders its prompt with the chat template and calls the
  generator itself, bridging between turns as gym_swe's collector does (no HTTP, no JSON).
- **proxy**: each rollout is a harness that POSTs requests in one wire dialect (the whole history each time,
  ~2 KB of tool output per turn, the proxy's answers sent back as they came) to its rollout of a
  `ProxyServer`; the proxy reads the dialect, renders, bridges, generates, parses the tool calls and answers
  in that dialect. ``--dialects`` (default: all four) picks the dialects measured, each against the direct
  arm of the same repeat: OpenAI chat completions, the Responses API, Anthropic Messages, Google
  generateContent. The harnesses are plain HTTP clients (``requests``) in every dialect, so that what
  differs between dialects is the proxy's work, not an SDK's.

``--harness threads`` (the default) runs each harness as a thread of the proxy's process, as `run_episodes`
runs mini-swe-agent for ``gym-swe eval --harness`` and the trainer: the harnesses' HTTP client work (~1 ms of
CPU a request for ``requests``) competes with the proxy for the same interpreter lock, the harder case.
``--harness processes`` gives each harness a process of its own, as a CLI agent or mini-swe-agent inside the
episode's sandbox (`run_episode_inside`) has: its client work takes a core, not the proxy's lock. Either way
the proxy's own work (HTTP server, JSON, render, bridge, tool-call parsing) stays fully inside the
measurement, as does handing the rollouts to the harness processes.

Printed per dialect and number of concurrent rollouts: turns per second of each arm, the proxy's wall time
over the direct arm's (the target: <= 1.05x at 32 rollouts), and the proxy's mean added milliseconds per
turn. Each figure is the median of ``--repeats`` runs.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import requests

from gym_swe.rollout.chat import ChatFormat
from gym_swe.rollout.generators.base import Sample, SamplingParams
from gym_swe.rollout.proxy import ProxyServer

ROOT = Path(__file__).resolve().parents[1]
SHARED_TOKENIZER = ROOT.parent / "shared" / "data" / "tokenizers" / "qwen2.5-instruct"
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
OPENING = [
    {"role": "system", "content": "You are a careful software engineer. " * 20},
    {"role": "user", "content": "Fix the failing test in /testbed. " * 10},
]
TOOL_OUTPUT = "".join(f"tests/test_module.py::test_case_{i} PASSED\n" for i in range(50))  # ~2 KB
PARAMETERS = BASH["function"]["parameters"]
DIALECTS = ("chat_completions", "responses", "anthropic_messages", "google_generate")


class LatencyGenerator:
    """Answers every prompt with one bash call after ``latency`` seconds per call; concurrent requests are
    served concurrently (as a vLLM server batches them)."""

    name = "scripted-latency"
    concurrent = True

    def __init__(self, tokenizer: Any, latency: float) -> None:
        self.tokenizer, self.latency = tokenizer, latency
        call = {"name": "bash", "arguments": {"command": "python -m pytest -q tests"}}
        self.text = text = f"<tool_call>\n{json.dumps(call)}\n</tool_call>"
        self.ids = [*tokenizer.encode(text, add_special_tokens=False), ChatFormat(tokenizer).end_of_turn_id()]

    def generate(self, prompts, params: SamplingParams) -> list[Sample]:  # type: ignore[no-untyped-def]
        time.sleep(self.latency)
        return [Sample(list(self.ids), [-0.1] * len(self.ids), self.text, "stop") for _ in prompts]

    def close(self) -> None:
        pass


def direct_rollout(generator: LatencyGenerator, turns: int, params: SamplingParams) -> None:
    chat = ChatFormat(generator.tokenizer, [BASH])
    messages = list(OPENING)
    ids = chat.prompt_ids(messages)
    for turn in range(turns):
        sample = generator.generate([ids], params)[0]
        call = {
            "id": f"call{turn:03d}00",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": "python -m pytest -q tests"})},
        }
        assistant = {"role": "assistant", "content": None, "tool_calls": [call]}
        result = {"role": "tool", "tool_call_id": call["id"], "content": TOOL_OUTPUT}
        ids = ids + sample.token_ids + chat.bridge_ids(assistant, [result], sample.token_ids)


def chat_completions_harness(session: requests.Session, root: str, secret: str, turns: int) -> None:
    session.headers["Authorization"] = f"Bearer {secret}"
    messages: list[Any] = list(OPENING)
    for _ in range(turns):
        body = {"model": "m", "messages": messages, "tools": [BASH]}
        message = answer(session, root + "/v1/chat/completions", body)["choices"][0]["message"]
        messages.append(message)
        for call in message["tool_calls"]:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": TOOL_OUTPUT})


def responses_harness(session: requests.Session, root: str, secret: str, turns: int) -> None:
    session.headers["Authorization"] = f"Bearer {secret}"
    tools = [
        {"type": "function", "name": "bash", "description": "Run a bash command", "parameters": PARAMETERS}
    ]
    items: list[Any] = [OPENING[1]]
    for _ in range(turns):
        body = {"model": "m", "instructions": OPENING[0]["content"], "input": items, "tools": tools}
        output = answer(session, root + "/v1/responses", body)["output"]
        items += output
        for item in output:
            if item["type"] == "function_call":
                items.append(
                    {"type": "function_call_output", "call_id": item["call_id"], "output": TOOL_OUTPUT}
                )


def anthropic_messages_harness(session: requests.Session, root: str, secret: str, turns: int) -> None:
    session.headers["x-api-key"] = secret
    tools = [{"name": "bash", "description": "Run a bash command", "input_schema": PARAMETERS}]
    messages: list[Any] = [OPENING[1]]
    for _ in range(turns):
        body = {"model": "m", "max_tokens": 256, "system": OPENING[0]["content"], "messages": messages}
        content = answer(session, root + "/v1/messages", {**body, "tools": tools})["content"]
        messages.append({"role": "assistant", "content": content})
        results = [
            {"type": "tool_result", "tool_use_id": block["id"], "content": TOOL_OUTPUT}
            for block in content
            if block["type"] == "tool_use"
        ]
        messages.append({"role": "user", "content": results})


def google_generate_harness(session: requests.Session, root: str, secret: str, turns: int) -> None:
    session.headers["x-goog-api-key"] = secret
    tools = [{"functionDeclarations": [{"name": "bash", "parametersJsonSchema": PARAMETERS}]}]
    system = {"parts": [{"text": OPENING[0]["content"]}]}
    contents: list[Any] = [{"role": "user", "parts": [{"text": OPENING[1]["content"]}]}]
    for _ in range(turns):
        body = {"contents": contents, "systemInstruction": system, "tools": tools}
        content = answer(session, root + "/v1beta/models/m:generateContent", body)["candidates"][0]["content"]
        contents.append(content)
        calls = [part["functionCall"] for part in content["parts"] if "functionCall" in part]
        responses = [{"id": c["id"], "name": c["name"], "response": {"output": TOOL_OUTPUT}} for c in calls]
        contents.append({"role": "user", "parts": [{"functionResponse": r} for r in responses]})


HARNESSES = {
    "chat_completions": chat_completions_harness,
    "responses": responses_harness,
    "anthropic_messages": anthropic_messages_harness,
    "google_generate": google_generate_harness,
}


def answer(session: requests.Session, url: str, body: dict[str, Any]) -> Any:
    response = session.post(url, json=body, timeout=600)
    response.raise_for_status()
    return response.json()


def proxy_rollout(dialect: str, root: str, secret: str, turns: int) -> None:
    """A harness speaking ``dialect`` to the rollout at ``root`` (its URL under the proxy)."""
    with requests.Session() as session:
        HARNESSES[dialect](session, root, secret, turns)


def measure(proxy: ProxyServer, pool: Any, dialect: str, count: int, turns: int) -> float:
    """Seconds for ``count`` harnesses speaking ``dialect`` to play ``turns`` turns each, at once; each
    trajectory checked whole (every turn, no fork)."""
    handles = [proxy.open_rollout(f"bench-{i}") for i in range(count)]
    if pool is not None:
        seconds = timed_in_processes(pool, dialect, handles, turns)
    else:
        seconds = timed([lambda h=h: proxy_rollout(dialect, h.root_url, h.secret, turns) for h in handles])
    for handle in handles:
        trajectory = handle.finish()
        assert len(trajectory.turns) == turns and trajectory.forks == 0, (dialect, trajectory.end_reason)
    return seconds


def timed(targets: list[Any]) -> float:
    threads = [threading.Thread(target=target) for target in targets]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start


def timed_in_processes(pool: Any, dialect: str, rollouts: list[Any], turns: int) -> float:
    """Each rollout played by a harness process of ``pool`` (one process per rollout, started beforehand)."""
    jobs = [(dialect, rollout.root_url, rollout.secret, turns) for rollout in rollouts]
    start = time.perf_counter()
    pool.starmap(proxy_rollout, jobs, chunksize=1)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", default="1,8,32")
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per generator call")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--harness", choices=("threads", "processes"), default="threads", help="how harnesses run"
    )
    parser.add_argument("--dialects", default=",".join(DIALECTS), help="the wire dialects measured")
    args = parser.parse_args()
    dialects = args.dialects.split(",")
    unknown = [name for name in dialects if name not in DIALECTS]
    if unknown:
        parser.error(f"unknown dialect(s) {', '.join(unknown)}: choose among {', '.join(DIALECTS)}")
    from transformers import AutoTokenizer

    if SHARED_TOKENIZER.is_dir():
        tokenizer = AutoTokenizer.from_pretrained(SHARED_TOKENIZER)
    else:  # trained here, in a directory of the bench's own (the tokenizer is in memory once loaded)
        from gym_swe.rollout.tiny import make_tiny_tokenizer

        with tempfile.TemporaryDirectory(prefix="gym_swe-bench-proxy-") as scratch:
            tokenizer = AutoTokenizer.from_pretrained(
                make_tiny_tokenizer(Path(scratch) / "tiny-bpe-tokenizer")
            )
    generator = LatencyGenerator(tokenizer, args.latency)
    params = SamplingParams(max_tokens=256)
    print(
        f"tokenizer: {Path(tokenizer.name_or_path).name}; {args.turns} turns per rollout; "
        f"generator latency {args.latency * 1000:.0f} ms per call; harnesses in {args.harness}; "
        f"median of {args.repeats}"
    )
    print(
        f"{'dialect':>18} {'rollouts':>8} {'direct turns/s':>15} {'proxy turns/s':>14} {'proxy/direct':>13} "
        f"{'added ms/turn':>14}"
    )
    counts = [int(n) for n in args.rollouts.split(",")]
    # Spawned, not forked: the proxy's process has threads (its server, the tokenizer's).
    pool = multiprocessing.get_context("spawn").Pool(max(counts)) if args.harness == "processes" else None
    with ProxyServer(generator, params, max_model_len=32768) as proxy:
        if pool is not None:  # every harness process started and its imports done before any timing
            warm = [proxy.open_rollout("warm-up") for _ in range(max(counts))]
            timed_in_processes(pool, dialects[0], warm, 1)
            for handle in warm:
                handle.finish()
        for count in counts:
            direct_times: list[float] = []
            proxy_times: dict[str, list[float]] = {dialect: [] for dialect in dialects}
            for _ in range(args.repeats):  # the dialects and their direct baseline, in turn
                direct_times.append(timed([lambda: direct_rollout(generator, args.turns, params)] * count))
                for dialect in dialects:
                    proxy_times[dialect].append(measure(proxy, pool, dialect, count, args.turns))
            direct = statistics.median(direct_times)
            for dialect in dialects:
                through = statistics.median(proxy_times[dialect])
                turns = count * args.turns
                added = (through - direct) / args.turns * 1000
                print(
                    f"{dialect:>18} {count:>8} {turns / direct:>15.2f} {turns / through:>14.2f} "
                    f"{through / direct:>12.3f}x {added:>14.1f}"
                )
    if pool is not None:
        pool.close()
        pool.join()


if __name__ == "__main__":
    main()
