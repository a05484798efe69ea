"""`gym-swe eval`: its flags read into `EvalOptions`, and the runs it refuses or reports as failed in one
line (a whole run: tests/rollout/test_eval.py; stopped runs: tests/rollout/test_run_eval.py)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from gym_swe.cli import build_parser
from gym_swe.cli.eval import options
from gym_swe.rollout.run_eval import EvalOptions, summary_path
from tests.cli.shell import gym_swe, one_line_error
from tests.conftest import require_bwrap
from tests.rollout.scripted_http import Answer, scripted_server

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


MODELS = Answer(body={"object": "list", "data": [{"id": "tiny", "object": "model"}]})


@pytest.mark.parametrize(("flags", "said"), [
    (["-n", "2", "--k", "5"], "--k 5: pass@5 needs at least 5 samples per task, and -n is 2; give -n 5 or more, or a smaller --k"),
    (["-n", "0"], "-n must be a whole number >= 1, got 0"),
    (["--limit", "0"], "--limit must be a whole number >= 1 (leave it out for every task), got 0"),
    (["--k", "0"], "--k must be a whole number >= 1, got 0"),
    (["--parallel", "0"], "--parallel must be a whole number >= 1, got 0"),
    (["--max-turns", "-1"], "--max-turns must be a whole number >= 1, got -1"),
    (["--top-p", "0"], "--top-p must be in (0, 1], got 0.0"),
])  # fmt: skip
def test_impossible_values_are_refused_at_start(flags: list[str], said: str, tmp_path: Path) -> None:
    """Refused in one line before anything loads: the model named here would fail to load if it were tried."""
    out = tmp_path / "t.jsonl"
    line = one_line_error(gym_swe("eval", "--env", "CodeDebug-v0", "--generator", "hf", "--model", str(tmp_path),
                                  "--out", str(out), *flags))  # fmt: skip
    assert line == f"gym-swe: error: {said}" and not out.exists()


def test_an_earlier_runs_results_are_never_overwritten_without_a_word(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    out.write_text("{}\n")
    line = one_line_error(gym_swe("eval", "--env", "CodeDebug-v0", "--generator", "hf", "--model", str(tmp_path),
                                  "--out", str(out)))  # fmt: skip
    assert line == (
        f"gym-swe: error: {out} holds an earlier run's results: pass --overwrite to replace them, or another --out"
    )
    assert out.read_text() == "{}\n"
    assert summary_path(out) == tmp_path / "t.summary.json"  # where the run's settings and scores go
    # --overwrite goes on, to the next check (here: the model that does not load)
    line = one_line_error(gym_swe("eval", "--env", "CodeDebug-v0", "--generator", "hf", "--model", str(tmp_path),
                                  "--out", str(out), "--overwrite"))  # fmt: skip
    assert "could not be loaded" in line


@pytest.mark.parametrize("generator", ["openai-chat", "vllm-server"])
def test_a_dead_endpoint_is_found_before_any_episode(generator: str, tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    result = gym_swe("eval", "--env", "CodeDebug-v0", "--generator", generator, "--model", "m", "--tokenizer",
                     str(tmp_path), "--base-url", f"http://127.0.0.1:{free_port()}", "--out", str(out))  # fmt: skip
    line = one_line_error(result)
    assert line.startswith("gym-swe: error: --base-url http://127.0.0.1:") and "no " in line
    assert "answers there" in line and "Connection refused" in line
    assert not out.exists() and "episodes" not in result.stderr  # no episode started


def test_a_served_model_name_the_server_does_not_serve_lists_its_names(tmp_path: Path) -> None:
    with scripted_server(MODELS) as server:
        result = gym_swe("eval", "--env", "CodeDebug-v0", "--generator", "vllm-server", "--model", "tiyn",
                         "--tokenizer", str(tmp_path), "--base-url", server.url, "--out", str(tmp_path / "t.jsonl"))  # fmt: skip
    assert one_line_error(result) == (
        f"gym-swe: error: --model 'tiyn': the server at {server.url} serves no model of that name; it serves "
        "'tiny' (a server's name is its --served-model-name, else the path it loaded)"
    )
    assert "HTTP Request" not in result.stderr  # httpx's log of the probe stays quiet


def test_eval_whose_every_episode_failed_says_why_and_fails(tmp_path: Path) -> None:
    """The endpoint answers, but refuses every chat: each episode fails, the run exits 1 with the reasons."""
    require_bwrap()
    out = tmp_path / "t.jsonl"
    with scripted_server(MODELS, Answer(400, {"error": {"message": "no such model"}})) as server:
        result = gym_swe("eval", "--env", "CodeDebug-v0", "--generator", "openai-chat", "--model", "m", "--limit",
                         "2", "--base-url", server.url, "--out", str(out))  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "pass@1" not in result.stdout
    assert "gym-swe: error: no episode ran: all 2 episodes failed." in result.stderr
    assert "2 x generator: HTTP 400: " in result.stderr and "no such model" in result.stderr
    assert "HTTP Request" not in result.stderr
    # The progress bar shows before any episode ends, then moves as each one does.
    bar = result.stderr
    assert bar.index("0/2 episodes") < bar.index("1/2 episodes") < bar.index("2/2 episodes")
    assert "2 failed]" in bar
    assert len(out.read_text().splitlines()) == 2  # the failed episodes are kept, to read
    assert json.loads(summary_path(out).read_text())["settings"]["generator"] == "openai-chat"
