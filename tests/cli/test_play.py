"""`gym-swe play`: an episode in the terminal, typed as a user types it (pasted calls, Ctrl-C, /quit)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.cli.shell import gym_swe, one_line_error
from tests.conftest import require_bwrap


def test_an_unknown_env_suggests_the_nearest() -> None:
    line = one_line_error(gym_swe("play", "CodeDebg-v0"))
    assert "Unknown env" in line and "Did you mean 'CodeDebug-v0'?" in line


def test_humanevalpack_offline_says_how_to_use_a_local_file(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    offline = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path)}
    line = one_line_error(gym_swe("play", "CodeDebug-v0", "--tasks", "humanevalpack", env=offline))
    assert "bigcode/humanevalpack" in line and ".to_json('humanevalpack.jsonl')" in line
    assert "--tasks humanevalpack.jsonl" in line


def test_play_an_episode_in_the_terminal() -> None:
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


# -- in a terminal, typed as it comes ---------------------------------------------------------------------
def _interruptible() -> None:
    """Ctrl-C reaches the game as it does from a terminal, however the suite was started: a shell that
    starts a job in the background (`make test &`) ignores SIGINT in it, and children inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Terminal:
    """`gym-swe play` with its output read as it comes, for typing and Ctrl-C at the right moments."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gym_swe.cli", "play", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=_interruptible,
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
