"""bash, submit and the toolbox against a real sandbox (a bubblewrap jail); the editor has test_editor.py."""

from __future__ import annotations

import pytest

from gym_swe.errors import ConfigError
from gym_swe.tools import DEFAULT_TOOLS, ToolBox, ToolCall, make_toolbox


def call(tools: ToolBox, box, name: str, **arguments):
    return tools.run(box, ToolCall(name, arguments))


# -- bash ---------------------------------------------------------------------------------------------------
def test_bash_returns_output_and_exit_code(tools, box) -> None:
    result = call(tools, box, "bash", command="echo hello; echo oops >&2; exit 2")
    assert result.output == "hello\noops\n[exit code 2]"
    assert not result.ok and result.metadata["exit_code"] == 2


def test_bash_timeout_is_reported(tools, box) -> None:
    result = call(tools, box, "bash", command="sleep 30", timeout=1)
    assert "[the command timed out after 1 s and was killed]" in result.output
    assert result.metadata["timed_out"]


def test_bash_output_is_bounded(box) -> None:
    tools = make_toolbox(options={"bash": {"max_output_chars": 1000}})
    result = call(tools, box, "bash", command="seq 1 100000")
    assert result.output.startswith("1\n2\n3\n")
    assert result.output.endswith("99999\n100000")
    assert "characters cut here" in result.output
    assert len(result.output) < 1100


def test_bash_empty_command_and_silent_command(tools, box) -> None:
    assert "the command is empty" in call(tools, box, "bash", command="   ").output
    assert call(tools, box, "bash", command="true").output == "[no output]"


def test_bash_wrong_argument_type_is_a_message(tools, box) -> None:
    result = call(tools, box, "bash", command=42)
    assert not result.ok
    assert result.output == "bash: argument 'command' must be a string, got int 42."


# -- submit and the toolbox ---------------------------------------------------------------------------------
def test_submit_ends_the_episode(tools, box) -> None:
    result = call(tools, box, "submit")
    assert result.done and result.ok


def test_unknown_tool_is_a_message_with_the_available_ones(tools, box) -> None:
    result = call(tools, box, "bsah", command="ls")
    assert not result.ok
    assert "Unknown tool 'bsah'. Did you mean 'bash'?" in result.output
    assert "'str_replace_editor'" in result.output


def test_make_toolbox_checks_names_and_options() -> None:
    assert make_toolbox().names == list(DEFAULT_TOOLS)
    with pytest.raises(ConfigError, match="Unknown tool 'shell'"):
        make_toolbox(["shell"])
    with pytest.raises(ConfigError, match="not in the toolbox"):
        make_toolbox(["bash"], options={"submit": {}})
