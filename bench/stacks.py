"""What each RL-stack adapter adds to an env step, measured against the bare env in the same run.

    python bench/stacks.py [--rounds 5] [--per-round 20] [--verifiers-python .venv-verifiers/bin/python]

- skyrl:     ``GymSweTextEnv.step(text)`` (made by ``skyrl_gym.make``)  vs  ``env.step(text)``;
- atropos:   a turn of gym_swe's collector generating through atropos's server manager (the adapter's
             path: its semaphores, retries and OpenAI client, called across threads onto an event loop)  vs
             the same collector with gym_swe's own ``vllm-server`` client, per turn (generation and env step),
             against a real vLLM server with a tiny model (the ratio the target is for) and against a scripted
             ``/v1/completions`` server answering at once (what atropos's client path adds per request);
- verifiers: the adapter's step (``GymSweEnv.run``'s thread hop and the reply made an action, on a real
             verifiers ``Segment``, in verifiers' environment)  vs  ``env.step(text)``; and end to end:
             ``vf-eval gym-swe-verifiers`` against ``gym-swe eval --generator openai-chat``, both against one
             scripted chat policy, wall time per env step, process starts included (verifiers starts a harness
             program per rollout: that is its architecture, not the adapter's step).

Every step is a ``bash true`` tool call in the local sandbox, on CodeDebug-v0 (the vLLM turns: the tiny
model's text). Steps alternate call by call between adapter and baseline, each pair opened by one and the
other in turn (turns: episode by episode), so the machine's load falls on both alike. Target: each
adapter's step within 1.1x of the bare env's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import gymnasium
from timing import median_ms, timed  # bench/timing.py

import gym_swe  # noqa: F401

REPO_ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = REPO_ROOT.parent / "shared" / "data" / "tokenizers" / "qwen2.5-instruct"
TASK = "GymSwe/0"
STEP = '<tool_call>{"name": "bash", "arguments": {"command": "true"}}</tool_call>'
ENDLESS = {"max_turns": 10**6, "max_context_chars": 10**9}
"""Make kwargs for an episode that no limit ends while it is measured."""


def bare_env() -> Any:
    env = gymnasium.make("CodeDebug-v0", sandbox="local", max_episode_steps=-1, **ENDLESS)
    env.reset(options={"task_id": TASK})
    return env


def interleaved(ours: Any, base: Any, rounds: int, per_round: int) -> tuple[list[float], list[float]]:
    timed(ours, 5), timed(base, 5)  # warm up
    ours_samples: list[float] = []
    base_samples: list[float] = []
    # Call by call, each pair in turn opened by one and the other, so that the machine's load falls on both.
    for index in range(rounds * per_round):
        if index % 2:
            base_samples += timed(base, 1)
            ours_samples += timed(ours, 1)
        else:
            ours_samples += timed(ours, 1)
            base_samples += timed(base, 1)
    return ours_samples, base_samples


# -- skyrl ------------------------------------------------------------------------------------------------
def skyrl_step(rounds: int, per_round: int) -> tuple[float, float]:
    import skyrl_gym

    from gym_swe.integrations.skyrl import register_envs

    register_envs()
    sky = skyrl_gym.make("CodeDebug-v0", env_config={"sandbox": "local", **ENDLESS}, extras={"task_id": TASK})
    sky.init(None)
    bare = bare_env()
    try:
        ours, base = interleaved(lambda: sky.step(STEP), lambda: bare.step(STEP), rounds, per_round)
    finally:
        sky.close()
        bare.close()
    return median_ms(ours), median_ms(base)


# -- atropos ----------------------------------------------------------------------------------------------
class CompletionsServer:
    """``/v1/completions`` on loopback, answering every prompt with ``text`` as vLLM would send it back
    (token ids, and a log-probability each)."""

    def __init__(self, tokenizer: Any, text: str) -> None:
        from gym_swe.rollout.chat import ChatFormat

        ids = [*tokenizer.encode(text, add_special_tokens=False), ChatFormat(tokenizer).end_of_turn_id()]
        logprobs = {"tokens": [f"token_id:{i}" for i in ids], "token_logprobs": [-0.1] * len(ids),
                    "text_offset": [0] * len(ids), "top_logprobs": None}  # fmt: skip
        answer = json.dumps({
            "id": "cmpl-0", "object": "text_completion", "created": 0, "model": "scripted",
            "choices": [{"index": 0, "text": text, "finish_reason": "stop", "token_ids": ids,
                         "logprobs": logprobs}],
            "usage": {"prompt_tokens": 1, "completion_tokens": len(ids), "total_tokens": len(ids) + 1},
        }).encode()  # fmt: skip

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # Headers and body go in two writes: without this, Nagle and the client's delayed ACK hold
                # each answer on a kept-alive connection for tens of ms.
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def per_turn_ms(generator: Any, turns: int) -> list[float]:
    """One episode of ``turns`` turns through the collector: each turn's generation and env step, in ms."""
    from gym_swe.rollout.collector import collect
    from gym_swe.rollout.generators.base import SamplingParams

    env = gymnasium.make("CodeDebug-v0", sandbox="local", max_turns=turns, max_episode_steps=turns,
                         max_context_chars=10**9)  # fmt: skip
    try:
        # 32 tokens a turn, within the test server's 4,096-token context for the rounds' turns
        [trajectory] = collect([env], generator, [TASK], sampling=SamplingParams(max_tokens=32),
                               max_model_len=4096, check_rerender=False)  # fmt: skip
    finally:
        env.close()
    assert not trajectory.failed and len(trajectory.turns) == turns, trajectory.error
    # The last turn ends the episode: its step grades it, which both sides pay alike and is not a step's cost.
    return [(t.generate_seconds + t.env_seconds) * 1000 for t in trajectory.turns[:-1]]


def atropos_turn(url: str, model: str, tokenizer: Any, rounds: int, per_round: int) -> tuple[float, float]:
    """Median ms per collector turn through atropos's server manager, and through gym_swe's own client."""
    from atroposlib.envs.server_handling.server_manager import APIServerConfig, ServerManager

    from gym_swe.integrations.atropos import AtroposServerGenerator
    from gym_swe.rollout.generators.vllm_server import VLLMServerGenerator

    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    config = APIServerConfig(base_url=url + "/v1", model_name=model, server_type="openai", api_key="EMPTY",
                             health_check=False)  # fmt: skip
    ours_generator = AtroposServerGenerator(ServerManager([config]), tokenizer, loop)
    base_generator = VLLMServerGenerator(url, model, tokenizer)
    try:
        per_turn_ms(ours_generator, 3), per_turn_ms(base_generator, 3)  # warm up
        ours: list[float] = []
        base: list[float] = []
        for index in range(rounds):
            first, second = (
                (ours_generator, base_generator) if index % 2 == 0 else (base_generator, ours_generator)
            )
            for generator in (first, second):
                turns = per_turn_ms(generator, per_round + 1)
                (ours if generator is ours_generator else base).extend(turns)
    finally:
        base_generator.close()
        loop.call_soon_threadsafe(loop.stop)
    return median_ms([ms / 1000 for ms in ours]), median_ms([ms / 1000 for ms in base])


def atropos_rows(args: argparse.Namespace) -> list[tuple[str, float, float, str]]:
    from transformers import AutoTokenizer

    sys.path.insert(0, str(REPO_ROOT))
    from gym_swe.rollout.tiny import make_tiny_model
    from tests.rollout.vllm_server import VLLMServer

    tokenizer = AutoTokenizer.from_pretrained(str(args.tokenizer))
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        model = str(make_tiny_model(args.tokenizer, Path(scratch) / "tiny"))
        environment = {"VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "2"}
        with VLLMServer(model, python=args.vllm_python, extra_args=["--dtype", "float32"], env=environment,
                        sync_extension=False) as server:  # fmt: skip
            turn = atropos_turn(server.base_url, model, tokenizer, args.rounds, args.per_round)
        rows.append(("atropos: turn, tiny model on vLLM", *turn, "turn, vllm-server client"))
    scripted = CompletionsServer(tokenizer, STEP)
    try:
        turn = atropos_turn(scripted.url, "scripted", tokenizer, args.rounds, args.per_round)
    finally:
        scripted.close()
    rows.append(("atropos: turn, scripted server", *turn, "turn, vllm-server client"))
    return rows


# -- verifiers --------------------------------------------------------------------------------------------
def verifiers_step(rounds: int, per_round: int) -> None:
    """Run in verifiers' environment (``--part verifiers-step``): prints the two medians as JSON."""
    from verifiers.v1 import AssistantMessage, Segment

    from gym_swe.integrations.verifiers import action_of

    segment = Segment(messages=[AssistantMessage(content=STEP)])
    env = bare_env()
    loop = asyncio.new_event_loop()

    async def adapter_step() -> None:
        await asyncio.to_thread(env.step, action_of(segment))

    try:
        ours, base = interleaved(lambda: loop.run_until_complete(adapter_step()), lambda: env.step(STEP),
                                 rounds, per_round)  # fmt: skip
    finally:
        env.close()
        loop.close()
    print(json.dumps({"ours_ms": median_ms(ours), "base_ms": median_ms(base)}))


def end_to_end(vf_eval: Path, tasks: list[str], turns: int) -> tuple[float, float]:
    """Wall time per env step: vf-eval, then gym-swe eval, on the same tasks and the same scripted policy."""
    sys.path.insert(0, str(REPO_ROOT))
    from tests.integrations.scripted_chat import ScriptedChatServer

    server = ScriptedChatServer(fixes=[], idle_turns=turns - 1)
    environment = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "PATH": f"{vf_eval.parent}:{os.environ['PATH']}",
    }
    steps = len(tasks) * turns
    try:
        with tempfile.TemporaryDirectory() as out:
            limit = str(turns + 1)
            vf_command = [
                str(vf_eval), "gym-swe-verifiers", "--model", "scripted", "--client.base-url",
                server.base_url, "--no-push", "--no-rich", "--output-dir", out, "--env.taskset.task-ids",
                json.dumps(tasks), "--env.taskset.max-turns", limit,
            ]  # fmt: skip
            started = time.perf_counter()
            subprocess.run(vf_command, check=True, capture_output=True, env=environment, cwd=out, timeout=900)
            ours = time.perf_counter() - started
            ids = [flag for task in tasks for flag in ("--task-id", task)]
            eval_command = [
                sys.executable, "-m", "gym_swe.cli", "eval", "--env", "CodeDebug-v0", "--generator",
                "openai-chat", "--base-url", server.base_url, "--model", "scripted", "--api-key", "x",
                "--max-turns", limit, "--out", f"{out}/trajectories.jsonl", *ids,
            ]  # fmt: skip
            started = time.perf_counter()
            subprocess.run(
                eval_command, check=True, capture_output=True, env=environment, cwd=out, timeout=900
            )
            base = time.perf_counter() - started
    finally:
        server.close()
    return ours / steps * 1000, base / steps * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--per-round", type=int, default=20)
    parser.add_argument("--tokenizer", type=Path, default=TOKENIZER, help="the tiny model's tokenizer")
    parser.add_argument(
        "--verifiers-python", type=Path, default=REPO_ROOT / ".venv-verifiers" / "bin" / "python"
    )
    parser.add_argument("--vllm-python", default=str(REPO_ROOT / ".venv-vllm" / "bin" / "python"))
    parser.add_argument("--end-to-end-turns", type=int, default=10, help="env steps per episode, end to end")
    parser.add_argument("--part", choices=["all", "verifiers-step"], default="all", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part == "verifiers-step":
        verifiers_step(args.rounds, args.per_round)
        return

    rows = [("skyrl: GymSweTextEnv.step", *skyrl_step(args.rounds, args.per_round), "env.step")]
    rows += atropos_rows(args)
    part = [str(args.verifiers_python), __file__, "--part", "verifiers-step", "--rounds", str(args.rounds),
            "--per-round", str(args.per_round)]  # fmt: skip
    step = subprocess.run(part, check=True, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})  # fmt: skip
    medians = json.loads(step.stdout.strip().splitlines()[-1])
    rows.append(("verifiers: GymSweEnv step", medians["ours_ms"], medians["base_ms"], "env.step"))
    tasks = ["GymSwe/0", "GymSwe/1", "GymSwe/2", "GymSwe/3"]
    whole = end_to_end(args.verifiers_python.with_name("vf-eval"), tasks, args.end_to_end_turns)
    rows.append(("verifiers: vf-eval, end to end", *whole, "gym-swe eval openai-chat"))
    print(f"{'measure':<40} {'ms':>9}   {'baseline':<28} {'ms':>9}   {'ratio':>6}  target")
    for name, ours, base, base_name in rows:
        target = "<= 1.1x"
        if "scripted" in name:
            target = f"(+{ours - base:.1f} ms a request: atropos's client path)"
        elif "end to end" in name:
            target = "(verifiers' harness per rollout)"
        print(f"{name:<40} {ours:9.3f}   {base_name:<28} {base:9.3f}   {ours / base:5.2f}x  {target}")


if __name__ == "__main__":
    main()
