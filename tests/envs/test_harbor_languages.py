"""The bundled non-Python Harbor tasks played through Harbor-v0 on the docker sandbox: Go (`go test`), Rust
(`cargo test --offline`) and TypeScript (tsc, then node's test runner), each built from its own Dockerfile
(toolchains from Debian's packages, no network in the container).

A scripted policy plays each task with gym_swe's tools: the reference fix (its solve.sh, run with the bash
tool) earns 1.0, and so does a correct fix written otherwise; no change and a wrong fix earn 0.0 (the edits
are str_replace_editor calls, kept in tests/data/harbor/).
The attack: code the agent adds, run by the verifier, writes reward.txt = 1 and a made-up checks.json and
makes the hidden tests' process exit as a passing one would. That fools the verifier on its own (the same
actions earn 1.0 under integrity="any"); under the default the sealed checks, which only a fixed program
computes, are what keeps its reward at 0.0.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import gymnasium
import pytest

import gym_swe  # noqa: F401  (registers the envs)
from gym_swe.tasks.harbor import BUNDLED_DIR, load_harbor_tasks
from tests.conftest import REPO_ROOT, require_docker

DATA = REPO_ROOT / "tests" / "data" / "harbor"
TASKS = ("go-textwrap", "rust-ringbuf", "ts-bytesize")
SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'


def tool_call(name: str, arguments: dict[str, Any]) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def run_reference_fix(task: str) -> str:
    """The bash call an agent would make to run the task's solve.sh in the work dir (base64: no quoting)."""
    script = (BUNDLED_DIR / task / "solution" / "solve.sh").read_bytes()
    return tool_call("bash", {"command": f"echo {base64.b64encode(script).decode()} | base64 -d | bash"})


def edits(task: str, kind: str) -> list[str]:
    """The str_replace_editor calls of ``tests/data/harbor/<task>.<kind>.json`` (``other-fix``, ``wrong``,
    ``attack``)."""
    spec = json.loads((DATA / f"{task}.{kind}.json").read_text(encoding="utf-8"))
    workdir = load_harbor_tasks("bundled").get(task).workdir
    calls = []
    for edit in spec["edits"]:
        arguments = {key: value for key, value in edit.items() if key != "path"}
        calls.append(tool_call("str_replace_editor", {**arguments, "path": f"{workdir}/{edit['path']}"}))
    return calls


def episode(env: Any, task: str, actions: list[str]) -> tuple[float, dict[str, Any]]:
    """Plays ``actions`` on ``task``, each call of which must succeed (so a 0.0 is the grader's, not a
    failed edit's), and checks that they changed the work dir; then submits: the reward and the last info."""
    env.reset(options={"task_id": task})
    for action in actions:
        observation, _, terminated, truncated, _ = env.step(action)
        assert not (terminated or truncated), observation
        results = env.unwrapped.history[-1].results
        assert results and all(result.ok for result in results), observation
    if actions:
        status = env.unwrapped.sandbox.exec("git status --porcelain")  # the image commits the project
        assert status.stdout.strip(), "the actions changed nothing in the work dir"
    _, reward, terminated, _, info = env.step(SUBMIT)
    assert terminated, info
    return float(reward), info


def verifier_said(grade: dict[str, Any]) -> str:
    """The verifier's own reward as the grade records it ("reward 1", "reward 0"), sealed checks aside;
    asserting it first makes sure a 0.0 is a graded 0 (not an oracle that failed: "not graded")."""
    assert grade["error"] is None, grade["error"]
    (verifier,) = grade["tests"]
    return str(verifier["message"])


@pytest.fixture(scope="module")
def env():  # type: ignore[no-untyped-def]
    require_docker()
    environment = gymnasium.make("Harbor-v0", tasks="bundled", sandbox="docker")
    yield environment
    environment.close()


@pytest.mark.docker
@pytest.mark.parametrize("task", TASKS)
def test_the_reference_fix_earns_one(env, task: str) -> None:  # type: ignore[no-untyped-def]
    reward, info = episode(env, task, [run_reference_fix(task)])
    assert (reward, verifier_said(info["grade"]), info["grade"]["integrity"]) == (1.0, "reward 1", "sealed")


@pytest.mark.docker
@pytest.mark.parametrize("task", TASKS)
def test_another_correct_fix_earns_one(env, task: str) -> None:  # type: ignore[no-untyped-def]
    """The false-reject direction: a correct fix written unlike the reference one computes the same sealed
    checks (they are what the code must do, not how the oracle did it)."""
    reward, info = episode(env, task, edits(task, "other-fix"))
    assert (reward, verifier_said(info["grade"]), info["grade"]["integrity"]) == (1.0, "reward 1", "sealed")


@pytest.mark.docker
@pytest.mark.parametrize("task", TASKS)
def test_no_change_earns_zero(env, task: str) -> None:  # type: ignore[no-untyped-def]
    reward, info = episode(env, task, [])
    assert (reward, verifier_said(info["grade"]), info["grade"]["integrity"]) == (0.0, "reward 0", "sealed")


@pytest.mark.docker
@pytest.mark.parametrize("task", TASKS)
def test_a_wrong_fix_earns_zero(env, task: str) -> None:  # type: ignore[no-untyped-def]
    reward, info = episode(env, task, edits(task, "wrong"))
    assert (reward, verifier_said(info["grade"]), info["grade"]["integrity"]) == (0.0, "reward 0", "sealed")


@pytest.mark.docker
@pytest.mark.parametrize("task", TASKS)
def test_forged_reward_and_checks_earn_nothing_without_the_fix(task: str) -> None:
    """The attack fools the verifier alone (1.0 where the verifier's reward is paid as it is), and earns 0.0
    under the default, which also seals the checks; its honest control is the reference fix's 1.0 above."""
    require_docker()
    grades = {}
    for integrity in ("any", "protected"):
        environment = gymnasium.make("Harbor-v0", tasks="bundled", sandbox="docker", integrity=integrity)
        try:
            reward, info = episode(environment, task, edits(task, "attack"))
        finally:
            environment.close()
        grades[integrity] = (reward, verifier_said(info["grade"]), info["grade"]["integrity"])
        log = info["grade"]["log"]
    # The verifier itself paid the forgery both times; only the seal tells it from a fix.
    assert grades == {"any": (1.0, "reward 1", "unprotected"), "protected": (0.0, "reward 1", "sealed")}
    assert "[sealed checks that differ from the oracle's:" in log, log


def test_the_tasks_share_their_toolchain_layer() -> None:
    """The first RUN line is the same in every bundled task's Dockerfile, so docker builds the toolchains
    once for all of them."""
    first_runs = {
        next(line for line in (BUNDLED_DIR / task / "environment" / "Dockerfile").read_text().splitlines()
             if line.startswith("RUN "))
        for task in TASKS
    }  # fmt: skip
    assert len(first_runs) == 1, first_runs
    assert set(TASKS) <= {task.task_id for task in load_harbor_tasks("bundled")}
