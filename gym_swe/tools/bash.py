"""``bash(command, timeout?)``: run a shell command in the sandbox."""

from __future__ import annotations

from typing import Any, ClassVar

from gym_swe.errors import ConfigError
from gym_swe.sandbox.base import Sandbox
from gym_swe.tools.base import Tool, ToolResult, bound_text


class BashTool(Tool):
    """Runs one command per call with bash, in the workspace. Each call is a fresh shell: ``cd`` and
    ``export`` do not carry over (chain with ``&&``). Output is stdout then stderr, bounded head and tail.

    Args:
        timeout: seconds a command may run when the call gives none.
        max_timeout: the most a call may ask for.
        max_output_chars: output kept per call (head and tail).
    """

    name: ClassVar[str] = "bash"
    description: ClassVar[str] = (
        "Run a bash command in the sandbox and return its output (stdout, then stderr) and exit code. "
        "Each call starts a fresh shell in the workspace directory, so `cd` and `export` do not carry over "
        "to the next call: chain commands with `&&` instead. There is no network. Commands that wait for "
        "input get none (stdin is empty), and commands that run too long are killed."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The bash command to run."},
            "timeout": {
                "type": "integer",
                "description": "Seconds the command may run before it is killed (optional).",
            },
        },
        "required": ["command"],
    }

    def __init__(self, timeout: int = 120, max_timeout: int = 600, max_output_chars: int = 12_000) -> None:
        if not 0 < timeout <= max_timeout:
            raise ConfigError(f"BashTool needs 0 < timeout <= max_timeout, got {timeout} and {max_timeout}")
        self.timeout = timeout
        self.max_timeout = max_timeout
        self.max_output_chars = max_output_chars

    def run(self, sandbox: Sandbox, command: str, timeout: int | None = None) -> ToolResult:
        if not command.strip():
            return ToolResult("bash: the command is empty. Give a command to run, e.g. `ls`.", ok=False)
        seconds = self.timeout if timeout is None else max(1, min(timeout, self.max_timeout))
        result = sandbox.exec(command, timeout=seconds)
        text = bound_text(result.output, self.max_output_chars)
        notes = []
        if result.timed_out:
            notes.append(f"[the command timed out after {seconds} s and was killed]")
        elif result.interrupted:
            notes.append("[the command was interrupted]")
        elif result.exit_code != 0:
            notes.append(f"[exit code {result.exit_code}]")
        if not text and not notes:
            text = "[no output]"
        output = "\n".join(part for part in (text.rstrip("\n"), *notes) if part)
        return ToolResult(
            output,
            ok=result.ok,
            metadata={
                "exit_code": result.exit_code,
                "timed_out": result.timed_out,
                "duration": result.duration,
            },
        )
