"""Claude Code (the real ``@anthropic-ai/claude-code``, its native build) inside the episode's sandbox, on
Anthropic Messages: a scripted model writing Claude Code's own tool calls (Bash, Read, Edit) drives it through
the proxy to fix a CodeDebug task and a bundled SWE task, in a bubblewrap jail (as uid 1000) and in a docker
container (as root: its bypass mode refuses root, the "dontAsk" mode it runs in does not); gym_swe grades.

Claude Code always streams (whole answers only as a fallback when a stream fails): there is no setting for
them. It compacts its history near the proxy's window (the harness sizes its compaction to it): new segments."""

from __future__ import annotations

import base64
import json
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence

import gymnasium
import pytest

from gym_swe.integrations.harnesses.base import Harness
from gym_swe.integrations.harnesses.runner import run_episode
from gym_swe.rollout.generators.base import SamplingParams
from gym_swe.rollout.proxy import ProxyServer
from gym_swe.tasks.functions import load_function_tasks
from gym_swe.tasks.swe import load_swe_tasks
from tests.conftest import require_bwrap, require_docker
from tests.integrations.harnesses.scripted import (
    PROBE,
    apply_patch_command,
    assert_sandboxed,
    assert_token_exact,
    final_turn,
    interfaces,
    play_episode,
    tool_turn,
)
from tests.integrations.harnesses.segments import assert_segments_token_exact, segment_of
from tests.rollout.test_proxy import RecordingGenerator

HANG = "python3 -c 'import time; time.sleep(600)'"  # a command that never returns
SWE_TASK = load_swe_tasks("bundled").get("gymswe__semverkit-1")
FIXED_CODE = load_function_tasks("bundled").get("GymSwe/0").fixed_code
SUMMARY_REQUEST = "followed by a <summary> block"  # how Claude Code asks for its compaction summary
WINDOW = 16384  # the proxy's max_model_len in the compaction test
SOLUTION = "/workspace/solution.py"
# GymSwe/0's fix (the last run is never appended), as an exact string replacement.
BUGGY = "            count = 1\n    return ''.join(out)"
FIXED = "            count = 1\n    out.append(prev + str(count))\n    return ''.join(out)"


@pytest.fixture(scope="module")
def claude_code(installed: Callable[[str], Harness]) -> Harness:
    return installed("claude-code")


def write_command(path: str, text: str) -> str:
    """A shell command that writes ``text`` to ``path`` (base64: no quoting to get wrong)."""
    return f"echo {base64.b64encode(text.encode()).decode()} | base64 -d > {path}"


def bash(command: str, step: int, **arguments: object) -> str:
    return tool_turn("Bash", {"command": command, **arguments}, step)


def codedebug_fix(edit: dict[str, object] | None = None) -> list[str]:
    """Run the example tests (they fail), read the file (Edit needs it read first), edit it, test, stop.
    The Edit call is as a model writes it: without ``replace_all``, unless ``edit`` says otherwise."""
    return [
        bash(f"python test_solution.py; {PROBE}", 0),
        tool_turn("Read", {"file_path": SOLUTION}, 1),
        tool_turn(
            "Edit", {"file_path": SOLUTION, "old_string": BUGGY, "new_string": FIXED, **(edit or {})}, 2
        ),
        bash("python test_solution.py", 3),
        final_turn(4),
    ]


def swe_fix() -> list[str]:
    return [
        tool_turn("Read", {"file_path": "/testbed/README.md"}, 0),
        bash(apply_patch_command(SWE_TASK.patch), 1),
        bash(f"git status --short; {PROBE}", 2),
        final_turn(3),
    ]


def test_claude_code_fixes_a_codedebug_task_in_a_jail(claude_code: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """Token-exact, with one fork, and why: Claude Code sends its Edit call back with the default it filled
    in (``"replace_all": false``), a history the model did not write; the request after it is rendered
    afresh as a new segment, and every turn is exact in its segment."""
    require_bwrap()
    trajectory, generator = play_episode(
        "claude-code", "CodeDebug-v0", "GymSwe/0", codedebug_fix(), tokenizer
    )
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason, trajectory.terminated) == (1.0, "submitted", True)
    assert trajectory.resolved and len(trajectory.turns) == 5
    assert_segments_token_exact(trajectory, generator, forks=1)
    assert [segment_of(trajectory, turn) for turn in range(5)] == [0, 0, 0, 1, 1]  # after the Edit
    edit = next(m for m in trajectory.messages if m.get("tool_calls") and "Edit" in str(m["tool_calls"]))
    assert json.loads(edit["tool_calls"][0]["function"]["arguments"])["replace_all"] is False
    assert {"Bash", "Read", "Edit", "Write", "Glob", "Grep"} == {
        t["function"]["name"] for t in trajectory.tools
    }
    first = trajectory.turns[0].observation
    assert "AssertionError" in first
    assert_sandboxed(first)
    # the Edit's result opens the new segment (rendered with the history), not a bridge after it
    assert trajectory.turns[2].bridge_length == 0
    assert "has been updated successfully" in tokenizer.decode(generator.prompts[3])
    assert "All tests passed." in trajectory.turns[3].observation


def test_claude_code_edit_written_with_its_defaults_is_not_a_fork(claude_code: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """The same plan with the Edit call as Claude Code sends it back: nothing rewritten, no fork."""
    require_bwrap()
    turns = codedebug_fix({"replace_all": False})
    trajectory, generator = play_episode("claude-code", "CodeDebug-v0", "GymSwe/0", turns, tokenizer)
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason) == (1.0, "submitted")
    assert_token_exact(trajectory, generator)


def test_claude_code_fixes_a_swe_task_in_a_jail(claude_code: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    trajectory, generator = play_episode(
        "claude-code", "SWEGym-v0", SWE_TASK.instance_id, swe_fix(), tokenizer
    )
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason) == (1.0, "submitted")
    assert_token_exact(trajectory, generator)
    assert "semverkit" in trajectory.turns[0].observation  # its Read tool read /testbed/README.md
    assert " M semverkit/" in trajectory.turns[2].observation
    assert interfaces(trajectory.turns[2].observation) == ["lo"]


def test_claude_code_that_fixes_nothing_scores_zero(claude_code: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    turns = [bash("ls /workspace", 0), final_turn(1)]
    trajectory, _ = play_episode("claude-code", "CodeDebug-v0", "GymSwe/0", turns, tokenizer)
    assert (trajectory.reward, trajectory.end_reason, trajectory.resolved) == (0.0, "submitted", False)
    assert trajectory.error is None and trajectory.grade is not None
    assert "solution.py" in trajectory.turns[0].observation


def test_claude_code_past_its_turn_budget_is_truncated_and_graded(claude_code: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    turns = [bash(f"echo {step}", step) for step in range(5)]
    trajectory, _ = play_episode(
        "claude-code", "CodeDebug-v0", "GymSwe/0", turns, tokenizer, max_turns=2, max_episode_steps=2
    )
    assert (trajectory.end_reason, trajectory.truncated, trajectory.reward) == ("max_turns", True, 0.0)
    assert len(trajectory.turns) == 2 and trajectory.grade is not None
    assert trajectory.error is None


def test_claude_code_that_hangs_is_ended_by_the_timeout(claude_code: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """A command that never returns (Claude Code's Bash waits up to the ten minutes the model asked; it refuses
    a bare `sleep` that long, not a program that sleeps): the run's timeout ends it; graded as truncated."""
    require_bwrap()
    turns = [bash(HANG, step, timeout=600000) for step in range(3)]
    trajectory, generator = play_episode(
        "claude-code", "CodeDebug-v0", "GymSwe/0", turns, tokenizer, timeout=10
    )
    assert len(generator.prompts) == 1
    assert (trajectory.end_reason, trajectory.truncated, trajectory.reward) == ("harness_timeout", True, 0.0)
    assert trajectory.error is None and trajectory.grade is not None


class SummaryWriter(RecordingGenerator):
    """The scripted model, which answers Claude Code's request for a summary of the conversation (its
    compaction) with one that names the steps done so far, in the tags that request asks for."""

    def next_turn(self, prompt: Sequence[int]) -> str:
        if SUMMARY_REQUEST in self.tokenizer.decode(list(prompt)[-400:]):
            done = sorted({int(n) for n in re.findall(r"step (\d+)", self.tokenizer.decode(list(prompt)))})
            steps = " ".join(f"(step {n})" for n in done)
            return (
                f"<analysis>Long outputs so far.</analysis>\n<summary>{steps} done; next, the fix.</summary>"
            )
        return super().next_turn(prompt)


def test_claude_code_compacting_its_history_starts_new_segments(claude_code: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """Near the proxy's window (the harness sizes Claude Code's compaction to it) Claude Code asks the model for
    a summary of the conversation, then goes on from a history made of it: two rewritten histories per
    compaction, each a new segment, every turn token-exact in its own; the episode still fixes the task."""
    require_bwrap()
    # each output a twelfth of the window, whatever the tokenizer: the window fills in a few turns, and the
    # summary request (the history and Claude Code's instructions) still fits the proxy's window
    phrase = "lorem ipsum dolor sit amet "
    repeats = WINDOW // 12 // len(tokenizer.encode(phrase, add_special_tokens=False))
    turns = [bash(f"python3 -c \"print('{phrase}' * {repeats})\"", step) for step in range(8)]
    turns += [bash(write_command(SOLUTION, FIXED_CODE), 8), final_turn(9)]
    generator = SummaryWriter(tokenizer, turns)
    socket_dir = tempfile.mkdtemp(prefix="gs-harness-")
    env = gymnasium.make("CodeDebug-v0")
    try:
        with ProxyServer(generator, SamplingParams(max_tokens=1024), max_model_len=WINDOW,
                         unix_socket=f"{socket_dir}/proxy.sock") as proxy:  # fmt: skip
            trajectory = run_episode(env, proxy, "claude-code", "GymSwe/0", timeout=600)
    finally:
        env.close()
        shutil.rmtree(socket_dir, ignore_errors=True)
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason) == (1.0, "submitted")
    summaries = [i for i, ids in enumerate(generator.sampled) if "<summary>" in tokenizer.decode(ids)]
    assert summaries, "Claude Code never compacted"
    assert_segments_token_exact(trajectory, generator, forks=2 * len(summaries))
    for index in summaries:
        assert SUMMARY_REQUEST in tokenizer.decode(generator.prompts[index])
        assert segment_of(trajectory, index) == segment_of(trajectory, index - 1) + 1
        assert segment_of(trajectory, index + 1) == segment_of(trajectory, index) + 1


# -- docker ----------------------------------------------------------------------------------------------------
@pytest.mark.docker
def test_claude_code_fixes_a_codedebug_task_in_a_container(claude_code: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_docker()
    trajectory, generator = play_episode(
        "claude-code", "CodeDebug-v0", "GymSwe/0", codedebug_fix(), tokenizer, sandbox="docker"
    )
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason) == (1.0, "submitted")
    assert_segments_token_exact(trajectory, generator, forks=1)
    assert_sandboxed(trajectory.turns[0].observation)


@pytest.mark.docker
def test_claude_code_fixes_a_swe_task_in_a_container(claude_code: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_docker()
    trajectory, generator = play_episode(
        "claude-code", "SWEGym-v0", SWE_TASK.instance_id, swe_fix(), tokenizer, sandbox="docker"
    )
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason) == (1.0, "submitted")
    assert_token_exact(trajectory, generator)
    assert_sandboxed(trajectory.turns[2].observation)
