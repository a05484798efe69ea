"""Harbor-v0 (gym_swe/envs/harbor.py, gym_swe/grading/harbor.py) played through env.step() on real sandboxes:
the verifier's reward as gym_swe grades it (a fresh sandbox, tests copied in after the agent), sealed checks
against forgers, and the reward file read with care."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium
import pytest

import gym_swe  # noqa: F401  (registers Harbor-v0)
from gym_swe.envs.unwrapped import tool_env
from gym_swe.errors import ConfigError, TaskError, TaskRefused
from tests.conftest import require_bwrap, require_docker

SQUARE = Path(__file__).resolve().parents[1] / "data" / "harbor" / "square"
FIX = "printf 'def square(x):\\n    return x * x\\n' > square.py"
WRONG = "printf 'def square(x):\\n    return x * x if x >= 0 else 4\\n' > square.py"  # passes test.sh's own
# Forgers: code under test that writes the reward (and made-up checks) itself, then ends the run its way.
FORGE_EXIT = (
    'printf \'import json, os\\nopen("/logs/verifier/reward.txt", "w").write("1")\\n'
    'json.dump({"large": 1, "negative": 2, "one": 1}, open("/logs/verifier/checks.json", "w"))\\n'
    "os._exit(0)\\n' > square.py"
)
FORGE_LATER = (  # a daemon that writes the reward after test.sh has ended
    'printf \'import os, subprocess\\nsubprocess.Popen(["sh", "-c", "sleep 2; echo 1 > /logs/verifier/reward.txt"],'
    " start_new_session=True)\\ndef square(x):\\n    return x + x\\n' > square.py"
)


def call(name: str, **arguments: Any) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def play(env: gymnasium.Env[Any, Any], *commands: str, task_id: str = "square") -> dict[str, Any]:
    """One episode: each command as a bash call, then submit; the last step's info."""
    env.reset(options={"task_id": task_id})
    for command in commands:
        env.step(call("bash", command=command))
    *_, info = env.step(call("submit"))
    return info | {"reward": info["grade"]["reward"]}


def task_copy(tmp_path: Path, dockerfile: str | None = None, test_sh: str | None = None,
              solve: bool = True) -> Path:  # fmt: skip
    root = tmp_path / "tasks"
    shutil.copytree(SQUARE, root / "square")
    if dockerfile is not None:
        (root / "square" / "environment").mkdir()
        (root / "square" / "environment" / "Dockerfile").write_text(dockerfile)
    if test_sh is not None:
        (root / "square" / "tests" / "test.sh").write_text(test_sh)
    if not solve:
        shutil.rmtree(root / "square" / "solution")
    return root


@pytest.fixture(scope="module")
def local_env() -> Any:
    require_bwrap()
    env = gymnasium.make("Harbor-v0", tasks=str(SQUARE))
    yield env
    env.close()


def test_an_honest_fix_earns_1_sealed_and_nothing_else_earns_anything(local_env: Any) -> None:
    fixed = play(local_env, FIX)
    assert fixed["reward"] == 1.0 and fixed["grade"]["integrity"] == "sealed", fixed["grade"]
    assert play(local_env)["reward"] == 0.0  # no change
    wrong = play(local_env, WRONG)  # test.sh's own tests pass it; the sealed checks do not
    assert wrong["reward"] == 0.0 and "sealed checks that differ" in wrong["grade"]["log"]
    forged = play(local_env, FORGE_EXIT)
    assert forged["reward"] == 0.0 and forged["grade"]["integrity"] == "sealed"


def test_the_tests_are_never_in_the_agents_sandbox_and_the_prompt_says_what_is_graded(local_env: Any) -> None:
    observation, _ = local_env.reset(options={"task_id": "square"})
    assert "/app" in observation and "not kept" in observation and "square(x)" in observation
    seen, *_ = local_env.step(call("bash", command="ls /tests /logs /solution 2>&1; ls -A /app | wc -l"))
    assert "No such file" in seen and seen.rstrip().endswith("0")
    assert "12345" not in seen


def test_the_agents_time_ends_the_episode_graded_where_the_task_bounds_it(tmp_path: Path) -> None:
    """``[agent] timeout_sec``: the agent's commands' wall time, summed over the episode. The step that reaches
    it is cut there and the episode ends truncated ("agent_timeout"), graded as it stands: the fix made before
    the time ran out earns its 1.0 (control: the same episode without the bound goes on)."""
    require_bwrap()
    root = task_copy(tmp_path)
    config = root / "square" / "task.toml"
    config.write_text(config.read_text().replace("[agent]\ntimeout_sec = 600", "[agent]\ntimeout_sec = 15"))
    env = gymnasium.make("Harbor-v0", tasks=str(root))
    assert tool_env(env).tasks.get("square").agent_timeout == 15.0
    try:
        env.reset(options={"task_id": "square"})
        *_, terminated, truncated, info = env.step(call("bash", command=FIX))
        assert not terminated and not truncated
        *_, terminated, truncated, info = env.step(call("bash", command="sleep 120; echo never"))
        assert truncated and not terminated and info["end_reason"] == "agent_timeout", info.get("end_reason")
        assert info["step_limit"] == "agent_timeout" and info["grade"]["reward"] == 1.0
        assert tool_env(env).history[-1].seconds < 100  # cut at the bound (15 s), not after 120 s
    finally:
        env.close()
    unbounded = gymnasium.make(
        "Harbor-v0", tasks=str(root), agent_timeout=60
    )  # the kwarg overrides the task's
    try:
        unbounded.reset(options={"task_id": "square"})
        unbounded.step(call("bash", command="sleep 1"))
        *_, terminated, truncated, info = unbounded.step(call("bash", command="sleep 3; echo done"))
        assert not terminated and not truncated and "step_limit" not in info
    finally:
        unbounded.close()
    config.write_text(
        config.read_text().replace("timeout_sec = 15\n\n[environment]", "timeout_sec = -1\n\n[environment]")
    )
    with pytest.raises(TaskError, match=r"task.toml: agent.timeout_sec must be a positive number of seconds"):
        gymnasium.make("Harbor-v0", tasks=str(root))
    with pytest.raises(ConfigError, match="agent_timeout must be a positive number of seconds"):
        gymnasium.make("Harbor-v0", tasks=str(SQUARE), agent_timeout=0)


def test_integrity_any_pays_the_verifiers_reward_alone_forgers_included() -> None:
    require_bwrap()
    env = gymnasium.make("Harbor-v0", tasks=str(SQUARE), integrity="any")
    try:
        assert play(env, FIX)["grade"]["integrity"] == "unprotected"
        assert play(env, FORGE_EXIT)["reward"] == 1.0  # why the default does not pay such grades
        assert play(env, FORGE_LATER)["reward"] == 0.0  # what test.sh left running is killed before the read
    finally:
        env.close()


def test_the_default_refuses_a_task_without_an_oracle_at_make(tmp_path: Path) -> None:
    root = task_copy(tmp_path, solve=False)
    with pytest.raises(TaskRefused, match=r"no solution/solve.sh.*integrity='any' plays it"):
        gymnasium.make("Harbor-v0", tasks=str(root))


def test_a_verifier_without_checks_is_not_graded_under_the_default(tmp_path: Path) -> None:
    require_bwrap()
    plain = "python3 -c 'from square import square; assert square(3) == 9' && echo 1 > /logs/verifier/reward.txt\n"
    env = gymnasium.make("Harbor-v0", tasks=str(task_copy(tmp_path, test_sh=plain)))
    try:
        info = play(env, FIX)
        assert info["reward"] == 0.0 and "not graded" in info["grade"]["error"]
    finally:
        env.close()


@pytest.mark.parametrize(("written", "reward", "why"), [
    ("", 0.0, "wrote no reward"),
    ("echo abc > /logs/verifier/reward.txt", 0.0, "not a number"),
    ("printf '' > /logs/verifier/reward.txt", 0.0, "is empty"),
    ("head -c 10000 /dev/zero | tr '\\\\0' 1 > /logs/verifier/reward.txt", 0.0, "over 4096 bytes"),
    ("echo '{\"a\": 1, \"b\": 0}' > /logs/verifier/reward.json", 0.0, "none named 'reward'"),
    ("echo '{\"reward\": 0.25, \"other\": 1}' > /logs/verifier/reward.json", 0.25, None),
    ("echo 7 > /logs/verifier/reward.txt", 1.0, "clipped to 1.0"),
    ("echo -3 > /logs/verifier/reward.txt", 0.0, "clipped to 0.0"),
])  # fmt: skip
def test_the_reward_file_is_read_with_care(
    tmp_path: Path, written: str, reward: float, why: str | None
) -> None:
    require_bwrap()
    root = task_copy(tmp_path, test_sh=f"{written}\n")
    env = gymnasium.make("Harbor-v0", tasks=str(root), integrity="any", reward="fraction")
    try:
        grade = play(env)["grade"]
        assert grade["reward"] == reward, grade
        if why is not None:
            assert why in (grade["rejection"] or "") + grade["log"], grade
    finally:
        env.close()


def test_the_local_sandbox_refuses_a_task_with_its_own_environment(tmp_path: Path) -> None:
    root = task_copy(tmp_path, dockerfile="FROM gym-swe-base:latest\n")
    with pytest.raises(TaskRefused, match=r"environment/Dockerfile.*sandbox='docker' plays it"):
        gymnasium.make("Harbor-v0", tasks=str(root))


def test_gym_swe_validate_runs_the_oracle_as_the_gold_fix(tmp_path: Path) -> None:
    require_bwrap()
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "gym_swe.cli", "validate", "--env", "Harbor-v0", "--tasks", str(SQUARE),
         "--json", str(report)], capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (row,) = json.loads(report.read_text())
    assert row["ok"] and row["fix_resolved"] and not row["no_fix_resolved"] and row["integrity"] == "sealed"


# -- docker: the task's own environment ---------------------------------------------------------------------
DOCKERFILE = """FROM gym-swe-base:latest
RUN mkdir -p /app && printf 'def square(x):\\n    return x + x\\n' > /app/square.py
WORKDIR /app
"""


@pytest.fixture(scope="module")
def docker_tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_docker()
    return task_copy(tmp_path_factory.mktemp("harbor"), dockerfile=DOCKERFILE)


def test_docker_builds_the_tasks_image_once_and_plays_it_with_no_network(docker_tasks: Path) -> None:
    env = gymnasium.make("Harbor-v0", tasks=str(docker_tasks), sandbox="docker")
    try:
        fixed = play(env, "sed -i 's/x + x/x * x/' square.py")
        assert fixed["reward"] == 1.0 and fixed["grade"]["integrity"] == "sealed", fixed["grade"]
        assert play(env)["reward"] == 0.0
        assert play(env, FORGE_EXIT)["reward"] == 0.0
        env.reset(options={"task_id": "square"})
        seen, *_ = env.step(
            call(
                "bash",
                command="cat square.py; ls /tests 2>&1; python3 -c "
                "\"import socket; socket.create_connection(('1.1.1.1', 53), 3)\" 2>&1 | tail -1",
            )
        )
        assert "x + x" in seen and "No such file" in seen and "Error" in seen  # no network
        image = tool_env(env).sandbox.image  # type: ignore[union-attr]
        assert image.startswith("gym-swe-harbor:square-")
    finally:
        env.close()
    again = gymnasium.make("Harbor-v0", tasks=str(docker_tasks), sandbox="docker")
    try:
        again.reset(options={"task_id": "square"})
        assert tool_env(again).sandbox.image == image  # type: ignore[union-attr]  # the same content: no rebuild
    finally:
        again.close()


def test_a_dockerfile_that_does_not_build_fails_reset_naming_it(tmp_path: Path) -> None:
    require_docker()
    root = task_copy(tmp_path, dockerfile="FROM gym-swe-base:latest\nRUN exit 3\n")
    env = gymnasium.make("Harbor-v0", tasks=str(root), sandbox="docker")
    try:
        with pytest.raises(TaskError) as raised:
            env.reset(options={"task_id": "square"})
        first = str(raised.value).splitlines()[0]
        assert "environment/Dockerfile: the build failed" in first and "exit 3" in first, first
    finally:
        env.close()


def test_a_work_dir_replaced_by_a_link_is_rejected_and_odd_files_beside_a_fix_do_not_matter(
    docker_tasks: Path,
) -> None:
    env = gymnasium.make("Harbor-v0", tasks=str(docker_tasks), sandbox="docker")
    try:
        for replaced in ("cd / && rm -rf /app && ln -s / /app", "cd / && rm -rf /app && echo hi > /app"):
            grade = play(env, replaced)["grade"]
            assert grade["reward"] == 0.0 and "not a directory any more" in grade["rejection"], grade
        odd = "mkfifo pipe; ln -s /logs/verifier/reward.txt r; ln -s /etc etc; chmod 000 square.py"
        honest = play(
            env, f"sed -i 's/x + x/x * x/' square.py; {odd}"
        )  # the control: links dropped, fix kept
        assert honest["reward"] == 1.0, honest["grade"]
    finally:
        env.close()
