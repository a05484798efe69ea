"""One scripted episode per agent harness, against the same episode played by gym_swe's own ToolEnv loop.

    python bench/harness_episode.py [--harnesses pi,opencode,codex,claude-code,gemini-cli] [--repeats 3]
                                    [--latency 0,1] [--sandbox local]

The episode: CodeDebug-v0's task GymSwe/0 fixed in four model turns by a scripted model (the real Qwen2.5
tokenizer and chat template from ../shared where present, else the small one trained here): run the example
tests (they fail), fix the function with the player's own edit tool, run the tests again (they pass), stop.
Each player writes that plan in its own tool schema:

- **toolenv**: gym_swe's built-in loop (`gym_swe.rollout.collector.collect`): ``bash``,
  ``str_replace_editor``, then ``submit``; no HTTP, the env steps the model's text.
- **each harness**: the real CLI inside the episode's sandbox (`gym_swe.integrations.harnesses.run_episode`),
  through the proxy's unix socket: its own shell tool, its own edit tool (Codex: ``apply_patch`` through its
  shell), and a final answer without a tool call.

Both arms reset the env (a fresh sandbox), play, and grade in a fresh sandbox; the env is made once per
player, outside the timing. ``--latency`` seconds are added to every generator call (what a server takes to
decode a turn), to show the harness's cost against a turn's real price: 0 measures the harness alone.
Printed per player and latency: the median wall time of ``--repeats`` episodes and its ratio to the toolenv
arm's in the same run, and each episode's reward (1.0 for every player, or the numbers mean nothing).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium

import gym_swe  # noqa: F401
from gym_swe.rollout.collector import collect
from gym_swe.rollout.generators.base import SamplingParams
from gym_swe.rollout.proxy import ProxyServer
from gym_swe.tasks.functions import load_function_tasks

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.rollout.scripted import ScriptedGenerator  # noqa: E402  (the tests' scripted model)
from tests.rollout.test_proxy import tokenizer_for  # noqa: E402

TASK = "GymSwe/0"
MAX_MODEL_LEN, MAX_TOKENS = 32768, 4096
BUGGY = "            count = 1\n    return ''.join(out)"
FIXED = "            count = 1\n    out.append(prev + str(count))\n    return ''.join(out)"
CODEX_PATCH = """apply_patch <<'PATCH'
*** Begin Patch
*** Update File: solution.py
@@
             count = 1
+    out.append(prev + str(count))
     return ''.join(out)
*** End Patch
PATCH"""


def turn(name: str, arguments: dict[str, Any], step: int) -> str:
    """A turn as Qwen2.5 writes it; "step N" tells the scripted model where the conversation is."""
    call = json.dumps({"name": name, "arguments": arguments})
    return f"Next (step {step}).\n<tool_call>\n{call}\n</tool_call>"


def final(step: int) -> str:
    return f"The function is fixed and its tests pass (step {step})."


def plan(player: str) -> list[str]:
    """The four turns of the episode in ``player``'s own tools."""
    test, solution = "python test_solution.py", "/workspace/solution.py"
    if player == "toolenv":
        edit = {"command": "str_replace", "path": solution, "old_str": BUGGY, "new_str": FIXED}
        return [turn("bash", {"command": test}, 0), turn("str_replace_editor", edit, 1),
                turn("bash", {"command": test}, 2), turn("submit", {}, 3)]  # fmt: skip
    shells: dict[str, Callable[[str, int], str]] = {
        "pi": lambda command, step: turn("bash", {"command": command}, step),
        "opencode": lambda command, step: turn("bash", {"command": command, "description": "run"}, step),
        "codex": lambda command, step: turn("exec_command", {"cmd": command}, step),
        "claude-code": lambda command, step: turn("Bash", {"command": command}, step),
        "gemini-cli": lambda command, step: turn("run_shell_command", {"command": command}, step),
    }
    fixed = load_function_tasks("bundled").get(TASK).fixed_code
    edits = {
        "pi": turn("write", {"path": solution, "content": fixed}, 1),
        "opencode": turn("write", {"filePath": solution, "content": fixed}, 1),
        "codex": turn("exec_command", {"cmd": CODEX_PATCH}, 1),
        "claude-code": turn(
            "Edit", {"file_path": solution, "old_string": BUGGY, "new_string": FIXED, "replace_all": False}, 1
        ),
        "gemini-cli": turn(
            "replace",
            {
                "file_path": solution,
                "instruction": "Append the last run.",
                "old_string": BUGGY,
                "new_string": FIXED,
            },
            1,
        ),
    }
    if player not in shells:
        raise SystemExit(f"harness_episode.py: no plan for {player!r} (known: {', '.join(shells)})")
    shell = shells[player]
    if player == "claude-code":  # Claude Code's Edit needs the file read in the conversation first
        return [turn("Read", {"file_path": solution}, 0), edits[player], shell(test, 2), final(3)]
    return [shell(test, 0), edits[player], shell(test, 2), final(3)]


class SlowScript(ScriptedGenerator):
    """The scripted model, taking ``latency`` seconds a call (a server decoding a turn)."""

    def __init__(self, tokenizer: Any, turns: Sequence[str], latency: float) -> None:
        super().__init__(tokenizer, turns)
        self.latency = latency

    def generate(self, prompts, params):  # type: ignore[no-untyped-def]
        time.sleep(self.latency)
        return super().generate(prompts, params)


def episode(player: str, tokenizer: Any, latency: float, env: Any) -> tuple[float, float]:
    """One episode of ``player``: (wall seconds, reward)."""
    generator = SlowScript(tokenizer, plan(player), latency)
    sampling = SamplingParams(max_tokens=MAX_TOKENS)
    if player == "toolenv":
        started = time.perf_counter()
        (trajectory,) = collect([env], generator, [TASK], sampling=sampling, max_model_len=MAX_MODEL_LEN)
        return time.perf_counter() - started, trajectory.reward
    from gym_swe.integrations.harnesses import run_episode

    socket_dir = tempfile.mkdtemp(prefix="gs-bench-")
    try:
        with ProxyServer(generator, sampling, max_model_len=MAX_MODEL_LEN,
                         unix_socket=f"{socket_dir}/proxy.sock") as proxy:  # fmt: skip
            started = time.perf_counter()
            trajectory = run_episode(env, proxy, player, TASK)
            seconds = time.perf_counter() - started
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)
    if trajectory.error:
        raise SystemExit(f"harness_episode.py: {player} failed: {trajectory.error[-500:]}")
    return seconds, trajectory.reward


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--harnesses", default="pi,opencode,codex,claude-code,gemini-cli")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latency", default="0,1", help="seconds per generator call, comma-separated")
    parser.add_argument("--sandbox", default="local", choices=["local", "docker"])
    args = parser.parse_args()
    from gym_swe.integrations.harnesses import harness_named, install_harness

    harnesses = [name for name in args.harnesses.split(",") if name]
    for name in harnesses:
        install_harness(harness_named(name), log=lambda line: None)
    tokenizer = tokenizer_for("qwen2.5-instruct" if (ROOT.parent / "shared").is_dir() else "tiny-bpe")
    latencies = [float(value) for value in args.latency.split(",")]
    print(f"CodeDebug-v0 {TASK}, 4 turns, sandbox {args.sandbox}, median of {args.repeats}")
    print(f"{'player':<12} {'latency':>7} {'seconds':>8} {'x toolenv':>9}  rewards")
    for latency in latencies:
        baseline = 0.0
        for player in ["toolenv", *harnesses]:
            env = gymnasium.make("CodeDebug-v0", sandbox=args.sandbox)
            try:
                episode(player, tokenizer, latency, env)  # warm: the first run of a CLI reads it from disk
                runs = [episode(player, tokenizer, latency, env) for _ in range(args.repeats)]
            finally:
                env.close()
            seconds = statistics.median(run[0] for run in runs)
            baseline = baseline or seconds
            rewards = ",".join(f"{run[1]:g}" for run in runs)
            print(f"{player:<12} {latency:>7g} {seconds:>8.2f} {seconds / baseline:>8.2f}x  {rewards}")


if __name__ == "__main__":
    main()
