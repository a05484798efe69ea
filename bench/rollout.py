"""Rollout throughput of the collector, against generation alone on the same prompts, in one run.

    python bench/rollout.py [--backends hf,vllm-server] [--episodes 1,8,32] [--max-tokens 96]
                            [--vllm-python .venv-vllm/bin/python]

For each backend (the tiny random model: transformers in-process, and a vLLM CPU server) and each number of
parallel episodes: CodeDebug-v0 episodes of 3 turns run through `collect`; we count env steps and generated
tokens per second, and the share of wall time spent outside generator calls. Then every batch of prompts the
collector sent is sent again, alone, with the same parameters: the collector's overhead is its wall time over
that (target: <= 1.10x at 32 episodes).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import gymnasium

import gym_swe  # noqa: F401
from gym_swe.rollout.collector import collect
from gym_swe.rollout.generators import SamplingParams, make_generator
from gym_swe.rollout.tiny import make_tiny_model

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.rollout.vllm_server import VLLMServer  # noqa: E402  (the tests' launcher: gym_swe starts no server)


class Recorder:
    """Wraps a generator: times its calls and keeps the batches it was sent."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.name, self.tokenizer = inner, inner.name, inner.tokenizer
        self.concurrent = getattr(inner, "concurrent", False)
        self.calls: list[tuple[list[list[int]], SamplingParams]] = []
        self.seconds = 0.0
        self.tokens = 0

    def generate(self, prompts, params):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        samples = self.inner.generate(prompts, params)
        self.seconds += time.perf_counter() - start
        self.calls.append(([list(p) for p in prompts], params))
        self.tokens += sum(len(s.token_ids) for s in samples)
        return samples

    def replay(self, width: int) -> float:
        """The same calls again, without envs. A server got one request per episode turn, concurrently: those
        go again in waves of ``width`` concurrent requests (a turn of every episode at once)."""
        start = time.perf_counter()
        if self.concurrent:
            requests = [(prompt, params) for prompts, params in self.calls for prompt in prompts]
            for first in range(0, len(requests), width):
                by_params: dict[SamplingParams, list[list[int]]] = {}
                for prompt, params in requests[first : first + width]:
                    by_params.setdefault(params, []).append(prompt)
                for params, prompts in by_params.items():
                    self.inner.generate(prompts, params)
        else:
            for prompts, params in self.calls:
                self.inner.generate(prompts, params)
        return time.perf_counter() - start

    def sync_weights(self, model) -> None:  # type: ignore[no-untyped-def]
        self.inner.sync_weights(model)

    def close(self) -> None:
        pass


def measure(generator, episodes: int, max_tokens: int) -> dict:  # type: ignore[no-untyped-def]
    tasks = load_ids()
    task_ids = [tasks[i % len(tasks)] for i in range(episodes)]
    recorder = Recorder(generator)
    # No per-request seed: vLLM 0.32 on CPU crashes on seeded requests whose prefill is chunked.
    sampling = SamplingParams(max_tokens=max_tokens, temperature=1.0)
    start = time.perf_counter()
    trajectories = collect(
        lambda: gymnasium.make("CodeDebug-v0", max_turns=3, max_episode_steps=3),
        recorder,
        task_ids,
        sampling=sampling,
        max_model_len=8192,
        parallel=episodes,
    )
    wall = time.perf_counter() - start
    failed = [t.error for t in trajectories if t.error]
    if failed:
        raise SystemExit(f"{len(failed)} trajectories failed: {failed[0]}")
    alone = recorder.replay(episodes)
    steps = sum(len(t.turns) for t in trajectories)
    return {
        "episodes": episodes,
        "steps": steps,
        "tokens": recorder.tokens,
        "wall": wall,
        "generation": recorder.seconds,
        "alone": alone,
    }


def load_ids() -> list[str]:
    from gym_swe.tasks.functions import load_function_tasks

    # Tasks whose buggy code ends quickly under the hidden tests (a few loop forever until a timeout).
    return [t.task_id for t in load_function_tasks("bundled") if t.failure_symptoms == "incorrect output"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="hf,vllm-server")
    parser.add_argument("--episodes", default="1,8,32")
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--vllm-python", default=str(ROOT / ".venv-vllm" / "bin" / "python"))
    parser.add_argument(
        "--tokenizer", default=str(ROOT.parent / "shared" / "data" / "tokenizers" / "qwen2.5-instruct")
    )
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="gym_swe-bench-model-"))
    model = str(make_tiny_model(args.tokenizer, scratch / "tiny"))
    rows = []
    for backend in args.backends.split(","):
        server = None
        if backend == "hf":
            generator = make_generator("hf", model=model)
        else:
            server = VLLMServer(
                model,
                python=args.vllm_python,
                max_model_len=8192,
                extra_args=["--dtype", "float32"],
                env={"VLLM_CPU_KVCACHE_SPACE": "2"},
            )
            generator = make_generator("vllm-server", base_url=server.base_url, model=model, tokenizer=model)
        try:
            measure(generator, 2, 8)  # warm up
            for episodes in (int(n) for n in args.episodes.split(",")):
                rows.append((backend, measure(generator, episodes, args.max_tokens)))
        finally:
            generator.close()
            if server is not None:
                server.close()

    print(
        f"{'backend':<12} {'eps':>4} {'steps':>6} {'tokens':>7} {'wall s':>7} {'steps/s':>8} {'tok/s':>8} "
        f"{'outside gen':>11} {'gen alone s':>11} {'ratio':>6}"
    )
    for backend, r in rows:
        # With a server, the requests of different episodes overlap: their summed time is not wall time.
        outside = f"{1 - r['generation'] / r['wall']:.1%}" if backend == "hf" else "n/a"
        print(
            f"{backend:<12} {r['episodes']:>4} {r['steps']:>6} {r['tokens']:>7} {r['wall']:>7.2f} "
            f"{r['steps'] / r['wall']:>8.2f} {r['tokens'] / r['wall']:>8.1f} {outside:>11} "
            f"{r['alone']:>11.2f} {r['wall'] / r['alone']:>5.2f}x"
        )


if __name__ == "__main__":
    main()
