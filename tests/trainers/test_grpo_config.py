"""The trainer's configuration (trainers/grpo_config.py): its command line as --help shows it, every flag in
both spellings, a YAML file under the flags, and the checks that refuse a setting in one line."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from grpo_config import LOSS_DEFAULTS, Args, build_parser, parse_args

from gym_swe.errors import ConfigError


@pytest.mark.parametrize(("flags", "message"), [
    ([], "--model is required"),
    (["--model", "m", "--group_size", "1"], "no baseline"),
    (["--model", "m", "--generator", "vllm-server"], "needs --base_url"),
    (["--model", "m", "--generator", "openai-chat"], "returns chat messages, not token ids: nothing to train"),
    (["--model", "m", "--generator", "openai-chat", "--harness", "pi"], "nothing to train on .*gym-swe eval"),
    (["--model", "m", "--base_url", "http://x"], "would do nothing"),
    (["--model", "m", "--lora_r", "8"], "need --lora"),
    (["--model", "m", "--max_resample_rounds", "5"], "needs --dynamic_sampling"),
    (["--model", "m", "--async"], "hf shares the trainer's model"),
    (["--model", "m", "--loss", "ppo"], "Unknown loss 'ppo'"),
    (["--model", "m", "--generator", "vllm", "--generation_batch_size", "4"], "for --generator hf"),
    (["--model", "m", "--eval_holdout", "0"], "--eval_every needs tasks"),
    (["--model", "m", "--eval_every", "0", "--eval_holdout", "2"], "nothing is evaluated"),
    (["--model", "m", "--stepz", "3"], "Unknown flag '--stepz'. Did you mean '--steps'?"),
    (["--model", "m", "--max-turnz=3"], "Did you mean '--max_turns'?"),
    (["--model", "m", "3"], "unexpected argument '3'"),
    (["--model", "/no/such/model"], "--model '/no/such/model': no such directory"),
    (["--model", "runs/x/model"], "no such directory"),
    (["--model", "m", "--tokenizer", "./no-such-tokenizer"], "--tokenizer './no-such-tokenizer': no such"),
    (["--model", "m", "--resume", "runs/x", "--overwrite"], "--resume .* or --overwrite .*, not both"),
    (["--model", "m", "--env", "CodeDebg-v0"], "Unknown env 'CodeDebg-v0'. Did you mean 'CodeDebug-v0'?"),
    (["--model", "m", "--env", "no_such_module_x:Env-v0"], "cannot import 'no_such_module_x'"),
    (["--model", "m", "--env", "json:Env-v0"], "Unknown env 'Env-v0'"),
    (["--model", "m", "--max", "3"], "Unknown flag '--max'. Did you mean '--max_turns'?"),  # no prefixes
    (["--model", "m", "--asyn"], "Unknown flag '--asyn'. Did you mean '--async'?"),
    (["--model", "m", "--steps", "x"], "argument --steps: invalid int value: 'x'"),
    (["--model", "m", "--steps"], "argument --steps: expected one argument"),
    (["--model", "m", "--mixed_precision", "bf17"], "Unknown mixed_precision 'bf17'. Did you mean 'bf16'?"),
    (["--model", "m", "--generator", "vllm", "--async", "--max_staleness", "2"], "only 1"),
    (["--model", "m", "--max_turns", "0"], "--max_turns must be >= 1"),
    (["--model", "m", "--eps_low", "1.5"], r"--eps_low must be in \[0, 1\]"),
    (["--model", "m", "--advantage_scale", "grup"], "Unknown advantage_scale 'grup'. Did you mean 'group'?"),
])  # fmt: skip
def test_config_errors_say_why(flags: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_args(flags)


def test_yaml_config_then_flags(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("model: some/model\nsteps: 7\nlearning_rate: 0.001\n")
    args = parse_args(["--config", str(config), "--steps", "9"])
    assert (args.model, args.steps, args.learning_rate) == ("some/model", 9, 0.001)
    config.write_text("model: m\nstepz: 3\n")
    with pytest.raises(ConfigError, match="Did you mean 'steps'"):
        parse_args(["--config", str(config)])
    with pytest.raises(ConfigError, match=r"--config .*nothing\.yaml: No such file"):
        parse_args(["--config", str(tmp_path / "nothing.yaml")])


def test_help_comes_from_the_field_metadata() -> None:
    helps = {f.name: f.metadata["help"] for f in dataclasses.fields(Args)}
    assert helps["group_size"] == "Trajectories per task (G)."
    assert all(helps.values()), [name for name, text in helps.items() if not text]


def test_help_has_the_sections_the_choices_and_config_and_no_empty_default() -> None:
    text = build_parser().format_help()
    sections = ["the env:", "the model:", "generation:", "GRPO:", "optimisation:", "output:"]
    assert [text.index(title) for title in sections] == sorted(text.index(title) for title in sections)
    assert "--config FILE" in text
    assert "--loss {dapo,grpo,dr_grpo,gspo,cispo}" in text and "--generator {hf,vllm,vllm-server}" in text
    assert "(default: )" not in text and "(default: False)" not in text and "(default: None)" not in text
    assert "(default: 4)" in text  # --group_size
    # one spelling documented: the underscore one; --async as the README writes it
    assert "--max_turns" in text and "--max-turns" not in text
    assert "--async " in text and "--async_mode" not in text


def flag_value(item: dataclasses.Field) -> tuple[str, object]:
    """A value for the field on the command line, and what it parses to (not the default)."""
    kind = item.metadata["kind"]
    if kind is bool:
        return "true", True
    if item.metadata["choices"]:
        choice = next(c for c in item.metadata["choices"] if c and c != getattr(Args(), item.name))
        return choice, choice
    return {int: ("7", 7), float: ("0.5", 0.5), str: ("x", "x")}[kind]


@pytest.mark.parametrize("item", [f for f in dataclasses.fields(Args) if "_" in f.name], ids=lambda f: f.name)
def test_every_multi_word_flag_takes_both_spellings(item: dataclasses.Field) -> None:
    text, value = flag_value(item)
    spellings = {f"--{item.name}", "--" + item.name.replace("_", "-")}
    for flag in spellings:
        assert getattr(build_parser().parse_args([flag, text]), item.name) == value, flag


def test_async_is_the_flag_and_async_mode_its_alias() -> None:
    for flag in ("--async", "--async_mode", "--async-mode"):
        args = parse_args(["--model", "m", "--generator", "vllm", flag])
        assert args.async_mode is True, flag
    assert parse_args(["--model", "m", "--generator", "vllm", "--async", "false"]).async_mode is False


def test_yaml_keys_take_the_flag_spellings_too(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("model: m\nmax-turns: 3\ngenerator: vllm\nasync: true\n")
    args = parse_args(["--config", str(config), "--max-turns", "5"])
    assert (args.max_turns, args.async_mode) == (5, True)


def test_max_turns_is_the_envs_own_unless_given() -> None:
    """None: the env keeps the turn limit it registers (as `gym-swe eval`); a number overrides it."""
    assert parse_args(["--model", "m"]).max_turns is None
    assert parse_args(["--model", "m", "--max_turns", "3"]).max_turns == 3
    assert "--max_turns N" in build_parser().format_help()


@pytest.mark.parametrize(("loss", "low", "high", "scale"), [
    ("dapo", 0.2, 0.28, "group"),  # DAPO: clip-higher
    ("grpo", 0.2, 0.2, "group"),  # DeepSeekMath: symmetric
    ("dr_grpo", 0.2, 0.2, "none"),  # Dr. GRPO: no division by the group's std
    ("gspo", 3e-4, 4e-4, "group"),  # GSPO: the range of its sequence ratio
    ("cispo", 1.0, 0.28, "group"),  # MiniMax-M1: no lower bound on the IS weight
])  # fmt: skip
def test_each_loss_takes_its_papers_defaults_and_a_flag_given_wins(
    loss: str, low: float, high: float, scale: str
) -> None:
    args = parse_args(["--model", "m", "--loss", loss])
    assert (args.eps_low, args.eps_high, args.advantage_scale) == (low, high, scale)
    assert (Args(loss=loss).eps_low, Args(loss=loss).advantage_scale) == (low, scale)  # built in code too
    given = parse_args(["--model", "m", "--loss", loss, "--eps_high", "0.5", "--advantage_scale", "batch"])
    assert (given.eps_low, given.eps_high, given.advantage_scale) == (low, 0.5, "batch")


def test_help_says_which_defaults_each_loss_takes() -> None:
    text = " ".join(build_parser().format_help().split())
    assert set(LOSS_DEFAULTS) == {"dapo", "grpo", "dr_grpo", "gspo", "cispo"}
    assert "gspo: --eps_low 0.0003 --eps_high 0.0004 --advantage_scale group" in text
    assert "dr_grpo: --eps_low 0.2 --eps_high 0.2 --advantage_scale none" in text
    assert "default: the --loss's own" in text


def test_trl_names_are_aliases_where_the_knob_means_the_same(tmp_path: Path) -> None:
    args = parse_args(["--model", "m", "--num_generations", "3", "--num-iterations", "2", "--loss_type", "grpo",
                       "--epsilon", "0.1", "--epsilon_high", "0.3", "--scale_rewards", "batch",
                       "--mask_truncated_completions", "--vllm_importance_sampling_cap", "3",
                       "--lr_scheduler_type", "cosine", "--save_steps", "5", "--report_to", "none"])  # fmt: skip
    assert (args.group_size, args.updates_per_batch, args.loss, args.eps_low, args.eps_high) == (
        3,
        2,
        "grpo",
        0.1,
        0.3,
    )
    assert (args.advantage_scale, args.mask_truncated, args.tis_cap) == ("batch", True, 3.0)
    assert (args.lr_schedule, args.save_every, args.log_with) == ("cosine", 5, "none")
    assert (
        parse_args(
            ["--model", "m", "--generator", "vllm-server", "--vllm_server_base_url", "http://h"]
        ).base_url
        == "http://h"
    )
    config = tmp_path / "trl.yaml"
    config.write_text("model: m\nnum_generations: 6\n")
    assert parse_args(["--config", str(config)]).group_size == 6
    help_text = " ".join(build_parser().format_help().split())
    assert "Trajectories per task (G). (default: 4) TRL's name: --num_generations." in help_text
    with pytest.raises(ConfigError, match="Unknown loss 'bnpo'"):  # the values are this trainer's
        parse_args(["--model", "m", "--loss_type", "bnpo"])


@pytest.mark.parametrize(("flag", "answer"), [
    ("--max_completion_length", "a turn samples at most --max_new_tokens tokens, and a whole trajectory"),
    ("--per_device_train_batch_size", "a step's batch is --tasks_per_step groups of --group_size"),
    ("--gradient-accumulation-steps", "micro-batches of at most --max_tokens_per_microbatch tokens"),
    ("--use_vllm", "--generator vllm (in-process) or --generator vllm-server"),
    ("--bf16", "--mixed_precision bf16"),
    ("--max_steps", "--steps (optimisation steps"),
])  # fmt: skip
def test_trl_names_of_other_knobs_are_answered_with_the_knob_to_use(flag: str, answer: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{flag} is TRL's GRPOConfig knob; here: .*{re.escape(answer)}"):
        parse_args(["--model", "m", flag, "1"])


def test_config_key_errors_name_the_flags_as_they_are_written(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("model: m\nasync_mod: true\n")
    with pytest.raises(ConfigError) as refused:
        parse_args(["--config", str(config)])
    assert "Did you mean 'async'?" in str(refused.value) and "'async_mode'" not in str(refused.value)
    config.write_text("model: m\nmax_completion_length: 64\n")
    with pytest.raises(
        ConfigError, match="'max_completion_length' is TRL's GRPOConfig knob; here: a turn samples"
    ):
        parse_args(["--config", str(config)])
