"""The bound on one step: how many tool calls an action may run, and how long they may take together.

A per-command timeout bounds one command, not an action: an action of ten thousand ``sleep 100`` calls,
each within its timeout, would hold a step for hours (and a served session's sandbox with it). So every
step of a `gym_swe.envs.base.ToolEnv` runs under a `StepClock`:

- at most ``max_tool_calls`` calls run (32 by default); calls past it are not run;
- the calls run within ``max_step_seconds`` of wall time together (600 s by default: five times bash's
  default per-command timeout, and its longest, so that one call may still ask for the most bash allows).
  The tools see the sandbox through a `BoundedSandbox`, which clips each command's own timeout to the time
  left in the step, so the sandbox's timeout (which kills the command's whole process group) stops the
  command that is running when the time runs out; the calls after it are not run.
- ``ToolEnv.interrupt()`` stops a step from another thread (a served session whose client went away): the
  running command is stopped (`Sandbox.interrupt`) and no further command of the step starts.

The agent hears what happened in its observation (and in the chat), and ``info["step_limit"]`` names the
bound that cut the step (`STEP_LIMITS`). A cut step does not end the episode; see `ToolEnv.step`.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from gym_swe.errors import ConfigError
from gym_swe.sandbox.base import ExecResult, Sandbox

DEFAULT_MAX_TOOL_CALLS = 32
DEFAULT_MAX_STEP_SECONDS = 600.0
STEP_LIMITS = ("max_tool_calls", "max_step_seconds", "agent_timeout", "interrupted")
"""What ``info["step_limit"]`` says cut a step: the call cap, the step's time, the episode's agent time (a
task that bounds it: Harbor's ``[agent] timeout_sec``), or `ToolEnv.interrupt`."""


def check_step_bounds(max_tool_calls: Any, max_step_seconds: Any) -> None:
    """A `ConfigError` naming the kwarg and what it takes, for a cap or a time that is not one."""
    if not isinstance(max_tool_calls, int) or isinstance(max_tool_calls, bool) or max_tool_calls < 1:
        raise ConfigError(
            f"max_tool_calls must be an int >= 1 (the tool calls run per action), got {max_tool_calls!r}"
        )
    number = isinstance(max_step_seconds, (int, float)) and not isinstance(max_step_seconds, bool)
    if not number or not math.isfinite(max_step_seconds) or max_step_seconds <= 0:
        raise ConfigError(
            f"max_step_seconds must be a finite number of seconds > 0 (wall time of one step's tool calls), "
            f"got {max_step_seconds!r}"
        )


class StepClock:
    """The wall-clock bound of one step, and its stop from another thread."""

    def __init__(self, seconds: float, reason: str = "max_step_seconds") -> None:
        self.seconds = float(seconds)
        self._reason = reason
        self._deadline = time.monotonic() + self.seconds
        self._stopped = threading.Event()
        self.cut_command = False
        """Whether the bound (or a stop) ended a command that was running, rather than one not starting."""

    def left(self) -> float:
        """Seconds left to the step (0 once a stop came)."""
        if self._stopped.is_set():
            return 0.0
        return max(self._deadline - time.monotonic(), 0.0)

    def stop(self) -> None:
        """From any thread: no command of this step starts from now on."""
        self._stopped.set()

    @property
    def reason(self) -> str | None:
        """What has ended the step's time: ``"interrupted"`` (a stop), the bound's own reason
        (``"max_step_seconds"``, or ``"agent_timeout"`` when the episode's agent time is what was left),
        or None."""
        if self._stopped.is_set():
            return "interrupted"
        return self._reason if self.left() <= 0 else None


class BoundedSandbox:
    """A sandbox as one step's tools see it: every command's timeout clipped to the time left in the step,
    and no command started once that time is spent (or the step was stopped). A command that the clipped
    timeout ended comes back ``interrupted`` (the step's bound stopped it, not a timeout the call asked
    for). Everything else goes to the sandbox as it is."""

    def __init__(self, sandbox: Sandbox, clock: StepClock) -> None:
        self._sandbox = sandbox
        self._clock = clock
        self.workdir = sandbox.workdir

    def exec(
        self,
        command: str,
        timeout: float | None = 60.0,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        max_output: int | None = None,
        records: int | None = None,
    ) -> ExecResult:
        left = self._clock.left()
        if left <= 0:  # spent, or stopped: nothing more runs in this step
            self._clock.cut_command = True
            return ExecResult(exit_code=-1, stdout="", stderr="", interrupted=True)
        asked = math.inf if timeout is None else timeout
        clipped = min(asked, left)
        result = self._sandbox.exec(
            command, timeout=clipped, cwd=cwd, env=env, max_output=max_output, records=records
        )
        if result.timed_out and clipped < asked:
            self._clock.cut_command = True
            return dataclasses.replace(result, timed_out=False, interrupted=True)
        if result.interrupted and self._clock.reason == "interrupted":
            self._clock.cut_command = True
        return result

    def kill_processes(self) -> int:
        return self._sandbox.kill_processes()

    def interrupt(self) -> bool:
        return self._sandbox.interrupt()

    # The sandbox's own defaults apply where a tool gives no bound (None here).
    def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        if max_bytes is None:
            return self._sandbox.read_file(path)
        return self._sandbox.read_file(path, max_bytes)

    def manifest(self, path: str, max_files: int | None = None) -> list[list[Any]]:
        if max_files is None:
            return self._sandbox.manifest(path)
        return self._sandbox.manifest(path, max_files)

    def get_files(self, path: str, names: list[str], dest: str | Path, max_bytes: int | None = None) -> Path:
        if max_bytes is None:
            return self._sandbox.get_files(path, names, dest)
        return self._sandbox.get_files(path, names, dest, max_bytes)

    def write_file(self, path: str, content: str | bytes, mode: int | None = None) -> None:
        self._sandbox.write_file(path, content, mode)

    def upload(self, source: str | Path, dest: str | None = None) -> None:
        self._sandbox.upload(source, dest)

    def download(self, path: str, dest: str | Path) -> Path:
        return self._sandbox.download(path, dest)

    def close(self) -> None:
        """Nothing: the view does not own the sandbox (the env closes it when the episode ends)."""

    def __enter__(self) -> BoundedSandbox:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
