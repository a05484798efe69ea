"""Codex CLI (the real ``@openai/codex``, its own native build launched by its npm entry point on the Node gym_swe
installs) inside the episode's sandbox, on the Responses API: a scripted model writing Codex's own tool calls
(``exec_command``, with ``apply_patch`` through it, which Codex applies itself) drives it through the proxy to
fix a CodeDebug task and a bundled SWE task, in a bubblewrap jail and in a docker container; gym_swe grades.

Codex always streams (the Responses API's events): there is no setting for whole answers. Its compaction is
a history it rewrites: a new segment."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import pytest

from gym_swe.integrations.harnesses.base import Harness
from gym_swe.integrations.harnesses.codex import CodexHarness
from gym_swe.tasks.swe import load_swe_tasks
from tests.conftest import require_bwrap, require_docker
from tests.integrations.harnesses.scripted import (
    MAX_TOKENS,
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
# GymSwe/0's fix (the last run is never appended), in Codex's own patch format.
FIX = """apply_patch <<'PATCH'
*** Begin Patch
*** Update File: solution.py
@@
             count = 1
+    out.append(prev + str(count))
     return ''.join(out)
*** End Patch
PATCH"""
COMPACTION_PROMPT = "CONTEXT CHECKPOINT COMPACTION"  # how Codex asks for its handoff summary


@pytest.fixture(scope="module")
def codex(installed: Callable[[str], Harness]) -> Harness:
    return installed("codex")


def shell(command: str, step: int, **arguments: object) -> str:
    return tool_turn("exec_command", {"cmd": command, **arguments}, step)


def codedebug_fix() -> list[str]:
    """Run the example tests (they fail), patch the function, run them again, stop."""
    return [
        shell(f'python test_solution.py; {PROBE}; echo "key: ${{GYM_SWE_API_KEY:-unset}}"', 0),
        shell(FIX, 1),
        shell("python test_solution.py", 2),
        final_turn(3),
    ]


def swe_fix() -> list[str]:
    return [
        shell("git status --short && ls", 0),
        shell(apply_patch_command(SWE_TASK.patch), 1),
        shell(f"git status --short; {PROBE}", 2),
        final_turn(3),
    ]


def test_codex_fixes_a_codedebug_task_in_a_jail(codex: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    trajectory, generator = play_episode("codex", "CodeDebug-v0", "GymSwe/0", codedebug_fix(), tokenizer)
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason, trajectory.terminated) == (1.0, "submitted", True)
    assert trajectory.resolved and len(trajectory.turns) == 4
    assert_token_exact(trajectory, generator)
    assert {"exec_command", "write_stdin"} <= {tool["function"]["name"] for tool in trajectory.tools}
    first = trajectory.turns[0].observation
    assert "AssertionError" in first and "Process exited with code" in first  # Codex's own tool result
    assert_sandboxed(first)
    assert "key: unset" in first  # the rollout's secret is kept out of the commands Codex runs
    assert "Success. Updated the following files:\nM solution.py" in trajectory.turns[1].observation
    assert "All tests passed." in trajectory.turns[2].observation


def test_codex_fixes_a_swe_task_in_a_jail(codex: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    trajectory, generator = play_episode("codex", "SWEGym-v0", SWE_TASK.instance_id, swe_fix(), tokenizer)
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason) == (1.0, "submitted")
    assert_token_exact(trajectory, generator)
    assert "semverkit" in trajectory.turns[0].observation  # it ran in /testbed
    assert " M semverkit/" in trajectory.turns[2].observation
    assert interfaces(trajectory.turns[2].observation) == ["lo"]  # (the task's prepared env is bound in)


def test_codex_that_fixes_nothing_scores_zero(codex: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    turns = [shell("ls /workspace", 0), final_turn(1)]
    trajectory, _ = play_episode("codex", "CodeDebug-v0", "GymSwe/0", turns, tokenizer)
    assert (trajectory.reward, trajectory.end_reason, trajectory.resolved) == (0.0, "submitted", False)
    assert trajectory.error is None and trajectory.grade is not None
    assert "solution.py" in trajectory.turns[0].observation


def test_codex_past_its_turn_budget_is_truncated_and_graded(codex: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """The proxy refuses the request past ``max_turns``: Codex exits on the error, the episode ends there."""
    require_bwrap()
    turns = [shell(f"echo {step}", step) for step in range(5)]
    trajectory, _ = play_episode(
        "codex", "CodeDebug-v0", "GymSwe/0", turns, tokenizer, max_turns=2, max_episode_steps=2
    )
    assert (trajectory.end_reason, trajectory.truncated, trajectory.reward) == ("max_turns", True, 0.0)
    assert len(trajectory.turns) == 2 and trajectory.grade is not None
    assert trajectory.error is None  # a budget is not a failure


def test_codex_that_hangs_is_ended_by_the_timeout(codex: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """A command that never returns (Codex waits on it as long as the model asked, 30 s): the run's timeout
    kills Codex and everything it started; graded as truncated."""
    require_bwrap()
    turns = [shell(HANG, step, yield_time_ms=30000) for step in range(3)]
    trajectory, generator = play_episode("codex", "CodeDebug-v0", "GymSwe/0", turns, tokenizer, timeout=10)
    assert len(generator.prompts) == 1  # it ran the model's command, and was waiting on it
    assert (trajectory.end_reason, trajectory.truncated, trajectory.reward) == ("harness_timeout", True, 0.0)
    assert trajectory.error is None and trajectory.grade is not None


def test_codex_stopping_on_a_reply_cut_at_max_tokens_is_the_agents_doing(codex: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """A reply cut at the sampling budget is an incomplete response, on which Codex ends its run with an
    error: the episode is graded and truncated (``max_tokens``), not a failed trajectory left out of the loss."""
    require_bwrap()
    turns = [shell("ls", 0), "word " * (MAX_TOKENS + 100)]
    generator = RecordingGenerator(tokenizer, turns, return_stop=False)  # a cut reply ends for "length"
    trajectory, _ = play_episode("codex", "CodeDebug-v0", "GymSwe/0", turns, tokenizer, generator=generator)
    assert [turn.finish_reason for turn in trajectory.turns] == ["stop", "length"]
    assert (trajectory.end_reason, trajectory.truncated, trajectory.reward) == ("max_tokens", True, 0.0)
    assert trajectory.error is None and trajectory.grade is not None


class HandoffWriter(RecordingGenerator):
    """The scripted model, which answers Codex's request for a handoff summary with one that names the steps
    done so far (so that the compacted history still tells it where it is)."""

    def next_turn(self, prompt: Sequence[int]) -> str:
        if COMPACTION_PROMPT in self.tokenizer.decode(list(prompt)[-400:]):
            done = sorted({int(n) for n in re.findall(r"step (\d+)", self.tokenizer.decode(list(prompt)))})
            return "Handoff: " + " ".join(f"(step {n})" for n in done) + " done; next, fix the last run."
        return super().next_turn(prompt)


def test_codex_compacting_its_history_starts_new_segments(tokenizer, installed) -> None:  # type: ignore[no-untyped-def]
    """Past its compaction limit Codex asks the model for a summary (without tools: a prompt of its own) and
    goes on from a history made of it: two rewritten histories, two new segments, each turn token-exact in
    its segment; the episode still fixes the task."""
    require_bwrap()
    installed("codex")
    harness = CodexHarness(auto_compact_token_limit=2500)
    turns = [
        shell("python3 -c \"print('lorem ipsum dolor sit amet ' * 300)\"", 0),
        shell(FIX, 1),
        final_turn(2),
    ]
    generator = HandoffWriter(tokenizer, turns)
    trajectory, _ = play_episode(
        harness,  # type: ignore[arg-type]
        "CodeDebug-v0",
        "GymSwe/0",
        turns,
        tokenizer,
        generator=generator,
    )
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason) == (1.0, "submitted")
    handoffs = [i for i, sampled in enumerate(generator.sampled) if "Handoff" in tokenizer.decode(sampled)]
    assert handoffs, "Codex never compacted"
    assert_segments_token_exact(trajectory, generator, forks=2 * len(handoffs))
    for index in handoffs:
        assert COMPACTION_PROMPT in tokenizer.decode(generator.prompts[index])
        # asked afresh (a prompt of Codex's own, without tools), then on from a history made of the summary
        assert segment_of(trajectory, index) == segment_of(trajectory, index - 1) + 1
        assert segment_of(trajectory, index + 1) == segment_of(trajectory, index) + 1


# -- docker ----------------------------------------------------------------------------------------------------
@pytest.mark.docker
def test_codex_fixes_a_codedebug_task_in_a_container(codex: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_docker()
    trajectory, generator = play_episode(
        "codex", "CodeDebug-v0", "GymSwe/0", codedebug_fix(), tokenizer, sandbox="docker"
    )
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason) == (1.0, "submitted")
    assert_token_exact(trajectory, generator)
    assert_sandboxed(trajectory.turns[0].observation)


@pytest.mark.docker
def test_codex_fixes_a_swe_task_in_a_container(codex: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_docker()
    trajectory, generator = play_episode(
        "codex", "SWEGym-v0", SWE_TASK.instance_id, swe_fix(), tokenizer, sandbox="docker"
    )
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason) == (1.0, "submitted")
    assert_token_exact(trajectory, generator)
    assert_sandboxed(trajectory.turns[2].observation)
