"""The gym-swe command, run as a user runs it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import require_bwrap, require_docker

COMMANDS = ["envs", "play", "validate", "prepare", "eval", "view", "images", "images build", "sandbox",
            "sandbox prune"]  # fmt: skip


def gym_swe(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gym_swe.cli", *args], capture_output=True, text=True,
                          env=env, timeout=timeout)  # fmt: skip


def test_help_lists_the_commands() -> None:
    result = gym_swe("--help")
    assert result.returncode == 0
    assert "images" in result.stdout and "sandbox" in result.stdout


def test_unknown_command_fails_with_the_choices() -> None:
    result = gym_swe("imagez")
    assert result.returncode == 2
    assert "invalid choice: 'imagez'" in result.stderr


@pytest.mark.docker
def test_images_build_skips_an_up_to_date_image() -> None:
    require_docker()
    result = gym_swe("images", "build", "--method", "debootstrap")
    assert result.returncode == 0, result.stderr
    assert "up to date" in result.stdout


def test_sandbox_prune_reports_what_it_removed() -> None:
    result = gym_swe("sandbox", "prune")
    assert result.returncode == 0, result.stderr
    assert "local: removed" in result.stdout
    assert "docker:" in result.stdout


def test_envs_lists_the_envs_with_their_task_sources() -> None:
    result = gym_swe("envs")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.split()[:3] == ["CodeDebug-v0", "bundled", "48"] for line in lines)
    assert any(line.split()[:3] == ["SWEGym-v0", "bundled", "12"] for line in lines)
    assert any(line.startswith("SWEGym-v0") and "swe-bench-verified" in line for line in lines)


def test_play_an_episode_in_the_terminal() -> None:
    from tests.conftest import require_bwrap

    require_bwrap()
    session = (
        "python test_solution.py\n/help\n"
        + '{"name": "bash", "arguments": {"command": "echo typed-json"}}\nsubmit\n'
    )
    result = subprocess.run(
        [sys.executable, "-m", "gym_swe.cli", "play", "CodeDebug-v0", "--task-id", "GymSwe/0"],
        input=session, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "run_length_encode" in result.stdout and "AssertionError" in result.stdout
    assert "typed-json" in result.stdout and "plain shell command" in result.stdout
    assert "episode over (submitted): 1/8 hidden tests passed, reward 0.00" in result.stdout


# -- --help ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_help_has_an_example(command: str) -> None:
    result = gym_swe(*command.split(), "--help")
    assert result.returncode == 0, result.stderr
    examples = result.stdout.split("examples:\n", 1)[1]
    assert f"gym-swe {command}" in examples


def test_help_shows_the_defaults_and_what_every_option_is() -> None:
    result = gym_swe("eval", "--help")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())  # argparse wraps lines
    assert "tokens per turn (default: 1024)" in text and "episodes at once (default: 8)" in text
    assert "where agent commands run: local (a bubblewrap jail per episode) or docker (a container) " \
           "(default: local)" in text  # fmt: skip
    assert "--seed SEED a run seed: makes a run repeatable (hf); samples still differ --parallel" in text
    assert "(default: None)" not in text
    play = " ".join(gym_swe("play", "--help").stdout.split())
    assert "--sandbox {local,docker} where agent commands run" in play


# -- errors: one line, exit 2 -----------------------------------------------------------------------------
def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("gym-swe: error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_an_unknown_env_suggests_the_nearest() -> None:
    for args in (
        ["play", "CodeDebg-v0"],
        ["eval", "--env", "SWEgym-v0", "--generator", "hf", "--model", "m"],
    ):
        line = one_line_error(gym_swe(*args))
        assert "Unknown env" in line and (
            "Did you mean 'CodeDebug-v0'?" in line or "Did you mean 'SWEGym-v0'?" in line
        )


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


def test_view_a_missing_or_unreadable_file(tmp_path: Path) -> None:
    assert "missing.jsonl: no such file" in one_line_error(gym_swe("view", str(tmp_path / "missing.jsonl")))
    (tmp_path / "notjson").write_text("hello\n")
    line = one_line_error(gym_swe("view", str(tmp_path / "notjson")))
    assert "notjson, line 1: not a trajectory" in line
    (tmp_path / "list.jsonl").write_text('{"task_id": "a"}\n[1, 2]\n')
    assert "list.jsonl, line 2: not a trajectory" in one_line_error(
        gym_swe("view", str(tmp_path / "list.jsonl"))
    )


def test_humanevalpack_offline_says_how_to_use_a_local_file(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    offline = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path)}
    line = one_line_error(gym_swe("play", "CodeDebug-v0", "--tasks", "humanevalpack", env=offline))
    assert "bigcode/humanevalpack" in line and ".to_json('humanevalpack.jsonl')" in line
    assert "--tasks humanevalpack.jsonl" in line


# -- eval -------------------------------------------------------------------------------------------------
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


def test_eval_seed_is_off_unless_given() -> None:
    from gym_swe.cli import build_parser

    base = ["eval", "--env", "CodeDebug-v0", "--generator", "hf", "--model", "m"]
    assert build_parser().parse_args(base).seed is None
    assert build_parser().parse_args([*base, "--seed", "3"]).seed == 3


# -- play -------------------------------------------------------------------------------------------------
class Terminal:
    """`gym-swe play` with its output read as it comes, for typing and Ctrl-C at the right moments."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gym_swe.cli", "play", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        self.output = ""
        self.read = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        while char := self.process.stdout.read(1):
            self.output += char

    def expect(self, text: str, timeout: float = 120) -> str:
        """Wait until ``text`` comes (after what earlier calls consumed); returns the output up to it."""
        deadline = time.monotonic() + timeout
        while (found := self.output.find(text, self.read)) < 0:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never came; the output was:\n{self.output[-3000:]}")
            time.sleep(0.05)
        seen, self.read = self.output[self.read : found + len(text)], found + len(text)
        return seen

    def type(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text)
        self.process.stdin.flush()

    def close(self) -> int:
        if self.process.poll() is None:
            self.process.kill()
        code = self.process.wait(timeout=60)
        self._reader.join(timeout=10)
        return code


def test_play_takes_a_pasted_multi_line_call_and_counts_turns() -> None:
    require_bwrap()
    terminal = Terminal("CodeDebug-v0", "--task-id", "GymSwe/0")
    try:
        terminal.expect("[turn 1/30] > ")
        terminal.type('<tool_call>{"name": "str_replace_editor",\n'
                      '             "arguments": {"command": "view", "path": "/workspace"}}</tool_call>\n')  # fmt: skip
        seen = terminal.expect("[turn 2/30] > ")
        assert "solution.py" in seen and "command not found" not in seen
        terminal.type('{"name": "bash",\n"arguments": {"command": "echo two-lines"}}\n')
        assert "two-lines" in terminal.expect("[turn 3/30] > ")
        # A call that does not parse gets the hint in the format the prompt shows.
        terminal.type('{"name": "bash", "arguments": {"command": "ls"}\n\n')
        hint = terminal.expect("[turn 4/30] > ")
        assert '"arguments": {"command": "ls"}' in hint and '"parameters"' not in hint
        terminal.type("/quit\n")
        terminal.expect("quit without grading")
        assert terminal.process.wait(timeout=60) == 0
    finally:
        terminal.close()


def test_play_ctrl_c_does_not_end_the_game() -> None:
    require_bwrap()
    terminal = Terminal("CodeDebug-v0", "--task-id", "GymSwe/0")
    try:
        terminal.expect("[turn 1/30] > ")
        terminal.process.send_signal(signal.SIGINT)  # at the prompt
        terminal.expect("type /quit or press Ctrl-D to end the game")
        terminal.type("sleep 3 && echo slept\n")
        terminal.expect("... running")
        terminal.process.send_signal(signal.SIGINT)  # while a command runs
        terminal.expect("^C: ")
        terminal.expect("[turn 2/30] > ")
        terminal.type("echo still-playing\n")
        terminal.expect("still-playing")
        terminal.type("submit\n")
        terminal.expect("=== episode over (submitted)")
        assert terminal.process.wait(timeout=120) == 0
    finally:
        terminal.close()


def test_play_ctrl_c_stops_a_running_command() -> None:
    require_bwrap()
    from gym_swe.sandbox.local import LocalSandbox

    if not callable(getattr(LocalSandbox, "interrupt", None)):
        pytest.skip("the local sandbox cannot stop a running command yet (Sandbox.interrupt)")
    terminal = Terminal("CodeDebug-v0", "--task-id", "GymSwe/0")
    try:
        terminal.expect("[turn 1/30] > ")
        terminal.type("sleep 600\n")
        terminal.expect("... running (Ctrl-C stops it)")
        terminal.process.send_signal(signal.SIGINT)
        terminal.expect("^C: stopping the command")
        terminal.expect("[turn 2/30] > ", timeout=60)
        terminal.type("/quit\n")
        assert terminal.process.wait(timeout=60) == 0
    finally:
        terminal.close()


def test_play_swegym_shows_its_paths_and_the_test_groups() -> None:
    require_bwrap()
    result = subprocess.run(
        [sys.executable, "-m", "gym_swe.cli", "play", "SWEGym-v0", "--task-id", "gymswe__semverkit-1"],
        input="/help\nsubmit\n", capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert '"path": "/testbed"' in result.stdout and "/workspace" not in result.stdout
    assert "=== episode over (submitted)" in result.stdout
    grade = result.stdout.split("=== episode over", 1)[1]
    assert " FAIL_TO_PASS " in grade and " PASS_TO_PASS " in grade
    failing = [line for line in grade.splitlines() if " FAIL_TO_PASS " in line]
    assert failing and all(line.split()[0] != "passed" for line in failing)  # unfixed: they fail


# -- view -------------------------------------------------------------------------------------------------
def test_view_filters_by_outcome_and_reward(tmp_path: Path) -> None:
    from gym_swe.rollout.trajectory import Trajectory, save_jsonl

    save_jsonl([Trajectory("a", reward=1.0, grade={"resolved": True}), Trajectory("b", grade={"resolved": False}),
                Trajectory("c", error="generator: down")], tmp_path / "t.jsonl")  # fmt: skip
    result = gym_swe("view", str(tmp_path / "t.jsonl"), "--outcome", "failed", "-o", str(tmp_path / "f.html"))
    assert result.returncode == 0, result.stderr
    assert "1 of 3 episodes" in result.stdout
    page = (tmp_path / "f.html").read_text()
    assert page.count('class="episode"') == 1 and ">c #0<" in page
    result = gym_swe("view", str(tmp_path / "t.jsonl"), "--min-reward", "0.5", "-o", str(tmp_path / "r.html"))
    assert "1 of 3 episodes" in result.stdout and ">a #0<" in (tmp_path / "r.html").read_text()


def test_prepare_and_validate_options_for_real_swe_tasks() -> None:
    prepare = gym_swe("prepare", "--help").stdout
    assert "--task-id TASK_ID" in prepare and "only this task (repeatable)" in prepare
    assert "owner/name.git" in prepare and "JSON file mapping" in prepare
    validate = gym_swe("validate", "--help").stdout
    assert "--exclude-test ID" in validate and "-v, --verbose" in validate


def test_a_repo_source_that_is_not_there_is_one_line(tmp_path: Path) -> None:
    result = gym_swe("prepare", "--tasks", "bundled", "--repo-source", str(tmp_path / "mirrors"))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"gym-swe: error: repo source '{tmp_path / 'mirrors'}' does not exist")
    assert len(result.stderr.strip().splitlines()) == 1
    result = gym_swe("prepare", "--tasks", "bundled", "--task-id", "gymswe__semverkit-99")
    assert result.returncode == 2 and "Did you mean" in result.stderr
