"""Pi (the real ``@mariozechner/pi-coding-agent``, on the Node gym_swe installs) inside the episode's sandbox:
a scripted model writing Pi's own tool calls (read, bash, edit, write) drives it through the proxy to fix a
CodeDebug task and a bundled SWE task, in a bubblewrap jail and in a docker container; gym_swe grades."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

import pytest

from gym_swe.errors import ConfigError
from gym_swe.integrations.harnesses.base import Harness
from gym_swe.tasks.functions import load_function_tasks
from gym_swe.tasks.swe import load_swe_tasks
from tests.conftest import REPO_ROOT, require_bwrap, require_docker
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
def pi(installed: Callable[[str], Harness]) -> Harness:
    return installed("pi")


def codedebug_fix() -> list[str]:
    """Pi's tools: run the example tests (they fail), write the fixed function, run them again, stop."""
    return [
        tool_turn("bash", {"command": f"python test_solution.py; {PROBE}"}, 0),
        tool_turn("write", {"path": "/workspace/solution.py", "content": FIXED}, 1),
        tool_turn("bash", {"command": "python test_solution.py"}, 2),
        final_turn(3),
    ]


def swe_fix() -> list[str]:
    return [
        tool_turn("read", {"path": "README.md"}, 0),
        tool_turn("bash", {"command": apply_patch_command(SWE_TASK.patch)}, 1),
        tool_turn("bash", {"command": f"git status --short; {PROBE}"}, 2),
        final_turn(3),
    ]


def test_pi_fixes_a_codedebug_task_in_a_jail(pi: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    trajectory, generator = play_episode("pi", "CodeDebug-v0", "GymSwe/0", codedebug_fix(), tokenizer)
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason, trajectory.terminated) == (1.0, "submitted", True)
    assert trajectory.resolved and len(trajectory.turns) == 4
    assert_token_exact(trajectory, generator)
    # Pi's own tools, as it declared them; their results came from the jail.
    assert {"read", "bash", "edit", "write"} <= {tool["function"]["name"] for tool in trajectory.tools}
    first = trajectory.turns[0].observation
    assert "AssertionError" in first  # the example tests failed before the fix
    assert_sandboxed(first)
    assert "Successfully wrote" in trajectory.turns[1].observation
    assert "All tests passed." in trajectory.turns[2].observation


def test_pi_fixes_a_swe_task_in_a_jail(pi: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    trajectory, generator = play_episode("pi", "SWEGym-v0", SWE_TASK.instance_id, swe_fix(), tokenizer)
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason) == (1.0, "submitted")
    assert_token_exact(trajectory, generator)
    assert "semverkit" in trajectory.turns[0].observation  # Pi's read tool read /testbed/README.md
    assert " M " in trajectory.turns[2].observation  # git status: the patch changed the source


def test_pi_that_fixes_nothing_scores_zero(pi: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    turns = [tool_turn("bash", {"command": "ls /workspace"}, 0), final_turn(1)]
    trajectory, _ = play_episode("pi", "CodeDebug-v0", "GymSwe/0", turns, tokenizer)
    assert (trajectory.reward, trajectory.end_reason, trajectory.resolved) == (0.0, "submitted", False)
    assert trajectory.error is None and trajectory.grade is not None
    assert "solution.py" in trajectory.turns[0].observation


# -- docker ----------------------------------------------------------------------------------------------------
@pytest.mark.docker
def test_pi_fixes_a_codedebug_task_in_its_image(pi: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """CodeDebug's sandboxes run the base image: with files="image" they run Pi's image instead
    (``gym-swe images build --harness pi``: the base image with the installed Pi and Node copied in)."""
    require_docker()
    from gym_swe.integrations.harnesses.image import build_harness_image

    build_harness_image(pi, log=lambda line: None)
    # As the command line builds it: up to date now (a recipe label), not built twice.
    command = ["images", "build", "--method", "debootstrap", "--harness", "pi"]
    done = subprocess.run([sys.executable, "-m", "gym_swe.cli", *command], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})  # fmt: skip
    assert done.returncode == 0 and "gym-swe-harness:pi is up to date" in done.stdout, done.stderr[-2000:]
    trajectory, generator = play_episode(
        "pi", "CodeDebug-v0", "GymSwe/0", codedebug_fix(), tokenizer, sandbox="docker", files="image"
    )
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason) == (1.0, "submitted")
    assert_token_exact(trajectory, generator)
    assert_sandboxed(trajectory.turns[0].observation, bound=False)


@pytest.mark.docker
def test_pi_fixes_a_swe_task_in_a_container(pi: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """A SWE task runs its own image: Pi's installed folder is bound into it, read-only."""
    require_docker()
    trajectory, generator = play_episode(
        "pi", "SWEGym-v0", SWE_TASK.instance_id, swe_fix(), tokenizer, sandbox="docker"
    )
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason) == (1.0, "submitted")
    assert_token_exact(trajectory, generator)
    assert_sandboxed(trajectory.turns[2].observation)
    with pytest.raises(ConfigError, match="use files='bind'"):  # the image would replace the task's
        play_episode("pi", "SWEGym-v0", SWE_TASK.instance_id, [], tokenizer, sandbox="docker", files="image")
