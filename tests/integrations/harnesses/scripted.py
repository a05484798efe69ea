"""A scripted model driving a real harness CLI through the proxy: shared by every harness's tests.

The model is `tests.rollout.test_proxy.RecordingGenerator`: a real tokenizer and chat template (Qwen2.5's
from ../shared, else the small BPE one trained here), replying with a fixed plan and keeping every prompt it
got and every id it sampled. A turn of the plan is what Qwen2.5 writes: a line of text, then a tool call in
its ``<tool_call>`` JSON format, naming a tool *of the harness under test* with that tool's own arguments
(Pi's ``write(path, content)``, OpenCode's ``write(filePath, content)``, ...). The proxy parses it into the
harness's dialect; the harness runs the tool in the sandbox; the next request carries the result.

The text line holds ``(step N)``: the scripted model answers the first turn of its plan whose mark the
conversation does not hold yet, so a harness that resends its history gets the next turn, and one that
rewrites it (a title request, a compaction) gets the turn again rather than a wrong one.

Use it for a new harness (see ``test_pi.py``)::

    turns = [tool_turn("bash", {"command": "python test_solution.py"}, 0), ..., final_turn(3)]
    trajectory, generator = play_episode("my-harness", "CodeDebug-v0", "GymSwe/0", turns, tokenizer)
    assert_token_exact(trajectory, generator)
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import tempfile
from typing import Any

import gymnasium

import gym_swe  # noqa: F401  (registers the envs)
from gym_swe.integrations.harnesses.base import Harness
from gym_swe.integrations.harnesses.runner import run_episode
from gym_swe.rollout.generators.base import SamplingParams
from gym_swe.rollout.proxy import ProxyServer
from gym_swe.rollout.proxy.recorder import sampled_ids
from gym_swe.rollout.trajectory import Trajectory
from tests.rollout.test_proxy import RecordingGenerator

MAX_MODEL_LEN = 32768
MAX_TOKENS = 4096
# A command that shows where it ran and what it reaches: the sandbox's network interfaces (only lo), its
# hostname ("sandbox"), the host's gym_swe cache (absent: only the installed harnesses are bound in) and the
# harnesses' folder (read-only).
PROBE = "cat /proc/net/dev; hostname; ls /root/.cache/gym_swe; touch /opt/gym-swe/harnesses/probe"


def assert_sandboxed(output: str, bound: bool = True) -> None:
    """``output`` (of `PROBE`) was printed in a sandbox with no network that sees no more of the host than
    it should; ``bound``: the harnesses were bound in (read-only), not part of the sandbox's image (where
    they are the container's own files, gone with it)."""
    assert interfaces(output) == ["lo"], output
    assert "\nsandbox\n" in output, output
    assert "/root/.cache/gym_swe" in output and "No such file or directory" in output, output
    assert ("Read-only file system" in output) == bound, output


def tool_turn(name: str, arguments: dict[str, Any], step: int, note: str = "I will use a tool") -> str:
    """A turn as Qwen2.5 writes it: a line of text (with the step mark), then one call of tool ``name``."""
    call = json.dumps({"name": name, "arguments": arguments})
    return f"{note} (step {step}).\n<tool_call>\n{call}\n</tool_call>"


def final_turn(step: int) -> str:
    """The model's last turn: no tool call, so the harness ends on its own (a submission)."""
    return f"The fix is in place and the tests pass (step {step})."


def apply_patch_command(patch: str) -> str:
    """A shell command that applies ``patch`` in the workspace (base64: no quoting to get wrong)."""
    encoded = base64.b64encode(patch.encode()).decode()
    return f"echo {encoded} | base64 -d | git apply"


def play_episode(
    harness: Harness | str,
    env_id: str,
    task_id: str,
    turns: list[str],
    tokenizer: Any,
    sandbox: str = "local",
    files: str = "bind",
    timeout: float = 600,
    generator: RecordingGenerator | None = None,
    **make: Any,
) -> tuple[Trajectory, RecordingGenerator]:
    """One episode of ``task_id`` played by ``harness`` inside a ``sandbox`` sandbox, the model scripted with
    ``turns``: its trajectory (graded by the env) and the generator (what it was asked and sampled)."""
    generator = generator or RecordingGenerator(tokenizer, turns)
    socket_dir = tempfile.mkdtemp(prefix="gs-harness-")  # short: a unix socket's path has 107 bytes at most
    env = gymnasium.make(env_id, sandbox=sandbox, **make)
    try:
        with ProxyServer(generator, SamplingParams(max_tokens=MAX_TOKENS), max_model_len=MAX_MODEL_LEN,
                         unix_socket=f"{socket_dir}/proxy.sock") as proxy:  # fmt: skip
            trajectory = run_episode(env, proxy, harness, task_id, files=files, timeout=timeout)
    finally:
        env.close()
        shutil.rmtree(socket_dir, ignore_errors=True)
    return trajectory, generator


def assert_token_exact(trajectory: Trajectory, generator: RecordingGenerator, forks: int = 0) -> None:
    """The trajectory holds exactly what the generator sampled, and each turn's prompt was the trajectory up
    to that turn (so the harness's history was bridged, not re-tokenized); ``forks`` segments were started
    where the harness rewrote its history (0 for a harness that only appends)."""
    assert sampled_ids(trajectory) == generator.sampled
    assert trajectory.forks == forks, f"forks: {trajectory.forks}, expected {forks}"
    if forks == 0:
        assert [trajectory.token_ids[: turn.start] for turn in trajectory.turns] == generator.prompts
        assert trajectory.rerender_matches


def interfaces(proc_net_dev: str) -> list[str]:
    """The interface names in ``/proc/net/dev``'s text (its lines ``name: counters...``)."""
    return re.findall(r"^\s*([\w.-]+):\s+\d", proc_net_dev, re.MULTILINE)
