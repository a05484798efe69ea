"""One scripted episode per agent harness, against the same episode played by gym_swe's own tool loop.

    python bench/harness_episode.py [--harnesses pi opencode] [--backend local] [--repeats 5]

Both arms fix CodeDebug-v0's GymSwe/0 with the same plan, written by a scripted model (the real Qwen2.5
tokenizer and chat template from ../shared, else a small BPE one; ``--generate-ms`` of latency per call):
run the example tests, write the fixed function, run the tests again, end. The baseline is gym_swe's
collector with its own tools (bash, str_replace_editor, submit); each harness arm is the real CLI inside the
episode's sandbox, through the proxy (started once, as a trainer's collection does), with that harness's own
tools and a final answer instead of ``submit``. Both arms include the reset (a fresh sandbox) and grading
(another fresh sandbox). What the ratio shows is what running the agent's own CLI costs an episode: its
start, its own work per turn, the proxy's HTTP.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from pathlib import Path

import gymnasium

import gym_swe  # noqa: F401
from gym_swe.integrations.harnesses.install import install_harness
from gym_swe.integrations.harnesses.registry import harness_named
from gym_swe.integrations.harnesses.runner import run_episode
from gym_swe.rollout.chat import ChatFormat
from gym_swe.rollout.collector import collect
from gym_swe.rollout.generators.base import Sample, SamplingParams
from gym_swe.rollout.proxy import ProxyServer
from gym_swe.tasks.functions import load_function_tasks

TASK = "GymSwe/0"
SHARED_TOKENIZER = Path(__file__).resolve().parents[2] / "shared" / "data" / "tokenizers" / "qwen2.5-instruct"
MARK = re.compile(r"step (\d+)")


class ScriptedModel:
    """Answers the first turn of its plan whose "step N" mark the prompt does not hold, after a delay."""

    name = "scripted"

    def __init__(self, tokenizer, turns: list[str], seconds: float) -> None:  # type: ignore[no-untyped-def]
        self.tokenizer, self.turns, self.seconds = tokenizer, turns, seconds
        self.stop_id = ChatFormat(tokenizer).end_of_turn_id()

    def generate(self, prompts, params: SamplingParams) -> list[Sample]:  # type: ignore[no-untyped-def]
        time.sleep(self.seconds)
        samples = []
        for prompt in prompts:
            seen = {int(n) for n in MARK.findall(self.tokenizer.decode(list(prompt)))}
            text = next((t for i, t in enumerate(self.turns) if i not in seen), self.turns[-1])
            ids = [*self.tokenizer.encode(text, add_special_tokens=False), self.stop_id]
            samples.append(Sample(token_ids=ids, logprobs=[-0.5] * len(ids), text=text, finish_reason="stop"))
        return samples

    def sync_weights(self, model) -> None:  # type: ignore[no-untyped-def]
        pass

    def close(self) -> None:
        pass


def call(name: str, arguments: dict, step: int) -> str:  # type: ignore[type-arg]
    payload = json.dumps({"name": name, "arguments": arguments})
    return f"Next (step {step}).\n<tool_call>\n{payload}\n</tool_call>"


def plans(buggy: str, fixed: str) -> dict[str, list[str]]:
    """The same fix in each player's own tools."""
    test = "python test_solution.py"
    done = "The fix is in place (step {})."
    return {
        "gym_swe": [
            call("bash", {"command": test}, 0),
            call(
                "str_replace_editor",
                {
                    "command": "str_replace",
                    "path": "/workspace/solution.py",
                    "old_str": buggy,
                    "new_str": fixed,
                },
                1,
            ),
            call("bash", {"command": test}, 2),
            call("submit", {}, 3),
        ],
        "pi": [
            call("bash", {"command": test}, 0),
            call("write", {"path": "/workspace/solution.py", "content": fixed}, 1),
            call("bash", {"command": test}, 2),
            done.format(3),
        ],
        "opencode": [  # its write tool wants the file read first
            call("bash", {"command": test, "description": "Run the tests"}, 0),
            call("read", {"filePath": "/workspace/solution.py"}, 1),
            call("write", {"filePath": "/workspace/solution.py", "content": fixed}, 2),
            call("bash", {"command": test, "description": "Run the tests"}, 3),
            done.format(4),
        ],
    }


def tokenizer():  # type: ignore[no-untyped-def]
    from transformers import AutoTokenizer

    if SHARED_TOKENIZER.is_dir():
        return AutoTokenizer.from_pretrained(SHARED_TOKENIZER)
    from gym_swe.rollout.tiny import make_tiny_tokenizer

    path = Path(tempfile.mkdtemp()) / "tiny-bpe"
    make_tiny_tokenizer(path)
    return AutoTokenizer.from_pretrained(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--harnesses", nargs="+", default=["pi", "opencode"])
    parser.add_argument("--backend", default="local", choices=["local", "docker"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--generate-ms", type=float, default=0.0, help="latency of each generator call")
    args = parser.parse_args()

    task = load_function_tasks("bundled").get(TASK)
    plan, seconds = plans(task.buggy_code, task.fixed_code), args.generate_ms / 1000
    vocabulary = tokenizer()
    sampling = SamplingParams(max_tokens=4096)
    harnesses = {name: install_harness(harness_named(name), log=lambda line: None) for name in args.harnesses}
    env = gymnasium.make("CodeDebug-v0", sandbox=args.backend)
    socket_dir = tempfile.mkdtemp(prefix="gs-bench-")
    times: dict[str, list[float]] = {name: [] for name in ["gym_swe", *harnesses]}
    turns: dict[str, int] = {}
    try:
        proxies = {}
        for name in harnesses:
            model = ScriptedModel(vocabulary, plan[name], seconds)
            socket = f"{socket_dir}/{name}.sock"
            proxies[name] = ProxyServer(model, sampling, max_model_len=32768, unix_socket=socket).start()
        baseline = ScriptedModel(vocabulary, plan["gym_swe"], seconds)
        for _ in range(args.repeats):
            start = time.perf_counter()
            [trajectory] = collect([env], baseline, [TASK], sampling=sampling, max_model_len=32768)
            times["gym_swe"].append(time.perf_counter() - start)
            assert trajectory.reward == 1.0, (trajectory.end_reason, trajectory.error)
            turns["gym_swe"] = len(trajectory.turns)
            for name, proxy in proxies.items():
                start = time.perf_counter()
                trajectory = run_episode(env, proxy, name, TASK, timeout=600)
                times[name].append(time.perf_counter() - start)
                assert trajectory.reward == 1.0, (name, trajectory.end_reason, trajectory.error)
                turns[name] = len(trajectory.turns)
        for proxy in proxies.values():
            proxy.close()
    finally:
        env.close()
    base = statistics.median(times["gym_swe"])
    print(f"backend: {args.backend}, {args.repeats} repeats, {args.generate_ms:g} ms a generator call")
    print(f"{'player':<10} {'turns':>5} {'episode s':>10} {'/ gym_swe':>10} {'added s':>8}")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:<10} {turns[name]:>5} {median:>10.2f} {median / base:>9.2f}x {median - base:>8.2f}")


if __name__ == "__main__":
    main()
