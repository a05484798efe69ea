"""Gemini CLI (the real ``@google/gemini-cli``, on the Node gym_swe installs) inside the episode's sandbox, on
Google generateContent: a scripted model writing Gemini CLI's own tool calls (run_shell_command, read_file,
replace) drives it through the proxy to fix a CodeDebug task and a bundled SWE task, in a bubblewrap jail and
in a docker container; gym_swe grades.

Gemini CLI always streams (``:streamGenerateContent``): there is no setting for whole answers. Calls and
responses carry the ids the proxy gave them, so the history it resends is the one the model wrote: no
forks. It compresses its history only at half of the context window it assumes for a model it does not
know (a million tokens), beyond these tests' contexts."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gym_swe.integrations.harnesses.base import Harness
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

HANG = "python3 -c 'import time; time.sleep(600)'"  # a command that never returns
SWE_TASK = load_swe_tasks("bundled").get("gymswe__semverkit-1")
# GymSwe/0's fix (the last run is never appended), as an exact string replacement.
BUGGY = "            count = 1\n    return ''.join(out)"
FIXED = "            count = 1\n    out.append(prev + str(count))\n    return ''.join(out)"


@pytest.fixture(scope="module")
def gemini_cli(installed: Callable[[str], Harness]) -> Harness:
    return installed("gemini-cli")


def shell(command: str, step: int) -> str:
    return tool_turn("run_shell_command", {"command": command, "description": "run it"}, step)


def codedebug_fix() -> list[str]:
    """Run the example tests (they fail), read the file, replace the faulty lines, test again, stop."""
    replace = {
        "file_path": "solution.py",
        "instruction": "Append the last run before returning, so that it is encoded too.",
        "old_string": BUGGY,
        "new_string": FIXED,
    }
    return [
        shell(f'python test_solution.py; {PROBE}; echo "key: ${{GEMINI_API_KEY:-unset}}"', 0),
        tool_turn("read_file", {"file_path": "solution.py"}, 1),
        tool_turn("replace", replace, 2),
        shell("python test_solution.py", 3),
        final_turn(4),
    ]


def swe_fix() -> list[str]:
    return [
        tool_turn("read_file", {"file_path": "README.md"}, 0),
        shell(apply_patch_command(SWE_TASK.patch), 1),
        shell(f"git status --short; {PROBE}", 2),
        final_turn(3),
    ]


def test_gemini_cli_fixes_a_codedebug_task_in_a_jail(gemini_cli: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    trajectory, generator = play_episode("gemini-cli", "CodeDebug-v0", "GymSwe/0", codedebug_fix(), tokenizer)
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason, trajectory.terminated) == (1.0, "submitted", True)
    assert trajectory.resolved and len(trajectory.turns) == 5
    assert_token_exact(trajectory, generator)
    names = {tool["function"]["name"] for tool in trajectory.tools}
    assert names == {
        "run_shell_command",
        "read_file",
        "replace",
        "write_file",
        "list_directory",
        "glob",
        "grep_search",
    }
    first = trajectory.turns[0].observation
    assert "AssertionError" in first
    assert_sandboxed(first)
    assert "key: unset" in first  # the rollout's secret is redacted from the commands Gemini CLI runs
    assert "run_length_encode" in trajectory.turns[1].observation  # read_file read it from the jail
    assert "Successfully modified file: /workspace/solution.py" in trajectory.turns[2].observation
    assert "All tests passed." in trajectory.turns[3].observation


def test_gemini_cli_fixes_a_swe_task_in_a_jail(gemini_cli: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    trajectory, generator = play_episode(
        "gemini-cli", "SWEGym-v0", SWE_TASK.instance_id, swe_fix(), tokenizer
    )
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason) == (1.0, "submitted")
    assert_token_exact(trajectory, generator)
    assert "semverkit" in trajectory.turns[0].observation  # it read /testbed/README.md
    assert "M semverkit/" in trajectory.turns[2].observation
    assert interfaces(trajectory.turns[2].observation) == ["lo"]


def test_gemini_cli_that_fixes_nothing_scores_zero(gemini_cli: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    turns = [shell("ls /workspace", 0), final_turn(1)]
    trajectory, _ = play_episode("gemini-cli", "CodeDebug-v0", "GymSwe/0", turns, tokenizer)
    assert (trajectory.reward, trajectory.end_reason, trajectory.resolved) == (0.0, "submitted", False)
    assert trajectory.error is None and trajectory.grade is not None
    assert "solution.py" in trajectory.turns[0].observation


def test_gemini_cli_past_its_turn_budget_is_truncated_and_graded(gemini_cli: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    turns = [shell(f"echo {step}", step) for step in range(5)]
    trajectory, _ = play_episode(
        "gemini-cli", "CodeDebug-v0", "GymSwe/0", turns, tokenizer, max_turns=2, max_episode_steps=2
    )
    assert (trajectory.end_reason, trajectory.truncated, trajectory.reward) == ("max_turns", True, 0.0)
    assert len(trajectory.turns) == 2 and trajectory.grade is not None
    assert trajectory.error is None


def test_gemini_cli_that_hangs_is_ended_by_the_timeout(gemini_cli: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """A command that never returns (Gemini CLI waits five minutes for a silent one): the run's timeout
    ends it; graded as truncated."""
    require_bwrap()
    turns = [shell(HANG, step) for step in range(3)]
    trajectory, generator = play_episode(
        "gemini-cli", "CodeDebug-v0", "GymSwe/0", turns, tokenizer, timeout=20
    )
    assert len(generator.prompts) == 1
    assert (trajectory.end_reason, trajectory.truncated, trajectory.reward) == ("harness_timeout", True, 0.0)
    assert trajectory.error is None and trajectory.grade is not None


# -- docker ----------------------------------------------------------------------------------------------------
@pytest.mark.docker
def test_gemini_cli_fixes_a_codedebug_task_in_a_container(gemini_cli: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_docker()
    trajectory, generator = play_episode(
        "gemini-cli", "CodeDebug-v0", "GymSwe/0", codedebug_fix(), tokenizer, sandbox="docker"
    )
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason) == (1.0, "submitted")
    assert_token_exact(trajectory, generator)
    assert_sandboxed(trajectory.turns[0].observation)


@pytest.mark.docker
def test_gemini_cli_fixes_a_swe_task_in_a_container(gemini_cli: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_docker()
    trajectory, generator = play_episode(
        "gemini-cli", "SWEGym-v0", SWE_TASK.instance_id, swe_fix(), tokenizer, sandbox="docker"
    )
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason) == (1.0, "submitted")
    assert_token_exact(trajectory, generator)
    assert_sandboxed(trajectory.turns[2].observation)
