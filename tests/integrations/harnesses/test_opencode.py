"""OpenCode (the real ``opencode-ai``, the native binary its npm package ships) inside the episode's sandbox:
a scripted model writing OpenCode's own tool calls (bash with its description, read, write with filePath)
drives it through the proxy to fix a CodeDebug task and a bundled SWE task, in a bubblewrap jail and in a
docker container; gym_swe grades."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from gym_swe.integrations.harnesses.base import Harness, HarnessRun, Launch
from gym_swe.integrations.harnesses.opencode import OpenCodeHarness
from gym_swe.tasks.functions import load_function_tasks
from gym_swe.tasks.swe import load_swe_tasks
from tests.conftest import require_bwrap, require_docker
from tests.integrations.harnesses.scripted import (
    PROBE,
    apply_patch_command,
    assert_sandboxed,
    assert_token_exact,
    final_turn,
    play_episode,
    tool_turn,
)

FIXED = load_function_tasks("bundled").get("GymSwe/0").fixed_code
SWE_TASK = load_swe_tasks("bundled").get("gymswe__semverkit-1")


@pytest.fixture(scope="module")
def opencode(installed: Callable[[str], Harness]) -> Harness:
    return installed("opencode")


def bash(command: str, step: int) -> str:
    return tool_turn("bash", {"command": command, "description": "Run a command"}, step)


def codedebug_fix() -> list[str]:
    """OpenCode's tools: run the example tests (they fail), read the function (its write tool wants a file
    read first), write the fix, run the tests again, stop."""
    return [
        bash(f"python test_solution.py; {PROBE}", 0),
        tool_turn("read", {"filePath": "/workspace/solution.py"}, 1),
        tool_turn("write", {"filePath": "/workspace/solution.py", "content": FIXED}, 2),
        bash("python test_solution.py", 3),
        final_turn(4),
    ]


def swe_fix() -> list[str]:
    return [
        tool_turn("read", {"filePath": "/testbed/README.md"}, 0),
        bash(apply_patch_command(SWE_TASK.patch), 1),
        bash(f"git status --short; {PROBE}", 2),
        final_turn(3),
    ]


def test_opencode_fixes_a_codedebug_task_in_a_jail(opencode: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    trajectory, generator = play_episode("opencode", "CodeDebug-v0", "GymSwe/0", codedebug_fix(), tokenizer)
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason, trajectory.terminated) == (1.0, "submitted", True)
    assert trajectory.resolved and len(trajectory.turns) == 5
    # No title request (--title): one conversation, every turn bridged.
    assert_token_exact(trajectory, generator)
    assert {"bash", "read", "write", "edit"} <= {tool["function"]["name"] for tool in trajectory.tools}
    first = trajectory.turns[0].observation
    assert "AssertionError" in first
    assert_sandboxed(first)
    assert "run_length_encode" in trajectory.turns[1].observation  # its read tool read the file
    assert "All tests passed." in trajectory.turns[3].observation


def test_opencode_fixes_a_swe_task_in_a_jail(opencode: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    trajectory, generator = play_episode("opencode", "SWEGym-v0", SWE_TASK.instance_id, swe_fix(), tokenizer)
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason) == (1.0, "submitted")
    assert_token_exact(trajectory, generator)
    assert "semverkit" in trajectory.turns[0].observation
    assert " M " in trajectory.turns[2].observation


def test_opencode_that_fixes_nothing_scores_zero(opencode: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    turns = [bash("ls /workspace", 0), final_turn(1)]
    trajectory, _ = play_episode("opencode", "CodeDebug-v0", "GymSwe/0", turns, tokenizer)
    assert (trajectory.reward, trajectory.end_reason, trajectory.resolved) == (0.0, "submitted", False)
    assert trajectory.error is None and trajectory.grade is not None
    assert "solution.py" in trajectory.turns[0].observation


class TitledByTheModel(OpenCodeHarness):
    """OpenCode as it runs without gym_swe's ``--title``: it asks the model for the session's title."""

    def launch(self, run: HarnessRun) -> Launch:
        launch = super().launch(run)
        at = launch.argv.index("--title")
        return dataclasses.replace(launch, argv=launch.argv[:at] + launch.argv[at + 2 :])


def test_a_title_request_is_a_conversation_of_its_own_counted_as_a_fork(opencode: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """Why gym_swe gives OpenCode a --title: without one, OpenCode's title agent asks the model for a title
    in a conversation of its own (its own system prompt, no tools), beside the agent's and at the same time.
    The proxy records it as what it is, a fork: the title is a segment of its own, and the agent's
    conversation a second one, or two (a third segment) when the title came between two of its turns (the
    proxy bridges a request onto the last one it answered). Every sampled id is kept exactly; the episode is
    played all the same."""
    require_bwrap()
    turns = [bash("ls /workspace", 0), final_turn(1)]
    trajectory, generator = play_episode(TitledByTheModel(), "CodeDebug-v0", "GymSwe/0", turns, tokenizer)
    assert trajectory.error is None, trajectory.error
    assert trajectory.end_reason == "submitted" and len(trajectory.turns) == 3  # the title, the agent's two
    assert trajectory.forks in (1, 2) and trajectory.segment_count == trajectory.forks + 1
    assert_token_exact(trajectory, generator, forks=trajectory.forks)
    titles = [p for p in generator.prompts if "title" in tokenizer.decode(p[:400]).lower()]
    assert len(titles) == 1


# -- docker ----------------------------------------------------------------------------------------------------
@pytest.mark.docker
def test_opencode_fixes_a_codedebug_task_in_its_image(opencode: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """CodeDebug's sandboxes run the base image: with files="image" they run OpenCode's image instead."""
    require_docker()
    from gym_swe.integrations.harnesses.image import build_harness_image

    build_harness_image(opencode, log=lambda line: None)
    trajectory, generator = play_episode(
        "opencode", "CodeDebug-v0", "GymSwe/0", codedebug_fix(), tokenizer, sandbox="docker", files="image"
    )
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason) == (1.0, "submitted")
    assert_token_exact(trajectory, generator)
    assert_sandboxed(trajectory.turns[0].observation, bound=False)


@pytest.mark.docker
def test_opencode_fixes_a_swe_task_in_a_container(opencode: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """A SWE task runs its own image: OpenCode's installed folder is bound into it, read-only."""
    require_docker()
    trajectory, generator = play_episode(
        "opencode", "SWEGym-v0", SWE_TASK.instance_id, swe_fix(), tokenizer, sandbox="docker"
    )
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason) == (1.0, "submitted")
    assert_token_exact(trajectory, generator)
    assert_sandboxed(trajectory.turns[2].observation)
