"""str_replace_editor (gym_swe.tools.editor) against a real sandbox (a bubblewrap jail)."""

from __future__ import annotations

import pytest

from gym_swe.tools import ToolBox, ToolCall

SOURCE = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"


@pytest.fixture
def solution(box) -> str:
    box.write_file("/workspace/solution.py", SOURCE)
    return "/workspace/solution.py"


def call(tools: ToolBox, box, name: str, **arguments):
    return tools.run(box, ToolCall(name, arguments))


# -- editor -------------------------------------------------------------------------------------------------
def test_view_numbers_lines(tools, box, solution) -> None:
    result = call(tools, box, "str_replace_editor", command="view", path=solution)
    assert result.ok
    assert "     1\tdef add(a, b):\n     2\t    return a - b\n" in result.output
    ranged = call(tools, box, "str_replace_editor", command="view", path=solution, view_range=[5, -1])
    assert "     5\tdef sub(a, b):\n     6\t    return a - b" in ranged.output
    assert "def add" not in ranged.output


def test_view_range_errors(tools, box, solution) -> None:
    result = call(tools, box, "str_replace_editor", command="view", path=solution, view_range=[50, 60])
    assert not result.ok and "start must be between 1 and 7" in result.output


def test_view_directory(tools, box, solution) -> None:
    box.exec("mkdir -p pkg/sub && touch pkg/sub/x.py pkg/.hidden")
    result = call(tools, box, "str_replace_editor", command="view", path="/workspace")
    assert "/workspace/solution.py" in result.output and "/workspace/pkg/sub" in result.output
    assert ".hidden" not in result.output


def test_str_replace_needs_a_unique_match(tools, box, solution) -> None:
    twice = call(
        tools,
        box,
        "str_replace_editor",
        command="str_replace",
        path=solution,
        old_str="    return a - b",
        new_str="    return a + b",
    )
    assert not twice.ok
    assert "occurs 2 times" in twice.output and "lines [2, 6]" in twice.output
    missing = call(
        tools,
        box,
        "str_replace_editor",
        command="str_replace",
        path=solution,
        old_str="return a * b",
        new_str="x",
    )
    assert not missing.ok and "did not appear verbatim" in missing.output
    assert box.read_file(solution).decode() == SOURCE  # nothing changed


def test_str_replace_edits_and_shows_the_snippet_then_undo(tools, box, solution) -> None:
    old, new = "def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b"
    result = call(
        tools, box, "str_replace_editor", command="str_replace", path=solution, old_str=old, new_str=new
    )
    assert result.ok
    assert "     2\t    return a + b" in result.output
    assert box.read_file(solution).decode() == SOURCE.replace("return a - b", "return a + b", 1)
    undo = call(tools, box, "str_replace_editor", command="undo_edit", path=solution)
    assert undo.ok
    assert box.read_file(solution).decode() == SOURCE
    again = call(tools, box, "str_replace_editor", command="undo_edit", path=solution)
    assert not again.ok and "No edit" in again.output


def test_insert(tools, box, solution) -> None:
    top = call(
        tools,
        box,
        "str_replace_editor",
        command="insert",
        path=solution,
        insert_line=0,
        new_str="import math\n",
    )
    assert top.ok
    assert box.read_file(solution).decode() == "import math\n" + SOURCE
    end = call(
        tools, box, "str_replace_editor", command="insert", path=solution, insert_line=8, new_str="# end"
    )
    assert end.ok, end.output
    assert box.read_file(solution).decode() == "import math\n" + SOURCE + "# end\n"
    bad = call(tools, box, "str_replace_editor", command="insert", path=solution, insert_line=99, new_str="x")
    assert not bad.ok and "between 0 and" in bad.output


def test_create_refuses_to_overwrite_and_undo_removes(tools, box, solution) -> None:
    refused = call(tools, box, "str_replace_editor", command="create", path=solution, file_text="x")
    assert not refused.ok and "already exists" in refused.output
    made = call(
        tools, box, "str_replace_editor", command="create", path="/workspace/new/mod.py", file_text="X = 1\n"
    )
    assert made.ok
    assert box.read_file("/workspace/new/mod.py") == b"X = 1\n"
    call(tools, box, "str_replace_editor", command="undo_edit", path="/workspace/new/mod.py")
    with pytest.raises(FileNotFoundError):
        box.read_file("/workspace/new/mod.py")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/etc/passwd", "outside the workspace /workspace"),
        ("/workspace/../etc/passwd", "outside the workspace"),
        ("solution.py", "is not absolute. Did you mean /workspace/solution.py?"),
        ("/workspace/nope.py", "does not exist"),
    ],
)
def test_bad_paths_are_refused(tools, box, solution, path, message) -> None:
    result = call(tools, box, "str_replace_editor", command="view", path=path)
    assert not result.ok and message in result.output


def test_binary_file_is_refused(tools, box) -> None:
    box.write_file("/workspace/blob", bytes([0xFF, 0xFE, 0x00]))
    result = call(tools, box, "str_replace_editor", command="view", path="/workspace/blob")
    assert not result.ok and "not UTF-8" in result.output


def test_arguments_of_other_commands_are_ignored(tools, box, solution) -> None:
    result = call(
        tools, box, "str_replace_editor", command="view", path=solution, file_text=None, old_str="x"
    )
    assert result.ok and "def add" in result.output


def test_editor_reset_forgets_history(tools, box, solution) -> None:
    call(tools, box, "str_replace_editor", command="insert", path=solution, insert_line=0, new_str="# x\n")
    tools.reset()
    assert "No edit" in call(tools, box, "str_replace_editor", command="undo_edit", path=solution).output
