"""gym_swe in TRL's GRPOTrainer: the environment_factory adapter and the rollout_func, each training a tiny
model for a few steps on CPU on CodeDebug-v0's bundled tasks, in real local sandboxes."""

from __future__ import annotations

import base64
import inspect
import json
import os
from pathlib import Path

import pytest

from tests import models
from tests.conftest import REPO_ROOT, require_bwrap
from tests.models import MODELS

pytest.importorskip("trl")
pytest.importorskip("datasets")

from gym_swe.integrations.trl import (
    EPISODE_OVER,
    GymSweEnvironment,
    environment_class,
    trl_dataset,
    trl_spec,
)
from gym_swe.rollout.tiny import TOOL_CALL_COMMAND, make_tiny_trl_model
from gym_swe.tasks.functions import load_function_tasks

TASKS = ["GymSwe/0", "GymSwe/1"]


@pytest.fixture(scope="module")
def tiny_model() -> Path:
    """A tiny random Llama over a small BPE tokenizer with TRL's Qwen2.5 chat template (kept in .tmp)."""
    return make_tiny_trl_model(MODELS)


@pytest.fixture(scope="module")
def tool_caller() -> Path:
    """The tiny model taught to answer with a bash tool call, in the prompts gym_swe renders and in those TRL
    renders with its environment class's methods: TRL then really calls the env's methods. Fully taught (the
    default 1,000 steps, a call on nearly every turn): 200 steps gave 35-80% a turn from build to build (its
    training on CPU is not bit-repeatable), and one build's rollouts here made a single call between them."""
    require_bwrap()  # it learns the env's real tool results, played in local sandboxes
    return models.tool_caller()  # built by make test's set-up (python -m tests.models)


def grpo_config(out: Path, **overrides):  # type: ignore[no-untyped-def]
    from trl import GRPOConfig

    settings = dict(
        output_dir=str(out), per_device_train_batch_size=4, num_generations=2, max_completion_length=48,
        learning_rate=1e-2, max_steps=2, use_vllm=False, report_to="none", bf16=False,
        gradient_checkpointing=False, save_strategy="no", logging_steps=1, seed=0,
        max_tool_calling_iterations=2,
        # Above 1: the tool caller answers with its call ~80% of draws instead of nearly all, so a group's
        # two samples differ often enough for an update that is not zero.
        temperature=1.3,
    )  # fmt: skip
    settings.update(overrides)
    return GRPOConfig(**settings)


def weights(model) -> dict:  # type: ignore[no-untyped-def]
    return {name: value.detach().clone() for name, value in model.named_parameters()}


def moved(before: dict, model) -> bool:  # type: ignore[no-untyped-def]
    return any(not value.equal(before[name]) for name, value in model.named_parameters())


# -- environment_factory -------------------------------------------------------------------------------
def test_public_methods_are_exactly_the_envs_tools_with_schemas_trl_can_read() -> None:
    require_bwrap()
    import gymnasium
    from transformers.utils import get_json_schema

    environment = environment_class("CodeDebug-v0")
    env = gymnasium.make("CodeDebug-v0")
    expected = env.unwrapped.toolbox.schemas()
    env.close()
    public = [n for n, _ in inspect.getmembers(environment, inspect.isfunction) if not n.startswith("_")]
    assert sorted(public) == sorted(["reset", "get_reward", *(s["function"]["name"] for s in expected)])
    instance = environment()
    for schema in expected:
        derived = get_json_schema(getattr(instance, schema["function"]["name"]))["function"]
        wanted = schema["function"]["parameters"]
        assert derived["description"] == schema["function"]["description"].strip()
        assert set(derived["parameters"]["properties"]) == set(wanted["properties"])
        assert derived["parameters"].get("required", []) == wanted["required"]
        for name, prop in wanted["properties"].items():
            assert derived["parameters"]["properties"][name]["type"] == prop["type"]
            assert derived["parameters"]["properties"][name].get("enum") == prop.get("enum")
    assert not issubclass(environment, gymnasium.Env)


def test_a_tool_set_limits_the_methods() -> None:
    require_bwrap()
    environment = environment_class("CodeDebug-v0", tools=("bash", "submit"))
    public = [n for n, _ in inspect.getmembers(environment, inspect.isfunction) if not n.startswith("_")]
    assert sorted(public) == ["bash", "get_reward", "reset", "submit"]


def test_an_episode_through_the_methods_is_graded_by_the_env() -> None:
    require_bwrap()
    task = load_function_tasks("bundled").get("GymSwe/0")
    instance = environment_class("CodeDebug-v0")()
    prompt = instance.reset(prompt=[{"role": "user", "content": ""}], task_id="GymSwe/0")
    assert task.entry_point in prompt and "/workspace/solution.py" in prompt
    assert instance.bash(command="echo 'héllo ✓'") == "héllo ✓"
    view = instance.str_replace_editor(command="view", path="/workspace/solution.py")
    assert task.entry_point in view
    encoded = base64.b64encode(task.fixed_code.encode()).decode()
    assert instance.bash(command=f"echo {encoded} | base64 -d > /workspace/solution.py") == "[no output]"
    assert instance.submit().startswith("Submitted")
    assert instance.bash(command="ls") == EPISODE_OVER
    assert instance.get_reward() == 1.0
    assert instance.grade is not None and instance.grade["tests"]

    # The next reset closes nothing left open and starts afresh; an unsubmitted episode is graded as it stands.
    instance.reset(task_id="GymSwe/1")
    sandbox = instance._env.unwrapped.sandbox
    assert sandbox is not None and sandbox.host_dir.exists()
    assert instance.get_reward() == 0.0 and instance.grade["tests"]
    assert not sandbox.host_dir.exists()  # graded and closed


def test_reset_closes_the_previous_sandbox_and_the_finalizer_the_last() -> None:
    require_bwrap()
    import gc

    instance = environment_class("CodeDebug-v0")()
    instance.reset(task_id="GymSwe/0")
    first = instance._env.unwrapped.sandbox.host_dir
    instance.bash(command="sleep 300 &")
    instance.reset(task_id="GymSwe/1")
    assert not first.exists()
    second = instance._env.unwrapped.sandbox.host_dir
    del instance
    gc.collect()
    assert not second.exists()


def test_dataset_and_spec() -> None:
    require_bwrap()
    dataset = trl_dataset("CodeDebug-v0", task_ids=TASKS, repeat=2)
    assert dataset["task_id"] == TASKS * 2
    row = dataset[0]
    assert [m["role"] for m in row["prompt"]] == ["system", "user"] and row["prompt"][1]["content"] == ""
    full = trl_dataset("CodeDebug-v0", task_ids=TASKS, full_prompt=True)
    assert "/workspace/solution.py" in full[0]["prompt"][1]["content"]
    # A full prompt is the chat the env opens the task's episode with, made without the episode.
    import gymnasium

    env = gymnasium.make("CodeDebug-v0")
    try:
        assert full[1]["prompt"] == env.unwrapped.opening_messages(TASKS[1])
        assert full[1]["prompt"] == env.reset(options={"task_id": TASKS[1]})[1]["messages"]
    finally:
        env.close()
    spec = trl_spec("CodeDebug-v0", task_ids=TASKS)
    kwargs = spec.trainer_kwargs()
    assert set(kwargs) == {"train_dataset", "environment_factory", "reward_funcs"}
    assert issubclass(kwargs["environment_factory"], GymSweEnvironment) and kwargs["reward_funcs"] == []
    with pytest.raises(Exception, match="repeat"):
        trl_dataset("CodeDebug-v0", repeat=0)


def test_environment_factory_trains_a_tiny_model(tool_caller: Path, tmp_path: Path) -> None:
    require_bwrap()
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOTrainer

    spec = trl_spec("CodeDebug-v0", task_ids=TASKS, max_turns=3)
    model = AutoModelForCausalLM.from_pretrained(str(tool_caller))
    tokenizer = AutoTokenizer.from_pretrained(str(tool_caller))
    before = weights(model)
    played: list = []  # the env steps of every scored rollout

    def length_reward(completions, environments, **_):  # type: ignore[no-untyped-def]
        # A reward with spread, so the tiny model's update is not zero (the env's is 0: it fixes nothing).
        played.extend(turn for environment in environments for turn in environment._env.unwrapped.history)
        return [len(json.dumps(c)) / 1000 for c in completions]

    spec.reward_funcs.append(length_reward)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=grpo_config(tmp_path, learning_rate=1e-3),
                          **spec.trainer_kwargs())  # fmt: skip
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logs) == 2
    env_name = spec.environment_factory.__name__
    assert all(f"rewards/{env_name}/mean" in entry for entry in logs)  # the env's get_reward scored them
    assert moved(before, trainer.model)
    pool = trainer._environment_pool[None]
    assert len(pool) == 4 and all(isinstance(e, spec.environment_factory) for e in pool)
    assert all(e.grade is not None for e in pool)  # each rollout was graded (get_reward ended it)
    # TRL parsed the model's tool calls and ran them through the env's methods, in the env's sandbox.
    assert any(entry.get("tools/call_frequency", 0) > 0 for entry in logs)
    assert played and all(turn.calls[0].name == "bash" for turn in played)
    # The commands ran in the task's workspace: its own test script ran (passing or failing on the bug).
    ran_tests = [t for t in played if t.calls[0].arguments.get("command") == TOOL_CALL_COMMAND]
    assert any("All tests passed." in t.observation or "Error" in t.observation for t in ran_tests), [
        (t.calls[0].arguments, t.observation[:200]) for t in played
    ]


# -- rollout_func --------------------------------------------------------------------------------------
def test_rollout_func_trains_a_tiny_model(tool_caller: Path, tmp_path: Path) -> None:
    require_bwrap()
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOTrainer

    from gym_swe.integrations.trl import GymSweRollout

    rollout = GymSweRollout("CodeDebug-v0", parallel=4, max_turns=2, max_model_len=4096)
    dataset = rollout.dataset(TASKS)
    model = AutoModelForCausalLM.from_pretrained(str(tool_caller))
    tokenizer = AutoTokenizer.from_pretrained(str(tool_caller))
    before = weights(model)
    batches: list[list] = []
    observations: list[str] = []  # what the envs said, every batch

    def length_reward(completion_ids, grade, task_id, **_):  # type: ignore[no-untyped-def]
        # The extra fields reach reward functions; a reward with spread makes the update non-zero.
        batches.append(list(zip(task_id, grade, completion_ids)))
        observations.extend(turn.observation for t in rollout.trajectories for turn in t.turns)
        return [len(set(ids)) / 100 for ids in completion_ids]

    trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=grpo_config(tmp_path, max_completion_length=40, learning_rate=1e-3),
                          train_dataset=dataset, reward_funcs=[*rollout.reward_funcs(), length_reward],
                          rollout_func=rollout)  # fmt: skip
    try:
        trainer.train()
    finally:
        rollout.close()
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logs) == 2 and moved(before, trainer.model)
    assert all("entropy" in entry for entry in logs)  # logged as training, not eval
    assert len(batches) == 2 and all(len(batch) == 4 for batch in batches)  # one completion per prompt
    for batch in batches:
        assert all(grade is not None and "tests" in grade for _, grade, _ in batch)
        assert [task for task, _, _ in batch][::2] == [task for task, _, _ in batch][1::2]  # groups of 2

    # The last batch's completions are the trajectories' exact ids, masks and sampling logprobs.
    for trajectory in rollout.trajectories:
        start = trajectory.prompt_length
        assert trajectory.turns and trajectory.error is None
        sampled = [i for i, m in enumerate(trajectory.loss_mask[start:]) if m]
        assert len(sampled) == sum(turn.length for turn in trajectory.turns)
        assert all(
            trajectory.logprobs[start + i] is not None and trajectory.logprobs[start + i] <= 0
            for i in sampled
        )
        if len(trajectory.turns) > 1:  # a bridge (tool output, template) between turns, masked out
            assert 0 in trajectory.loss_mask[start:]
    # gym_swe parsed the model's tool calls and ran them in the episodes' sandboxes.
    assert any("All tests passed." in observation for observation in observations)


def test_rollout_func_rejects_a_prompt_not_in_its_dataset() -> None:
    require_bwrap()
    from gym_swe.errors import ConfigError
    from gym_swe.integrations.trl import GymSweRollout

    rollout = GymSweRollout("CodeDebug-v0")
    with pytest.raises(ConfigError, match=r"GymSweRollout\.dataset"):
        rollout([[{"role": "user", "content": "hello"}]], trainer=None)


# -- the examples, as a newcomer runs them (one step each) --------------------------------------------------
@pytest.mark.parametrize("script", ["trl_environment_factory.py", "trl_rollout_func.py"])
def test_example_runs(script: str, tiny_model: Path, tmp_path: Path) -> None:
    require_bwrap()
    import subprocess
    import sys

    command = [sys.executable, str(REPO_ROOT / "examples" / script), "--model", str(tiny_model), "--steps", "1",
               "--max_turns", "2", "--output_dir", str(tmp_path)]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT, timeout=600,
                            env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "TRL_EXPERIMENTAL_SILENCE": "1"})  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    assert "step 1: env reward" in result.stdout
