"""What serving an env adds, measured against the same env in this process in one run, and how many sessions
one machine holds.

    python bench/serve.py --serve-python .venv-serve/bin/python [--rounds 10] [--per-round 30] [--sessions 64]

- step overhead: the same steps on CodeDebug-v0 in this process (``gymnasium.make``) and served by
  ``gym-swe serve`` on loopback (`gym_swe.serve.client.ServedEnv`, one WebSocket session), rounds alternating:
  a no-op step (text without a tool call: the env only answers; target: serving adds <= 1 ms) and a typical
  step (bash ``python test_solution.py``, the task's visible tests; target: < 1.1x);
- sessions: ``--sessions`` clients at once on one server (``--max-sessions`` as many), each in its own
  thread opening a session, resetting (a bubblewrap jail of its own) and playing ``--steps`` bash steps;
  target: 64 on this machine with no error and bounded memory. Memory is the resident size of the server's
  process tree (the server, its executors and jails), before the sessions, at their peak and after they close.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import gymnasium
from timing import median_ms, timed  # bench/timing.py

import gym_swe  # noqa: F401
from gym_swe.serve.client import ServedEnv

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.serve.server import EnvServer

TASK = "GymSwe/1"
NO_OP = "nothing to run yet"
TYPICAL = (
    "<tool_call>"
    + json.dumps({"name": "bash", "arguments": {"command": "python test_solution.py"}})
    + "</tool_call>"
)
LONG_EPISODE = {"max_turns": 10**6, "max_context_chars": 10**9}


def tree_rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and every process under it, in MiB (from /proc)."""
    page = os.sysconf("SC_PAGE_SIZE")
    total, pending = 0, [pid]
    while pending:
        current = pending.pop()
        try:
            total += int(Path(f"/proc/{current}/statm").read_text().split()[1]) * page
            for task in Path(f"/proc/{current}/task").iterdir():
                pending += [int(child) for child in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    return total / 2**20


def step_overhead(server: EnvServer, rounds: int, per_round: int) -> list[tuple[str, float, float]]:
    local = gymnasium.make("CodeDebug-v0", max_episode_steps=-1, **LONG_EPISODE)
    served = ServedEnv(server.url)
    results: dict[str, dict[str, list[float]]] = {
        "no-op": {"local": [], "served": []},
        "typical": {"local": [], "served": []},
    }
    for env in (local, served):
        env.reset(options={"task_id": TASK})
        timed(lambda env=env: env.step(NO_OP), 10)  # warm up
        timed(lambda env=env: env.step(TYPICAL), 5)
    for _ in range(rounds):
        for name, action in (("no-op", NO_OP), ("typical", TYPICAL)):
            for side, env in (("local", local), ("served", served)):
                results[name][side] += timed(lambda env=env, action=action: env.step(action), per_round)
    local.close()
    served.close()
    return [(name, median_ms(sides["local"]), median_ms(sides["served"])) for name, sides in results.items()]


def sessions_at_once(server: EnvServer, sessions: int, steps: int) -> dict[str, object]:
    before = tree_rss_mb(server.process.pid)
    errors: list[str] = []
    latencies: list[float] = []
    peak = [before]
    lock = threading.Lock()
    ready = threading.Barrier(sessions + 1)
    done = threading.Barrier(sessions + 1)

    def client() -> None:
        env = None
        try:
            env = ServedEnv(server.url)
            env.reset(options={"task_id": TASK})
        except Exception as error:
            with lock:
                errors.append(f"open/reset: {type(error).__name__}: {error}")
        ready.wait(timeout=900)  # every session open and reset (its jail made) before any steps
        try:
            for _ in range(steps if env is not None else 0):
                started = time.perf_counter()
                observation, *_ = env.step(TYPICAL)  # type: ignore[union-attr]
                with lock:
                    latencies.append(time.perf_counter() - started)
                if "passed" not in observation and "Error" not in observation:
                    raise AssertionError(f"unexpected observation: {observation[:200]}")
        except Exception as error:
            with lock:
                errors.append(f"step: {type(error).__name__}: {error}")
        done.wait(timeout=900)  # all held until every one has stepped: they are all open at once
        if env is not None:
            env.close()

    threads = [threading.Thread(target=client) for _ in range(sessions)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    ready.wait(timeout=900)
    held = tree_rss_mb(server.process.pid)
    peak[0] = max(peak[0], held)
    while done.n_waiting < sessions:
        peak[0] = max(peak[0], tree_rss_mb(server.process.pid))
        time.sleep(0.05)
    done.wait(timeout=900)
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    time.sleep(2)  # the server closes the sessions' envs as their sockets close
    after = tree_rss_mb(server.process.pid)
    ordered = sorted(latencies)
    return {
        "sessions": sessions, "steps": len(latencies), "errors": errors, "seconds": elapsed,
        "step_p50_ms": statistics.median(ordered) * 1000 if ordered else float("nan"),
        "step_p95_ms": ordered[int(0.95 * (len(ordered) - 1))] * 1000 if ordered else float("nan"),
        "rss_before_mb": before, "rss_held_mb": held, "rss_peak_mb": peak[0], "rss_after_mb": after,
        "workspaces_left": len(server.leftovers()),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve-python", required=True, help="the serve environment's python (.venv-serve)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--per-round", type=int, default=30)
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()

    kwargs = [f"{key}={value}" for key, value in LONG_EPISODE.items()]
    flags = ["--max-sessions", str(args.sessions)]
    with EnvServer("CodeDebug-v0", kwargs, flags, python=args.serve_python) as server:
        rows = step_overhead(server, args.rounds, args.per_round)
        held = sessions_at_once(server, args.sessions, args.steps)
    print(f"{'step':<10} {'in-process ms':>14} {'served ms':>10} {'added ms':>9} {'ratio':>6}  target")
    targets = {"no-op": "<= +1 ms", "typical": "< 1.1x"}
    for name, local, served in rows:
        ratio = served / local
        print(
            f"{name:<10} {local:14.3f} {served:10.3f} {served - local:+9.3f} {ratio:6.2f}x  {targets[name]}"
        )
    print(
        f"sessions at once: {held['sessions']}, {held['steps']} steps in {held['seconds']:.1f} s, "
        f"{len(held['errors'])} errors; step p50 {held['step_p50_ms']:.1f} ms, "
        f"p95 {held['step_p95_ms']:.1f} ms"
    )
    print(
        f"server tree RSS: {held['rss_before_mb']:.0f} MiB before, {held['rss_held_mb']:.0f} MiB with all "
        f"sessions open, {held['rss_peak_mb']:.0f} MiB peak, {held['rss_after_mb']:.0f} MiB after; "
        f"workspaces left: {held['workspaces_left']}"
    )
    for error in held["errors"][:5]:  # type: ignore[index]
        print("  error:", error)


if __name__ == "__main__":
    main()
