"""CodeDebug-v0 as users drive it: gymnasium.make, scripted policies, real sandboxes."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import gym_swe  # noqa: F401
from gym_swe.envs.rewards import diagnose_then_fix
from gym_swe.errors import ConfigError, GymSweError, TaskError
from gym_swe.tasks.functions import load_function_tasks
from tests.conftest import kill_jail, require_bwrap, require_docker, scaled, spread_sample

SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'


def bash(command: str) -> str:
    return "<tool_call>" + json.dumps({"name": "bash", "arguments": {"command": command}}) + "</tool_call>"


def write_solution(code: str) -> str:
    """A turn that overwrites solution.py with ``code`` (base64, so any code survives the shell)."""
    encoded = base64.b64encode(code.encode()).decode()
    return bash(f"echo {encoded} | base64 -d > /workspace/solution.py")


@pytest.fixture
def env():
    require_bwrap()
    environment = gymnasium.make("CodeDebug-v0")
    yield environment
    environment.close()


def run_episode(environment, task_id: str, actions: list) -> tuple[float, bool, bool, dict]:
    environment.reset(options={"task_id": task_id})
    for action in actions:
        _, reward, terminated, truncated, info = environment.step(action)
        if terminated or truncated:
            return reward, terminated, truncated, info
    raise AssertionError("the episode did not end")


# -- the Gymnasium contract -------------------------------------------------------------------------------
def test_check_env_passes(env) -> None:
    check_env(env.unwrapped)


def test_reset_returns_the_prompt_messages_and_tools(env) -> None:
    observation, info = env.reset(seed=3, options={"task_id": "GymSwe/5"})
    task = load_function_tasks("bundled").get("GymSwe/5")
    assert info["task_id"] == "GymSwe/5"
    assert [m["role"] for m in info["messages"]] == ["system", "user"]
    assert f"`{task.entry_point}`" in observation and "/workspace/solution.py" in observation
    assert "python test_solution.py" in observation
    assert [t["function"]["name"] for t in info["tools"]] == ["bash", "str_replace_editor", "submit"]
    assert env.observation_space.contains(observation)


def test_seeded_reset_is_reproducible(env) -> None:
    first = env.reset(seed=11)[1]["task_id"]
    assert env.reset(seed=11)[1]["task_id"] == first


def test_make_without_importing_gym_swe() -> None:
    code = "import gymnasium; env = gymnasium.make('gym_swe:CodeDebug-v0'); print(env.spec.id)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "CodeDebug-v0", result.stderr


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"max_turn": 3}, "Unknown keyword argument of CodeDebugEnv: 'max_turn'. Did you mean 'max_turns'?"),
    ({"sandbox": "dokcer"}, "Unknown sandbox 'dokcer'. Did you mean 'docker'?"),
    ({"show_tests": "all"}, "Unknown show_tests 'all'"),
    ({"reward": "dense"}, "Unknown reward 'dense'"),
    ({"max_turns": 0}, "max_turns must be a positive int"),
    ({"tools": ["bash"]}, "tools must include 'submit'"),
])  # fmt: skip
def test_wrong_kwargs_fail_at_make_naming_what_is_allowed(kwargs, message) -> None:
    with pytest.raises(ConfigError) as raised:
        gymnasium.make("CodeDebug-v0", **kwargs)
    assert message in str(raised.value)


def test_unknown_task_source_and_id() -> None:
    with pytest.raises(TaskError, match="Did you mean 'humanevalpack'"):
        gymnasium.make("CodeDebug-v0", tasks="humanevalpak")
    require_bwrap()
    environment = gymnasium.make("CodeDebug-v0")
    with pytest.raises(TaskError, match="Did you mean 'GymSwe/4'"):
        environment.reset(options={"task_id": "GymSwe/4x"})


# -- the workspace ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("show_tests", ["example", "full", "none"])
def test_show_tests_decides_the_test_file(show_tests: str) -> None:
    require_bwrap()
    task = load_function_tasks("bundled").get("GymSwe/7")
    environment = gymnasium.make("CodeDebug-v0", show_tests=show_tests)
    environment.reset(options={"task_id": task.task_id})
    box = environment.unwrapped.sandbox
    assert box.read_file("/workspace/solution.py").decode() == task.buggy_code
    if show_tests == "none":
        assert box.exec("ls").stdout == "solution.py\n"
    else:
        expected = task.example_test if show_tests == "example" else task.test
        assert expected.strip() in box.read_file("/workspace/test_solution.py").decode()
    environment.close()


def test_the_agent_cannot_find_the_hidden_tests(env) -> None:
    """A hidden-only assert is nowhere the agent can look: not in the workspace, not on the filesystem it
    sees, not in the prompt."""
    task = load_function_tasks("bundled").get("GymSwe/0")
    hidden_only = "run_length_encode('zzzzzzzzzzzz') == 'z12'"
    assert hidden_only in task.test and hidden_only not in task.example_test
    observation, _info = env.reset(options={"task_id": task.task_id})
    assert hidden_only not in observation
    places = "/workspace /tmp /var /run /etc /opt /home /root /srv /mnt /usr/local /usr/lib/python3*"
    found = env.unwrapped.sandbox.exec(f"grep -rlF \"== 'z12'\" {places} 2>/dev/null", timeout=300)
    assert not found.timed_out and found.exit_code in (1, 2) and found.stdout == ""  # 2: some places absent
    assert "solution.py" in env.unwrapped.sandbox.exec("grep -rlF 'def run_length_encode' /workspace").stdout


# -- episodes ---------------------------------------------------------------------------------------------
def test_fixing_the_bug_earns_one(env) -> None:
    task = load_function_tasks("bundled").get("GymSwe/0")
    reward, terminated, truncated, info = run_episode(
        env, task.task_id, [bash("python test_solution.py"), write_solution(task.fixed_code), SUBMIT]
    )
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["end_reason"] == "submitted"
    assert info["grade"]["resolved"] and info["grade"]["passed"] == info["grade"]["total"] == 8
    roles = [m["role"] for m in info["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool"]
    assert info["messages"][2]["tool_calls"][0]["function"]["name"] == "bash"
    assert json.loads(info["messages"][2]["tool_calls"][0]["function"]["arguments"]) == {
        "command": "python test_solution.py"
    }


def test_submitting_the_bug_earns_zero_and_fraction_gives_partial_credit() -> None:
    require_bwrap()
    binary = gymnasium.make("CodeDebug-v0")
    reward, _, _, info = run_episode(binary, "GymSwe/0", [SUBMIT])
    assert reward == 0.0 and not info["grade"]["resolved"]
    fraction = gymnasium.make("CodeDebug-v0", reward="fraction")
    reward, _, _, info = run_episode(fraction, "GymSwe/0", [SUBMIT])
    assert 0 < reward < 1
    assert reward == pytest.approx(info["grade"]["passed"] / info["grade"]["total"])


def test_assistant_message_actions_and_several_calls_per_turn(env) -> None:
    task = load_function_tasks("bundled").get("GymSwe/0")
    env.reset(options={"task_id": task.task_id})
    message = {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "a1",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"command": "echo one"}'},
            },
            {
                "id": "a2",
                "type": "function",
                "function": {"name": "bash", "arguments": {"command": "echo two"}},
            },
        ],
    }
    observation, _, _, _, info = env.step(message)
    assert observation == "[1: bash]\none\n\n[2: bash]\ntwo"
    assert [m.get("tool_call_id") for m in info["messages"][-2:]] == ["a1", "a2"]


def test_calls_after_submit_are_not_run(env) -> None:
    env.reset(options={"task_id": "GymSwe/0"})
    observation, _, terminated, _, _ = env.step(SUBMIT + bash("touch /workspace/late"))
    assert terminated
    assert "1 call(s) after submit were not run" in observation


def test_max_turns_truncates_and_still_grades() -> None:
    require_bwrap()
    environment = gymnasium.make("CodeDebug-v0", max_turns=2)
    task = load_function_tasks("bundled").get("GymSwe/1")
    reward, terminated, truncated, info = run_episode(
        environment, task.task_id, [write_solution(task.fixed_code), bash("true")]
    )
    assert (terminated, truncated, reward) == (False, True, 1.0)
    assert info["end_reason"] == "max_turns"


def test_context_budget_truncates() -> None:
    require_bwrap()
    environment = gymnasium.make("CodeDebug-v0", max_context_chars=5_000)
    environment.reset(options={"task_id": "GymSwe/1"})
    _, _, _, truncated, info = environment.step(bash("seq 1 3000"))
    assert truncated and info["end_reason"] == "context_budget" and "grade" in info


def test_malformed_calls_are_observations_with_an_optional_penalty() -> None:
    require_bwrap()
    environment = gymnasium.make("CodeDebug-v0", format_penalty=0.1)
    environment.reset(options={"task_id": "GymSwe/0"})
    observation, reward, terminated, truncated, info = environment.step(
        '<tool_call>{"name": "bash", }</tool_call>'
    )
    assert not (terminated or truncated)
    assert reward == pytest.approx(-0.1) and info["format_penalty"] == 0.1
    assert info["parse_errors"] and "Tool call error" in observation
    observation, reward, *_ = environment.step("I will now think about it.")
    assert "No tool call found" in observation and reward == pytest.approx(-0.1)
    observation, reward, *_ = environment.step(bash("echo fine"))
    assert observation == "fine" and reward == 0.0


@pytest.mark.parametrize(
    "action", [None, 42, ["bash"], b"\xff\xfe not utf-8", "x" * 2_000_000],
    ids=["none", "int", "list", "invalid-utf8", "2M-chars"],
)  # fmt: skip
def test_bad_actions_never_crash_the_env(env, action) -> None:
    env.reset(options={"task_id": "GymSwe/0"})
    observation, _reward, terminated, truncated, info = env.step(action)
    assert isinstance(observation, str) and not terminated
    assert len(observation) <= env.unwrapped.max_observation_chars + 100
    if isinstance(action, str) and len(action) > env.unwrapped.max_context_chars:
        assert truncated and info["end_reason"] == "context_budget" and "grade" in info
    else:
        assert not truncated and ("Tool call error" in observation or "No tool call" in observation)
        assert env.step(bash("echo next"))[0] == "next"


def test_custom_reward_with_the_worked_example(env) -> None:
    task = load_function_tasks("bundled").get("GymSwe/0")
    shaped = gymnasium.make(
        "CodeDebug-v0", reward=diagnose_then_fix(tests=0.7, diagnosis=0.2, efficiency=0.1)
    )
    careful = [
        bash("cat solution.py"),
        bash("python test_solution.py"),
        write_solution(task.fixed_code),
        SUBMIT,
    ]
    hasty = [write_solution(task.fixed_code), SUBMIT]
    careful_reward = run_episode(shaped, task.task_id, careful)[0]
    hasty_reward = run_episode(shaped, task.task_id, hasty)[0]
    assert careful_reward == pytest.approx(0.7 + 0.2 + 0.1 * (1 - 4 / 30))
    assert hasty_reward == pytest.approx(0.7 + 0.1 * (1 - 2 / 30))
    assert run_episode(shaped, task.task_id, [SUBMIT])[0] == pytest.approx(0.7 * 1 / 8)


def test_a_jail_killed_mid_episode_ends_it_with_the_reason(env) -> None:
    env.reset(options={"task_id": "GymSwe/0"})
    kill_jail(env.unwrapped.sandbox)
    observation, reward, terminated, truncated, info = env.step(bash("echo hi"))
    assert truncated and not terminated and reward == 0.0
    assert "sandbox died" in info["error"] and info["end_reason"] == "sandbox_error"
    assert "The sandbox stopped working" in observation
    env.reset(options={"task_id": "GymSwe/0"})  # the next episode starts normally
    assert env.step(bash("echo ok"))[0] == "ok"


def test_step_after_the_end_needs_a_reset(env) -> None:
    env.reset(options={"task_id": "GymSwe/0"})
    env.step(SUBMIT)
    with pytest.raises(GymSweError, match="call reset"):
        env.unwrapped.step(bash("echo"))


def test_vector_env() -> None:
    require_bwrap()
    envs = gymnasium.make_vec("CodeDebug-v0", num_envs=2, vectorization_mode="sync")
    observations, _ = envs.reset(seed=1)
    assert len(observations) == 2 and all("solution.py" in o for o in observations)
    observations, _rewards, terminated, _truncated, _infos = envs.step((SUBMIT, bash("echo hi")))
    assert list(terminated) == [True, False]
    assert observations[1] == "hi"
    envs.close()


# -- every task: its fix earns 1, its bug earns 0 ---------------------------------------------------------
def scripted_rewards(backend: str, source: str, task_ids: list[str]) -> dict[str, tuple[float, float]]:
    tasks = load_function_tasks(source)

    def both(task_id: str) -> tuple[float, float]:
        environment = gymnasium.make("CodeDebug-v0", tasks=source, sandbox=backend, test_timeout=3)
        try:
            task = tasks.get(task_id)
            fixed = run_episode(environment, task_id, [write_solution(task.fixed_code), SUBMIT])[0]
            buggy = run_episode(environment, task_id, [SUBMIT])[0]
        finally:
            environment.close()
        return fixed, buggy

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(task_ids, pool.map(both, task_ids)))


def assert_fix_one_bug_zero(results: dict[str, tuple[float, float]]) -> None:
    wrong = {task_id: pair for task_id, pair in results.items() if pair != (1.0, 0.0)}
    assert not wrong, f"{len(wrong)} tasks with (fixed, buggy) rewards other than (1.0, 0.0): {wrong}"


@pytest.mark.slow
def test_every_bundled_task(sandbox_backend: str) -> None:
    """Every bundled task, fixed and left alone, graded in its own sandbox (a container each under docker):
    the bundled set is the one users start on, so all of it, not a sample."""
    assert_fix_one_bug_zero(scripted_rewards(sandbox_backend, "bundled", load_function_tasks("bundled").ids))


@pytest.mark.slow
def test_humanevalpack_tasks(sandbox_backend: str, shared_data: Path) -> None:
    """All 164 tasks (bench: make bench), or a spread sample at ``GYM_SWE_TEST_SCALE`` (`make test`: 41)."""
    source = str(shared_data / "humanevalpack_python.jsonl")
    ids = list(load_function_tasks(source).ids)
    assert len(ids) == 164
    sample = spread_sample(ids, scaled(len(ids)))
    results = scripted_rewards(sandbox_backend, source, sample)
    assert sorted(results) == sorted(sample)
    assert_fix_one_bug_zero(results)


def test_docker_episode() -> None:
    require_docker()
    environment = gymnasium.make("CodeDebug-v0", sandbox="docker")
    task = load_function_tasks("bundled").get("GymSwe/0")
    reward, terminated, _, _info = run_episode(
        environment, task.task_id, [bash("python test_solution.py"), write_solution(task.fixed_code), SUBMIT]
    )
    assert reward == 1.0 and terminated
    environment.close()
