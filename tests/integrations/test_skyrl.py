"""The SkyRL adapter against the real skyrl-gym: envs made by its registry, played through its env API
(``skyrl_gym.make``, ``init``, ``step`` until ``done``, ``close``, as SkyRL's generator plays them), on
CodeDebug-v0 and SWEGym-v0 in the local sandbox, with rewards equal to the bare gym_swe env's."""

from __future__ import annotations

import base64

import gymnasium
import pytest

import gym_swe
from gym_swe.errors import ConfigError
from gym_swe.tasks.functions import load_function_tasks
from gym_swe.tasks.swe import load_swe_tasks
from tests.conftest import require_bwrap
from tests.redteam.scripted import SUBMIT, bash
from tests.test_readme import run, snippet

skyrl_gym = pytest.importorskip("skyrl_gym")
from gym_swe.integrations.skyrl import GymSweTextEnv, register_envs, skyrl_dataset  # noqa: E402

NO_CALL = "I think the bug is in the loop."


def code_fix(task_id: str) -> str:
    task = load_function_tasks("bundled").get(task_id)
    encoded = base64.b64encode(task.fixed_code.encode()).decode()
    return bash(f"echo {encoded} | base64 -d > /workspace/solution.py")


def swe_fix(task_id: str) -> str:
    encoded = base64.b64encode(load_swe_tasks("bundled").get(task_id).patch.encode()).decode()
    return bash(f"echo {encoded} | base64 -d | git apply")


def play_skyrl(env_id: str, task_id: str, actions: list[str], **config: object) -> tuple[list[dict], object]:
    """SkyRL's env loop: make by id, init on the row's prompt, step until done, close."""
    row = next(row for row in skyrl_dataset(env_id, [task_id]) if row["task_id"] == task_id)
    extras = {key: value for key, value in row.items() if key not in ("prompt", "env_class")}
    env = skyrl_gym.make(row["env_class"], env_config=config, extras=extras)
    try:
        chat, metadata = env.init(row["prompt"])
        assert chat == row["prompt"] and metadata["task_id"] == task_id and metadata["tools"]
        outputs = []
        for action in actions:
            outputs.append(env.step(action))
            if outputs[-1]["done"]:
                break
        return outputs, env
    finally:
        env.close()


def play_bare(env_id: str, task_id: str, actions: list[str], **kwargs: object) -> list[tuple]:
    env = gymnasium.make(env_id, **kwargs)
    try:
        env.reset(options={"task_id": task_id})
        steps = []
        for action in actions:
            _, reward, terminated, truncated, info = env.step(action)
            steps.append((float(reward), terminated or truncated, info.get("grade")))
            if terminated or truncated:
                break
        return steps
    finally:
        env.close()


def outcomes(grade: dict) -> list[tuple[str, str]]:
    return [(test["name"], test["outcome"]) for test in grade["tests"]]


def test_register_envs_puts_every_gym_swe_env_in_skyrls_registry() -> None:
    assert register_envs() == ["CodeDebug-v0", "SWEGym-v0", "Harbor-v0"]
    assert register_envs(["CodeDebug-v0"]) == ["CodeDebug-v0"]  # again: no duplicate-registration error
    assert skyrl_gym.registry["SWEGym-v0"].kwargs == {"env_id": "SWEGym-v0"}
    with pytest.raises(ConfigError, match="Did you mean 'CodeDebug-v0'"):
        register_envs(["CodeDebug-v9"])


def test_a_row_without_a_task_id_is_one_clear_error() -> None:
    register_envs()
    with pytest.raises(ConfigError, match="needs a task_id"):
        skyrl_gym.make("CodeDebug-v0", env_config={}, extras={"data_source": "x"})


@pytest.mark.bwrap
@pytest.mark.parametrize(
    ("env_id", "task_id", "fix"),
    [("CodeDebug-v0", "GymSwe/3", code_fix), ("SWEGym-v0", "gymswe__semverkit-1", swe_fix)],
)
def test_skyrls_env_loop_gets_gym_swes_rewards(env_id: str, task_id: str, fix) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    register_envs()
    runs = {}
    for name, actions in (("fixed", [NO_CALL, fix(task_id), SUBMIT]), ("unfixed", [bash("ls"), SUBMIT])):
        outputs, env = play_skyrl(env_id, task_id, actions, sandbox="local")
        bare = play_bare(env_id, task_id, actions, sandbox="local")
        assert [o["reward"] for o in outputs] == [reward for reward, _, _ in bare]
        assert (
            [o["done"] for o in outputs]
            == [done for _, done, _ in bare]
            == [False] * (len(actions) - 1) + [True]
        )
        assert outcomes(outputs[-1]["metadata"]["grade"]) == outcomes(bare[-1][2])
        assert outputs[-1]["observations"] == [] and outputs[-1]["metadata"]["end_reason"] == "submitted"
        runs[name] = outputs, env.get_metrics()
    (fixed, fixed_metrics), (unfixed, unfixed_metrics) = runs["fixed"], runs["unfixed"]
    assert fixed[-1]["reward"] == 1.0 and unfixed[-1]["reward"] == 0.0
    passed = float(fixed[-1]["metadata"]["grade"]["passed"])
    assert fixed_metrics == {"turns": 3, "resolved": 1.0, "tests_passed": passed, "submitted": 1.0}
    assert unfixed_metrics["resolved"] == 0.0
    # What the env said at each step came back as the next chat messages.
    assert (
        fixed[0]["observations"][0]["role"] == "user"
        and "No tool call" in fixed[0]["observations"][0]["content"]
    )
    assert [m["role"] for m in fixed[1]["observations"]] == ["tool"]


@pytest.mark.bwrap
def test_the_generators_max_turns_ends_the_episode_graded() -> None:
    require_bwrap()
    register_envs()
    row = skyrl_dataset("CodeDebug-v0", ["GymSwe/0"])[0]
    # SkyRL's generator sets extras["max_turns"] from its own config: it wins over the registered limit (30).
    env = skyrl_gym.make(
        "CodeDebug-v0", env_config={"max_turns": 40}, extras={"task_id": "GymSwe/0", "max_turns": 2}
    )
    assert isinstance(env, GymSweTextEnv) and env.max_turns == 2
    try:
        env.init(row["prompt"])
        first = env.step(bash("ls"))
        last = env.step(bash("ls"))
        assert not first["done"] and last["done"] and last["metadata"]["end_reason"] == "max_turns"
        assert last["metadata"]["grade"]["tests"] and last["reward"] == 0.0
        with pytest.raises(gym_swe.GymSweError, match="after the episode ended"):
            env.step(bash("ls"))
    finally:
        env.close()


@pytest.mark.bwrap
def test_the_readme_example_runs_and_prints_what_it_says(tmp_path) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    code = snippet("SkyRL")
    assert run(code, tmp_path).stdout.splitlines()[-1] == "True 0.0 submitted"
