"""`gym-swe eval`: its flags read into `EvalOptions`, and the runs it refuses or reports as failed in one
line (a whole run: tests/rollout/test_eval.py; stopped runs: tests/rollout/test_run_eval.py)."""

from __future__ import annotations

import socket
from pathlib import Path

from gym_swe.cli import build_parser
from gym_swe.cli.eval import options
from gym_swe.rollout.run_eval import EvalOptions
from tests.cli.shell import gym_swe, one_line_error
from tests.conftest import require_bwrap

REQUIRED = ["eval", "--env", "CodeDebug-v0", "--generator", "hf", "--model", "m"]


def test_the_flags_defaults_are_eval_options_defaults() -> None:
    """What a command line leaves out, `run_eval` gets as `EvalOptions`'s own default."""
    assert options(build_parser().parse_args(REQUIRED)) == EvalOptions(
        env="CodeDebug-v0", generator="hf", model="m"
    )


def test_every_flag_reaches_eval_options() -> None:
    args = build_parser().parse_args([*REQUIRED, "--tasks", "t.jsonl", "--task-id", "a", "--task-id", "b",
                                      "--limit", "3", "--sandbox", "docker", "--base-url", "http://h", "--tokenizer",
                                      "tok", "--api-key", "key", "-n", "4", "--k", "2", "--k", "4", "--max-turns", "5",
                                      "--max-tokens", "6", "--max-model-len", "7", "--temperature", "0.5", "--top-p",
                                      "0.9", "--seed", "8", "--parallel", "9", "--out", "o.jsonl", "--export-sft",
                                      "s.jsonl"])  # fmt: skip
    assert options(args) == EvalOptions(
        env="CodeDebug-v0", generator="hf", model="m", tasks="t.jsonl", task_ids=("a", "b"), limit=3,
        sandbox="docker", base_url="http://h", tokenizer="tok", api_key="key", samples=4, ks=(2, 4), max_turns=5,
        max_tokens=6, max_model_len=7, temperature=0.5, top_p=0.9, seed=8, parallel=9, out="o.jsonl",
        export_sft="s.jsonl",
    )  # fmt: skip


def test_eval_seed_is_off_unless_given() -> None:
    assert build_parser().parse_args(REQUIRED).seed is None
    assert build_parser().parse_args([*REQUIRED, "--seed", "3"]).seed == 3


def test_an_unknown_env_suggests_the_nearest() -> None:
    line = one_line_error(gym_swe("eval", "--env", "SWEgym-v0", "--generator", "hf", "--model", "m"))
    assert "Unknown env" in line and "Did you mean 'SWEGym-v0'?" in line


def test_a_model_path_that_does_not_exist() -> None:
    line = one_line_error(
        gym_swe("eval", "--env", "CodeDebug-v0", "--generator", "hf", "--model", "/nonexistent")
    )
    assert "--model '/nonexistent': no such directory" in line


def test_a_model_directory_that_holds_no_model(tmp_path: Path) -> None:
    line = one_line_error(
        gym_swe("eval", "--env", "CodeDebug-v0", "--generator", "hf", "--model", str(tmp_path))
    )
    assert f"--model '{tmp_path}' could not be loaded" in line


def test_a_server_generator_without_base_url() -> None:
    line = one_line_error(
        gym_swe("eval", "--env", "CodeDebug-v0", "--generator", "vllm-server", "--model", "m")
    )
    assert "--generator vllm-server needs --base-url" in line


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_eval_against_a_dead_server_says_why_and_fails(tmp_path: Path) -> None:
    require_bwrap()
    out = tmp_path / "t.jsonl"
    result = gym_swe("eval", "--env", "CodeDebug-v0", "--generator", "openai-chat", "--model", "m", "--limit", "2",
                     "--base-url", f"http://127.0.0.1:{free_port()}", "--out", str(out))  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "pass@1" not in result.stdout
    assert "gym-swe: error: no episode ran: all 2 episodes failed." in result.stderr
    assert "2 x generator: " in result.stderr and "Connection refused" in result.stderr
    assert "Is the server at --base-url http://127.0.0.1:" in result.stderr
    # The progress bar shows before any episode ends, then moves as each one does.
    bar = result.stderr
    assert bar.index("0/2 episodes") < bar.index("1/2 episodes") < bar.index("2/2 episodes")
    assert "2 failed]" in bar
    assert len(out.read_text().splitlines()) == 2  # the failed episodes are kept, to read
