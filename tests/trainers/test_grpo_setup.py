"""The trainer's setup (trainers/grpo_setup.py): which tasks train and which are held out for eval, env
kwargs that are not JSON refused in one line, the env's own turn limit kept unless --max_turns is given, and
dr_grpo's generation budget."""

from __future__ import annotations

import re

import pytest
from grpo_config import Args
from grpo_setup import generation_budget, make_env, read_env, split_tasks

from gym_swe.errors import ConfigError

TASKS = [f"T/{n}" for n in range(10)]


def test_the_held_out_tasks_are_the_last_of_a_seeded_shuffle_and_never_trained_on() -> None:
    train, held = split_tasks(Args(eval_holdout=3), TASKS)
    assert len(held) == 3 and sorted(train + held) == sorted(TASKS)
    assert split_tasks(Args(eval_holdout=3), list(reversed(TASKS))) == (train, held)  # the order given: none
    assert split_tasks(Args(eval_holdout=3, seed=1), TASKS) != (train, held)
    train_all, none = split_tasks(Args(eval_every=0), TASKS)
    assert none == [] and sorted(train_all) == TASKS


def test_explicit_task_lists() -> None:
    args = Args(train_task_ids="T/1,T/2", eval_task_ids="T/3")
    assert split_tasks(args, TASKS) == (["T/1", "T/2"], ["T/3"])
    with pytest.raises(ConfigError, match=re.escape("Unknown task id 'T/77'. Did you mean 'T/7'?")):
        split_tasks(Args(train_task_ids="T/77"), TASKS)
    with pytest.raises(ConfigError, match="no task left to train on"):
        split_tasks(Args(eval_holdout=2), ["T/1", "T/2"])


def test_env_kwargs_that_are_not_json_are_one_line() -> None:
    with pytest.raises(ConfigError, match="--env_kwargs is not JSON"):
        make_env(Args(env_kwargs="{reward: fraction}"))


def test_the_env_keeps_its_own_turn_limit_unless_max_turns_is_given() -> None:
    """CodeDebug-v0 registers 30 turns: the trainer's env has 30 (it had --max_turns's old default, 4)."""
    env = make_env(Args())
    assert (env.unwrapped.max_turns, env.spec.max_episode_steps) == (30, 30)
    env.close()
    env = make_env(Args(max_turns=3))
    assert (env.unwrapped.max_turns, env.spec.max_episode_steps) == (3, 3)
    env.close()
    assert read_env(Args()).max_turns == 30 and read_env(Args(max_turns=3)).max_turns == 3


def test_the_generation_budget_is_the_most_a_trajectory_may_sample() -> None:
    args = Args(max_new_tokens=100, max_model_len=1000)
    assert generation_budget(args, 3) == 300  # three turns of 100 new tokens
    assert generation_budget(args, 30) == 1000  # more than a trajectory holds
    assert generation_budget(args, None) == 1000  # an env without a turn limit we can read
