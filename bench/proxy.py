"""The interception proxy's cost: harness rollouts over HTTP against the same generator called directly.

    python bench/proxy.py [--rollouts 1,8,32] [--turns 4] [--latency 0.5] [--repeats 3]
                          [--harness threads|processes]

A scripted generator with a realistic latency (``--latency`` seconds per call, whatever the batch: a server
decoding a turn of ~100 tokens) answers every turn with a bash tool call. Two arms, in the same run, with the
same prompts and the same generator:

- **direct**: each rollout is a thread that renders its prompt with the chat template and calls the
  generator itself, bridging between turns as gym_swe's collector does (no HTTP, no JSON).
- **proxy**: each rollout is a harness that POSTs OpenAI chat requests (the whole history each time, ~2 KB
  of tool output per turn) to its rollout of a `ProxyServer`; the proxy renders, bridges, generates, parses
  the tool calls and answers.

``--harness threads`` (the default) runs each harness as a thread of the proxy's process, as `run_episodes`
runs mini-swe-agent for ``gym-swe eval --harness`` and the trainer: the harnesses' HTTP client work (~1 ms of
CPU a request for ``requests``) competes with the proxy for the same interpreter lock, the harder case.
``--harness processes`` gives each harness a process of its own, as a CLI agent or mini-swe-agent inside the
episode's sandbox (`run_episode_inside`) has: its client work takes a core, not the proxy's lock. Either way
the proxy's own work (HTTP server, JSON, render, bridge, tool-call parsing) stays fully inside the
measurement, as does handing the rollouts to the harness processes.

Printed per number of concurrent rollouts: turns per second of each arm, the proxy's wall time over the
direct arm's (the target: <= 1.05x at 32 rollouts), and the proxy's mean added milliseconds per turn. Each
figure is the median of ``--repeats`` runs.
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


def proxy_rollout(base_url: str, secret: str, turns: int) -> None:
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {secret}"
    messages = list(OPENING)
    for _ in range(turns):
        response = session.post(
            base_url + "/chat/completions",
            json={"model": "m", "messages": messages, "tools": [BASH]},
            timeout=600,
        )
        response.raise_for_status()
        message = response.json()["choices"][0]["message"]
        messages.append(message)
        for call in message["tool_calls"]:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": TOOL_OUTPUT})
    session.close()


def timed(targets: list[Any]) -> float:
    threads = [threading.Thread(target=target) for target in targets]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start


def timed_in_processes(pool: Any, rollouts: list[Any], turns: int) -> float:
    """Each rollout played by a harness process of ``pool`` (one process per rollout, started beforehand)."""
    jobs = [(rollout.base_url, rollout.secret, turns) for rollout in rollouts]
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
    args = parser.parse_args()
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
        f"{'rollouts':>8} {'direct turns/s':>15} {'proxy turns/s':>14} {'proxy/direct':>13} "
        f"{'added ms/turn':>14}"
    )
    counts = [int(n) for n in args.rollouts.split(",")]
    # Spawned, not forked: the proxy's process has threads (its server, the tokenizer's).
    pool = multiprocessing.get_context("spawn").Pool(max(counts)) if args.harness == "processes" else None
    with ProxyServer(generator, params, max_model_len=32768) as proxy:
        if pool is not None:  # every harness process started and its imports done before any timing
            warm = [proxy.open_rollout("warm-up") for _ in range(max(counts))]
            timed_in_processes(pool, warm, 1)
            for handle in warm:
                handle.finish()
        for count in counts:
            direct_times, proxy_times = [], []
            for _ in range(args.repeats):
                direct_times.append(timed([lambda: direct_rollout(generator, args.turns, params)] * count))
                handles = [proxy.open_rollout(f"bench-{i}") for i in range(count)]
                if pool is not None:
                    proxy_times.append(timed_in_processes(pool, handles, args.turns))
                else:
                    plays = [lambda h=h: proxy_rollout(h.base_url, h.secret, args.turns) for h in handles]
                    proxy_times.append(timed(plays))
                for handle in handles:
                    trajectory = handle.finish()
                    assert len(trajectory.turns) == args.turns and trajectory.forks == 0
            direct, through = statistics.median(direct_times), statistics.median(proxy_times)
            turns = count * args.turns
            added = (through - direct) / args.turns * 1000
            print(
                f"{count:>8} {turns / direct:>15.2f} {turns / through:>14.2f} {through / direct:>12.3f}x "
                f"{added:>14.1f}"
            )
    if pool is not None:
        pool.close()
        pool.join()


if __name__ == "__main__":
    main()
