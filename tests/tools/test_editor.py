"""str_replace_editor (gym_swe.tools.editor) against a real sandbox: a bubblewrap jail, and the whole edit
cycle on Docker too. Every misuse, and every write the sandbox refuses, comes back as an observation the
model reads (``ok=False``), never as an exception to the env; files that are not UTF-8 text or too large to
read are refused the same way, and nothing is changed by a refused command."""

from __future__ import annotations

import pytest

from gym_swe.tools import ToolBox, ToolCall, make_toolbox

SOURCE = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"


@pytest.fixture
def solution(box) -> str:
    box.exec("chmod -R u+w /workspace && rm -rf /workspace/* && mkdir -p /workspace")
    box.write_file("/workspace/solution.py", SOURCE)
    return "/workspace/solution.py"


def call(tools: ToolBox, box, name: str, **arguments):
    return tools.run(box, ToolCall(name, arguments))


def edit(tools: ToolBox, box, **arguments):
    return call(tools, box, "str_replace_editor", **arguments)


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


# -- misuses: each an observation, the file untouched -------------------------------------------------------
@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"command": "view", "view_range": [1]}, "view_range must be two numbers [start, end], got [1]."),
        ({"command": "view", "view_range": [0, 3]}, "start must be between 1 and 7, the number of lines in"),
        ({"command": "view", "view_range": [3, 2]}, "end must be >= start, or -1 for the end."),
        ({"command": "view", "path": "/workspace", "view_range": [1, 2]}, "view_range applies to files"),
        ({"command": "create"}, "create needs `file_text`, the content of the new file."),
        (
            {"command": "create", "path": "/workspace", "file_text": "x"},
            "A directory already exists at /workspace",
        ),
        ({"command": "str_replace", "new_str": "x"}, "str_replace needs `old_str`"),
        ({"command": "str_replace", "old_str": "", "new_str": "x"}, "old_str is empty"),
        (
            {"command": "str_replace", "path": "/workspace", "old_str": "a"},
            "is a directory; this command needs a file.",
        ),
        ({"command": "insert", "new_str": "x"}, "insert needs `insert_line` (0 for the top) and `new_str`."),
        (
            {"command": "insert", "insert_line": -1, "new_str": "x"},
            "Invalid insert_line -1: it must be between 0 and 7.",
        ),
        ({"command": "undo_edit"}, "No edit of /workspace/solution.py to undo."),
        ({"command": "delete"}, "argument 'command' must be one of 'view', 'create', 'str_replace'"),
        ({"command": "view", "path": None}, "missing required argument 'path'"),
        ({"command": "str_replace", "old_str": "a", "new_str": "\ud800"}, "a lone surrogate"),
        ({"command": "view", "view_range": ["one", 2]}, "argument 'view_range[0]' must be an integer"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_misuses_are_observations_and_change_nothing(tools, box, solution, arguments, message) -> None:
    result = edit(tools, box, **{"path": solution, **arguments})
    assert not result.ok
    assert message in result.output
    assert box.read_file(solution).decode() == SOURCE


def test_writes_the_sandbox_refuses_are_observations(tools, box, solution) -> None:
    """open()'s refusals (a file where a directory should be, a read-only file or directory) reach the
    model as text: they raised out of env.step() before."""
    under_a_file = edit(tools, box, command="create", path=f"{solution}/inner.py", file_text="x = 1\n")
    assert not under_a_file.ok
    assert (
        under_a_file.output
        == f"Cannot write {solution}/inner.py: a part of its path is a file, not a directory."
    )
    box.exec("mkdir /workspace/locked && chmod 555 /workspace/locked && chmod 444 solution.py")
    locked_dir = edit(tools, box, command="create", path="/workspace/locked/new.py", file_text="x = 1\n")
    assert not locked_dir.ok and locked_dir.output == "Permission denied writing /workspace/locked/new.py."
    locked_file = edit(
        tools, box, command="str_replace", path=solution, old_str="def add", new_str="def plus"
    )
    assert not locked_file.ok and locked_file.output == f"Permission denied writing {solution}."
    assert box.read_file(solution).decode() == SOURCE
    # A refused write is no edit: there is nothing to undo.
    assert "No edit of" in edit(tools, box, command="undo_edit", path=solution).output


def test_an_undo_the_sandbox_refuses_can_be_tried_again(tools, box, solution) -> None:
    edited = edit(tools, box, command="insert", path=solution, insert_line=0, new_str="import os\n")
    created = edit(tools, box, command="create", path="/workspace/pkg/mod.py", file_text="X = 1\n")
    assert edited.ok and created.ok
    box.exec("chmod 444 solution.py && chmod 555 pkg")
    refused = edit(tools, box, command="undo_edit", path=solution)
    assert not refused.ok and refused.output == f"Permission denied writing {solution}."
    kept = edit(tools, box, command="undo_edit", path="/workspace/pkg/mod.py")
    assert not kept.ok and kept.output.startswith(
        "Could not undo the creation of /workspace/pkg/mod.py: rm: "
    )
    assert box.read_file("/workspace/pkg/mod.py") == b"X = 1\n"
    box.exec("chmod 644 solution.py && chmod 755 pkg")
    assert edit(tools, box, command="undo_edit", path=solution).ok
    assert box.read_file(solution).decode() == SOURCE
    assert edit(tools, box, command="undo_edit", path="/workspace/pkg/mod.py").ok
    assert box.exec("ls pkg").stdout == ""


def test_undo_walks_back_edit_by_edit(tools, box, solution) -> None:
    first = SOURCE.replace("def add", "def plus")
    assert edit(tools, box, command="str_replace", path=solution, old_str="def add", new_str="def plus").ok
    assert edit(tools, box, command="str_replace", path=solution, old_str="def sub", new_str="def minus").ok
    undone = edit(tools, box, command="undo_edit", path=solution)
    assert undone.ok and "     1\tdef plus(a, b):" in undone.output
    assert box.read_file(solution).decode() == first
    assert edit(tools, box, command="undo_edit", path=solution).ok
    assert box.read_file(solution).decode() == SOURCE
    assert not edit(tools, box, command="undo_edit", path=solution).ok


def test_undo_restores_a_file_that_bash_removed(tools, box, solution) -> None:
    assert edit(tools, box, command="str_replace", path=solution, old_str="def add", new_str="def plus").ok
    box.exec("rm solution.py")
    assert edit(tools, box, command="undo_edit", path=solution).ok
    assert box.read_file(solution).decode() == SOURCE


def test_permission_denied_reading_is_an_observation(tools, box, solution) -> None:
    box.exec("chmod 000 solution.py")
    result = edit(tools, box, command="view", path=solution)
    assert not result.ok and result.output == f"Permission denied reading {solution}."


def test_insert_into_a_file_without_a_final_newline(tools, box, solution) -> None:
    box.write_file("/workspace/flat.txt", "a\nb")
    assert edit(tools, box, command="insert", path="/workspace/flat.txt", insert_line=2, new_str="c").ok
    assert box.read_file("/workspace/flat.txt") == b"a\nb\nc"
    assert edit(tools, box, command="insert", path="/workspace/flat.txt", insert_line=1, new_str="x\ny\n").ok
    assert box.read_file("/workspace/flat.txt") == b"a\nx\ny\nb\nc"


# -- text that is not UTF-8, and text that is ---------------------------------------------------------------
def test_a_file_that_is_not_utf8_is_refused_by_every_command_and_left_as_it_is(tools, box, solution) -> None:
    latin1 = "caf\xe9 = 1\n".encode("latin-1")
    box.write_file("/workspace/latin1.py", latin1)
    for arguments in (
        {"command": "view"},
        {"command": "view", "view_range": [1, 1]},
        {"command": "str_replace", "old_str": "caf", "new_str": "tea"},
        {"command": "insert", "insert_line": 0, "new_str": "# x\n"},
    ):
        result = edit(tools, box, path="/workspace/latin1.py", **arguments)
        assert not result.ok, arguments
        assert (
            result.output
            == "/workspace/latin1.py is not UTF-8 text (a binary file?); use bash to inspect it."
        )
    assert box.read_file("/workspace/latin1.py") == latin1


def test_non_ascii_text_is_edited_as_utf8(tools, box, solution) -> None:
    text = "name = 'café'\nemoji = '🙂'\n"
    assert edit(tools, box, command="create", path="/workspace/uni.py", file_text=text).ok
    assert box.read_file("/workspace/uni.py") == text.encode("utf-8")
    result = edit(tools, box, command="str_replace", path="/workspace/uni.py", old_str="café", new_str="thé")
    assert result.ok and "     1\tname = 'thé'" in result.output
    assert box.read_file("/workspace/uni.py") == text.replace("café", "thé").encode("utf-8")
    assert "     2\temoji = '🙂'" in edit(tools, box, command="view", path="/workspace/uni.py").output


# -- big files ----------------------------------------------------------------------------------------------
def test_a_long_file_is_viewed_head_and_tail_and_edited_in_the_middle(box, solution) -> None:
    tools = make_toolbox(options={"str_replace_editor": {"max_output_chars": 2000}})
    box.exec("seq -f 'line %g' 1 200000 > long.txt")
    path = "/workspace/long.txt"
    whole = edit(tools, box, command="view", path=path)
    assert whole.ok
    assert "     1\tline 1\n" in whole.output and whole.output.endswith(
        "200000\tline 200000\n200001\t\n[The file is long: use view_range to see the part that was cut.]"
    )
    assert "characters cut here" in whole.output and len(whole.output) < 2300
    part = edit(tools, box, command="view", path=path, view_range=[100000, 100001])
    assert part.output.endswith(":\n100000\tline 100000\n100001\tline 100001")
    changed = edit(tools, box, command="str_replace", path=path, old_str="line 100000\n", new_str="middle\n")
    assert changed.ok and "\n100000\tmiddle\n" in changed.output and len(changed.output) < 2300
    assert box.exec("sed -n 99999,100001p long.txt").stdout == "line 99999\nmiddle\nline 100001\n"


def test_a_file_too_large_to_read_is_refused_not_raised(tools, box, solution) -> None:
    box.exec("truncate -s 70M huge.txt")  # sparse: past the host's 64 MiB read cap, nothing written
    for arguments in ({"command": "view"}, {"command": "str_replace", "old_str": "a", "new_str": "b"}):
        result = edit(tools, box, path="/workspace/huge.txt", **arguments)
        assert not result.ok
        assert result.output == (
            "str_replace_editor: the sandbox refused the request: /workspace/huge.txt is larger than 67108864 bytes"
        )
    assert box.exec("stat -c %s huge.txt").stdout.strip() == str(70 * 1024 * 1024)


# -- every backend ------------------------------------------------------------------------------------------
def test_an_edit_cycle_on_each_backend(sandbox) -> None:
    """The editor works through the sandbox's file operations, so it is the same on every backend."""
    tools = make_toolbox()
    path = f"{sandbox.workdir}/pkg/mod.py"
    assert edit(tools, sandbox, command="create", path=path, file_text="a = 1\nb = 2\n").ok
    assert edit(tools, sandbox, command="str_replace", path=path, old_str="b = 2", new_str="b = 3").ok
    assert edit(tools, sandbox, command="insert", path=path, insert_line=2, new_str="c = 4").ok
    assert sandbox.read_file(path) == b"a = 1\nb = 3\nc = 4\n"
    view = edit(tools, sandbox, command="view", path=path, view_range=[2, -1])
    assert view.output.endswith("     2\tb = 3\n     3\tc = 4\n     4\t")
    listing = edit(tools, sandbox, command="view", path=sandbox.workdir)
    assert f"{sandbox.workdir}/pkg/mod.py" in listing.output
    sandbox.write_file(f"{sandbox.workdir}/blob.bin", b"\xff\xfe\x00")
    assert (
        "is not UTF-8 text" in edit(tools, sandbox, command="view", path=f"{sandbox.workdir}/blob.bin").output
    )
    for _ in range(2):
        assert edit(tools, sandbox, command="undo_edit", path=path).ok
    assert sandbox.read_file(path) == b"a = 1\nb = 2\n"
    assert (
        edit(tools, sandbox, command="undo_edit", path=path).output
        == f"Undid the creation of {path}; the file is gone."
    )
    with pytest.raises(FileNotFoundError):
        sandbox.read_file(path)
