"""Many episodes at once on one host, a third of them hostile: 32 local sandboxes and 16 docker ones at the same
time, through the collector (the whole mix in bench/redteam_report.py; `make test` plays a quarter of each kind,
at least one, 13 and 8 at once: ``GYM_SWE_TEST_SCALE``, `tests.conftest.long_run_scale`). The hostile ones fork-bomb, fill their memory and disks, get their executor
OOM-killed, leave a FIFO for the grader, write bytes and file names that are not UTF-8, and flood the parser
(the attacks of issue 21, part A). Every honest episode must be graded exactly as when it runs alone, nothing
may be left behind, and the host's memory stays bounded. Figures: bench/RESULTS.md ("Load")."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gym_swe.rollout.collector import collect
from gym_swe.rollout.generators.base import Sample, SamplingParams
from gym_swe.rollout.trajectory import Trajectory
from gym_swe.sandbox import Limits
from gym_swe.tasks.functions import load_function_tasks
from tests.conftest import scaled
from tests.redteam.scripted import SUBMIT, bash, make_env, write
from tests.redteam.test_soak import footprint

LIMITS = Limits(memory_mb=512, processes=128, file_size_mb=64, disk_mb=128, tmp_mb=128)
MiB = 1 << 20

# What each kind of episode does, turn by turn (the last, submit, only if the episode is still going).
HONEST = {
    "fix": lambda task: [write("/workspace/solution.py", task.fixed_code), SUBMIT],
    "wrong": lambda task: [bash("cd /workspace && python test_solution.py"), SUBMIT],
}
HOSTILE = {
    "fork_bomb": lambda task: [
        '<tool_call>{"name": "bash", "arguments": {"command": ":(){ :|:& };:", "timeout": 10}}</tool_call>',
        SUBMIT,
    ],
    "memory_filler": lambda task: [bash("python3 -c 'x = b\"x\" * (6 * 1024**3); print(len(x))'"), SUBMIT],
    "disk_filler": lambda task: [
        bash(
            "for d in /workspace /tmp /dev/shm; do for i in 1 2 3 4; do head -c 60000000 /dev/zero > $d/f$i "
            "|| break; done; done; df -m /workspace /tmp /dev/shm"
        ),
        SUBMIT,
    ],
    "oom_executor": lambda task: [  # fills its memory-backed mounts, then many processes: the executor goes
        bash("for d in /tmp /dev/shm; do for i in 1 2 3; do head -c 60000000 /dev/zero > $d/f$i; done; done"),
        bash(
            "for i in $(seq 100); do python3 -c 'import time; x = bytearray(3 << 20); time.sleep(30)' & "
            "done; wait"
        ),
        SUBMIT,
    ],
    "fifo_solution": lambda task: [bash("cd /workspace && rm solution.py && mkfifo solution.py"), SUBMIT],
    "not_utf8": lambda task: [
        bash(
            "cd /workspace && printf 'x = 1\\n' > \"$(printf 'notes\\377.py')\" && "
            "printf '# caf\\351\\n' >> solution.py && ls"
        ),
        SUBMIT,
    ],
    "parse_flood": lambda task: ["<tool_call>{" * 20_000, SUBMIT],
    "endless_output": lambda task: [
        '<tool_call>{"name": "bash", "arguments": {"command": "yes flood", "timeout": 3}}</tool_call>',
        SUBMIT,
    ],
}
# (backend, kind): how many episodes of each in the whole mix, all at once
FULL_MIX = {
    ("local", "fix"): 11,
    ("local", "wrong"): 10,
    ("local", "fork_bomb"): 2,
    ("local", "memory_filler"): 2,
    ("local", "disk_filler"): 1,
    ("local", "oom_executor"): 2,
    ("local", "fifo_solution"): 1,
    ("local", "not_utf8"): 1,
    ("local", "parse_flood"): 1,
    ("local", "endless_output"): 1,
    ("docker", "fix"): 6,
    ("docker", "wrong"): 5,
    ("docker", "fork_bomb"): 1,
    ("docker", "memory_filler"): 1,
    ("docker", "disk_filler"): 1,
    ("docker", "oom_executor"): 1,
    ("docker", "fifo_solution"): 1,
}
MIX = {key: scaled(count) for key, count in FULL_MIX.items()}
FUNCTION = re.compile(r"The function `(\w+)`")


class ScriptedByTask:
    """A scripted model whose every episode has a task of its own: the task named in the prompt says which
    script, the turns the conversation holds which turn of it."""

    name = "scripted"

    def __init__(self, tokenizer: Any, scripts: dict[str, list[str]]) -> None:
        self.tokenizer, self.scripts = tokenizer, scripts

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[Sample]:
        samples = []
        for prompt in prompts:
            text = self.tokenizer.decode(prompt)
            script = self.scripts[FUNCTION.search(text).group(1)]  # type: ignore[union-attr]
            turn = script[min(text.count("<|im_start|>assistant") - 1, len(script) - 1)]
            ids = self.tokenizer.encode(turn, add_special_tokens=False)[: params.max_tokens]
            samples.append(Sample(token_ids=ids, logprobs=[-0.5] * len(ids), text=turn, finish_reason="stop"))
        return samples

    def close(self) -> None:
        pass


def plan() -> list[tuple[str, str, Any]]:
    """(backend, kind, task) for every episode: each a task of its own, so the script knows it."""
    tasks = iter(load_function_tasks("bundled"))
    return [(backend, kind, next(tasks)) for (backend, kind), count in MIX.items() for _ in range(count)]


def grade_of(trajectory: Trajectory) -> dict[str, Any]:
    """What a grade says of the episode (not how long it took)."""
    grade = trajectory.grade or {}
    keys = ("resolved", "reward", "error", "rejection", "diff")
    return {
        "tests": [(t["name"], t["outcome"]) for t in grade.get("tests", [])],
        **{k: grade.get(k) for k in keys},
    }


def _rss() -> int:
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) * 1024  # type: ignore[union-attr]


@contextmanager
def memory_watch() -> Iterator[dict[str, int]]:
    """Samples this process's resident memory and the host's available memory while inside: the peaks, and
    the resident memory on entry (a test worker may hold what earlier tests loaded)."""
    seen = {"peak_rss": 0, "min_available": 1 << 62, "start_rss": _rss()}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            seen["peak_rss"] = max(seen["peak_rss"], _rss())
            meminfo = Path("/proc/meminfo").read_text()
            available = int(re.search(r"MemAvailable:\s+(\d+)", meminfo).group(1)) * 1024  # type: ignore[union-attr]
            seen["min_available"] = min(seen["min_available"], available)
            done.wait(0.1)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    try:
        yield seen
    finally:
        done.set()
        watcher.join()


@pytest.mark.slow
def test_many_episodes_at_once_a_third_hostile() -> None:
    from tests.rollout.conftest import TOKENIZERS
    from tests.rollout.test_proxy import tokenizer_for

    tokenizer = tokenizer_for(
        "qwen2.5-instruct" if (TOKENIZERS / "qwen2.5-instruct").is_dir() else "tiny-bpe"
    )
    episodes = plan()
    scripts = {task.entry_point: {**HONEST, **HOSTILE}[kind](task) for _, kind, task in episodes}
    generator = ScriptedByTask(tokenizer, scripts)
    sampling = SamplingParams(max_tokens=2048)

    def play(backend: str, kind_tasks: list[tuple[str, Any]], envs: list[Any]) -> list[Trajectory]:
        return collect(envs, generator, [task.task_id for _, task in kind_tasks], sampling=sampling,
                       max_model_len=16384)  # fmt: skip

    def make(backend: str) -> Any:
        return make_env("CodeDebug-v0", backend, limits=LIMITS, max_turns=4, max_episode_steps=4)

    by_backend: dict[str, list[tuple[str, Any]]] = {"local": [], "docker": []}
    for backend, kind, task in episodes:
        by_backend[backend].append((kind, task))
    envs = {backend: [make(backend) for _ in pairs] for backend, pairs in by_backend.items()}
    try:
        # Each honest episode alone first, one after another: what its grade must be under load.
        alone: dict[str, dict[str, Any]] = {}
        started = time.monotonic()
        for backend, pairs in by_backend.items():
            for kind, task in pairs:
                if kind in HONEST:
                    alone[task.task_id] = grade_of(play(backend, [(kind, task)], envs[backend][:1])[0])
        alone_seconds = time.monotonic() - started
        before = footprint()
        started = time.monotonic()
        with memory_watch() as memory, ThreadPoolExecutor(max_workers=2) as both:
            runs = {
                backend: both.submit(play, backend, pairs, envs[backend])
                for backend, pairs in by_backend.items()
            }
            played = {backend: run.result() for backend, run in runs.items()}
        seconds = time.monotonic() - started
    finally:
        for env in [*envs["local"], *envs["docker"]]:
            env.close()
    after = footprint()

    wrong: list[Any] = []
    outcomes: dict[str, int] = {}
    for backend, pairs in by_backend.items():
        for (kind, task), trajectory in zip(pairs, played[backend]):
            assert trajectory.task_id == task.task_id
            outcomes[kind] = outcomes.get(kind, 0) + 1
            if kind in HONEST:
                if grade_of(trajectory) != alone[task.task_id] or trajectory.error is not None:
                    wrong.append((backend, kind, task.task_id, trajectory.error, grade_of(trajectory)))
                elif (kind == "fix") != (trajectory.reward == 1.0):
                    wrong.append((backend, kind, task.task_id, "reward", trajectory.reward))
            # A hostile episode is the agent's failure, scored 0, never an error a trainer would drop.
            elif trajectory.error is not None or trajectory.reward != 0.0 or trajectory.grade is None:
                wrong.append((backend, kind, task.task_id, trajectory.error, trajectory.reward))
            elif kind == "oom_executor" and trajectory.end_reason != "out_of_memory":
                wrong.append((backend, kind, task.task_id, trajectory.end_reason, grade_of(trajectory)))
    leaks = {name: after[name] - before[name] for name in before if after[name] > before[name]}
    hostile = sum(count for (_, kind), count in MIX.items() if kind in HOSTILE)
    report = {
        "episodes": len(episodes),
        "at_once": {backend: len(pairs) for backend, pairs in by_backend.items()},
        "hostile": hostile,
        "hostile_share": round(hostile / len(episodes), 3),
        "outcomes": outcomes,
        "seconds": round(seconds, 1),
        "honest_alone_seconds": round(alone_seconds, 1),
        "peak_rss_mib": round(memory["peak_rss"] / MiB),
        "start_rss_mib": round(memory["start_rss"] / MiB),
        "host_min_available_mib": round(memory["min_available"] / MiB),
        "before": before,
        "after": after,
        "leaks": leaks,
        "wrong": wrong,
    }
    if os.environ.get("GYM_SWE_LOAD_REPORT"):
        Path(os.environ["GYM_SWE_LOAD_REPORT"]).write_text(json.dumps(report, indent=2, default=str))
    assert not wrong, report
    for name in ("containers", "processes", "temp_dirs", "cgroups"):
        assert after[name] <= before[name], report
    assert after["open_files"] <= before["open_files"] + 2, report  # the docker client may pool a socket
    # Bounded: every read from a sandbox is, so 48 episodes' worth of flooding adds no more than this (over
    # what the process held before: a test worker may hold earlier tests' models).
    assert memory["peak_rss"] - memory["start_rss"] < 1536 * MiB, report
