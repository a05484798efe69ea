"""Pi (the real CLI harness) plays a bundled non-Python Harbor task through Harbor-v0 on the docker sandbox:
the task's own image (Go from Debian's packages), Pi and its Node bound in read-only, the proxy reached
through its socket. The scripted model runs the project's tests, runs the task's reference fix, runs the
tests again and stops; the Harbor verifier grades in a fresh container, with the sealed checks."""

from __future__ import annotations

import base64
from collections.abc import Callable

import pytest

from gym_swe.integrations.harnesses.base import Harness
from tests.conftest import REPO_ROOT, require_docker
from tests.integrations.harnesses.scripted import (
    PROBE,
    assert_sandboxed,
    assert_token_exact,
    final_turn,
    play_episode,
    tool_turn,
)

pytestmark = pytest.mark.docker

TASK = "go-textwrap"
SOLVE = REPO_ROOT / "gym_swe" / "tasks" / "data" / "harbor" / TASK / "solution" / "solve.sh"


@pytest.fixture(scope="module")
def pi(installed: Callable[[str], Harness]) -> Harness:
    return installed("pi")


def test_pi_fixes_a_go_harbor_task_in_its_own_image(pi: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_docker()
    fix = base64.b64encode(SOLVE.read_bytes()).decode()
    turns = [
        tool_turn("bash", {"command": f"go version && go test ./... 2>&1; {PROBE}"}, 0),
        tool_turn("bash", {"command": f"echo {fix} | base64 -d | bash && git status --short"}, 1),
        tool_turn("bash", {"command": "go test ./... 2>&1"}, 2),
        final_turn(3),
    ]
    trajectory, generator = play_episode(
        "pi", "Harbor-v0", TASK, turns, tokenizer, sandbox="docker", tasks="bundled"
    )
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason, trajectory.terminated) == (1.0, "submitted", True)
    assert trajectory.resolved and len(trajectory.turns) == 4 and trajectory.grade["integrity"] == "sealed"
    assert_token_exact(trajectory, generator)
    first = trajectory.turns[0].observation
    assert "go1.19" in first and "example.com/textwrap" in first, first  # the task's image, its toolchain
    assert_sandboxed(first)
    assert " M textwrap.go" in trajectory.turns[1].observation
    assert "ok  \texample.com/textwrap" in trajectory.turns[2].observation


def test_pi_that_changes_nothing_scores_zero(pi: Harness, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """The control: the same harness and task, the project's own tests run (they pass: they are ASCII only),
    nothing fixed; the verifier's hidden tests fail."""
    require_docker()
    turns = [tool_turn("bash", {"command": "go test ./... 2>&1"}, 0), final_turn(1)]
    trajectory, _ = play_episode("pi", "Harbor-v0", TASK, turns, tokenizer, sandbox="docker", tasks="bundled")
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason, trajectory.resolved) == (0.0, "submitted", False)
    assert trajectory.grade is not None and trajectory.grade["error"] is None
    assert trajectory.grade["tests"][0]["message"] == "reward 0"  # graded by the verifier, not refused
    assert "ok  \texample.com/textwrap" in trajectory.turns[0].observation
