"""``str_replace_editor``: view, create and edit files, the editor coding models are trained with.

Commands: ``view`` (a file with line numbers, optionally ``view_range=[start, end]``; a directory two levels
deep), ``create`` (a new file; an existing one is refused), ``str_replace`` (``old_str`` must occur exactly
once), ``insert`` (``new_str`` after line ``insert_line``; 0 is the top) and ``undo_edit`` (the last edit of
a file). Paths are absolute and must lie inside the workspace. The file work happens through the sandbox's
file operations, so it is the same on every backend.
"""

from __future__ import annotations

import posixpath
import shlex
from typing import Any, ClassVar

from gym_swe.sandbox.base import Sandbox
from gym_swe.tools.base import Tool, ToolResult, bound_text

# Each command and the arguments it takes besides `path`.
ARGUMENTS = {
    "view": ("view_range",),
    "create": ("file_text",),
    "str_replace": ("old_str", "new_str"),
    "insert": ("insert_line", "new_str"),
    "undo_edit": (),
}
COMMANDS = list(ARGUMENTS)
SNIPPET_LINES = 4  # lines of context shown around an edit


class _Refused(Exception):
    """A misuse of the editor; its message is for the model."""


class StrReplaceEditor(Tool):
    """Args:
    max_output_chars: most characters a ``view`` returns (head and tail) before asking for a view_range.
    """

    name: ClassVar[str] = "str_replace_editor"
    description: ClassVar[str] = (
        "View, create and edit files.\n"
        "* `view` shows a file with line numbers (like `cat -n`), or a directory's files two levels deep. "
        "Use `view_range` [start, end] for part of a long file (end -1 means to the end).\n"
        "* `create` writes a new file with `file_text`; it does not overwrite an existing file.\n"
        "* `str_replace` replaces `old_str` with `new_str` in the file; `old_str` must match exactly one "
        "place, whitespace included, so give enough surrounding lines to make it unique.\n"
        "* `insert` inserts `new_str` after line `insert_line` (0 inserts at the top).\n"
        "* `undo_edit` reverts the last edit made to the file.\n"
        "Paths must be absolute, inside the workspace."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "enum": COMMANDS, "description": "The editor command to run."},
            "path": {"type": "string", "description": "Absolute path of the file or directory."},
            "file_text": {"type": "string", "description": "`create`: the content of the new file."},
            "old_str": {"type": "string", "description": "`str_replace`: the exact text to replace."},
            "new_str": {
                "type": "string",
                "description": "`str_replace`: the replacement (empty deletes); `insert`: the text to add.",
            },
            "insert_line": {"type": "integer", "description": "`insert`: the line after which to insert."},
            "view_range": {
                "type": "array",
                "items": {"type": "integer"},
                "description": "`view`: [start, end] line numbers, 1-based, inclusive; end -1 is the end.",
            },
        },
        "required": ["command", "path"],
    }

    def __init__(self, max_output_chars: int = 16_000) -> None:
        self.max_output_chars = max_output_chars
        self._history: dict[str, list[str | None]] = {}  # path -> earlier contents (None: did not exist)

    def reset(self) -> None:
        self._history.clear()

    def run(self, sandbox: Sandbox, command: str, path: str, **arguments: Any) -> ToolResult:
        # Arguments another command takes are ignored, not refused: models often send every parameter of
        # the schema, with nulls for the unused ones.
        taken = {
            key: value for key, value in arguments.items() if key in ARGUMENTS[command] and value is not None
        }
        try:
            path = self._check_path(sandbox, path)
            return ToolResult(getattr(self, f"_{command}")(sandbox, path, **taken))
        except _Refused as refusal:
            return ToolResult(str(refusal), ok=False)

    # -- commands ------------------------------------------------------------------------------------------
    def _view(self, sandbox: Sandbox, path: str, view_range: list[int] | None = None) -> str:
        try:
            lines = self._read(sandbox, path, directory_ok=True).split("\n")
        except IsADirectoryError:
            if view_range is not None:
                raise _Refused(
                    "view_range applies to files; to look into a directory, view it without one."
                ) from None
            listing = sandbox.exec(
                f"find {shlex.quote(path)} -maxdepth 2 -not -path '*/.*' -not -path '*/__pycache__*' "
                "| sort | head -n 400",
                timeout=30,
            )
            return (
                f"Files and directories up to 2 levels deep in {path}, hidden ones left out:\n"
                f"{listing.stdout.rstrip()}"
            )
        start, end = 1, len(lines)
        if view_range is not None:
            if len(view_range) != 2:
                raise _Refused(f"view_range must be two numbers [start, end], got {view_range}.")
            start, end = view_range
            if not 1 <= start <= len(lines):
                raise _Refused(
                    f"Invalid view_range {view_range}: start must be between 1 and {len(lines)}, the number "
                    f"of lines in {path}."
                )
            if end == -1 or end > len(lines):
                end = len(lines)
            if end < start:
                raise _Refused(f"Invalid view_range {view_range}: end must be >= start, or -1 for the end.")
        text = _numbered(lines[start - 1 : end], start)
        if len(text) > self.max_output_chars:
            text = bound_text(text, self.max_output_chars) + (
                "\n[The file is long: use view_range to see the part that was cut.]"
            )
        return f"Here's the result of running `cat -n` on {path}:\n{text}"

    def _create(self, sandbox: Sandbox, path: str, file_text: str | None = None) -> str:
        if file_text is None:
            raise _Refused("create needs `file_text`, the content of the new file.")
        kind = _kind(sandbox, path)
        if kind != "missing":
            raise _Refused(
                f"{'A directory' if kind == 'dir' else 'A file'} already exists at {path}; `create` does not "
                "overwrite. Edit it with `str_replace` or `insert`."
            )
        self._write(sandbox, path, file_text)
        self._history.setdefault(path, []).append(None)
        return f"File created successfully at: {path}"

    def _str_replace(self, sandbox: Sandbox, path: str, old_str: str | None = None, new_str: str = "") -> str:
        if old_str is None:
            raise _Refused("str_replace needs `old_str`, the exact text to replace (and `new_str`).")
        if old_str == "":
            raise _Refused("old_str is empty; give the exact text to replace. To add text, use `insert`.")
        content = self._read(sandbox, path)
        count = content.count(old_str)
        if count == 0:
            raise _Refused(
                f"No replacement was performed: old_str did not appear verbatim in {path}. Check whitespace "
                "and indentation (view the file to copy the exact lines)."
            )
        if count > 1:
            starts, index = [], content.find(old_str)
            while index != -1:
                starts.append(content.count("\n", 0, index) + 1)
                index = content.find(old_str, index + 1)
            raise _Refused(
                f"No replacement was performed: old_str occurs {count} times in {path}, at lines {starts}. "
                "Include more surrounding lines so it matches one place."
            )
        new_content = content.replace(old_str, new_str, 1)
        self._write(sandbox, path, new_content)
        self._history.setdefault(path, []).append(content)
        first_line = content[: content.find(old_str)].count("\n") + 1
        return self._edited(path, new_content, first_line, new_str.count("\n") + 1)

    def _insert(
        self, sandbox: Sandbox, path: str, insert_line: int | None = None, new_str: str | None = None
    ) -> str:
        if insert_line is None or new_str is None:
            raise _Refused("insert needs `insert_line` (0 for the top) and `new_str`.")
        content = self._read(sandbox, path)
        lines = content.split("\n")
        if not 0 <= insert_line <= len(lines):
            raise _Refused(f"Invalid insert_line {insert_line}: it must be between 0 and {len(lines)}.")
        # A file ending in a newline splits into a last empty item; inserting after the last line keeps the
        # final newline where it was.
        body = new_str[:-1] if new_str.endswith("\n") else new_str
        new_lines = lines[:insert_line] + body.split("\n") + lines[insert_line:]
        if content.endswith("\n") and insert_line == len(lines):
            new_lines = lines[:-1] + body.split("\n") + [""]
        new_content = "\n".join(new_lines)
        self._write(sandbox, path, new_content)
        self._history.setdefault(path, []).append(content)
        return self._edited(path, new_content, insert_line + 1, body.count("\n") + 1)

    def _undo_edit(self, sandbox: Sandbox, path: str) -> str:
        history = self._history.get(path)
        if not history:
            raise _Refused(f"No edit of {path} to undo.")
        # The edit leaves the history only once it is undone: an undo the sandbox refuses can be tried again.
        earlier = history[-1]
        if earlier is None:
            removed = sandbox.exec(f"rm -f -- {shlex.quote(path)}", timeout=30)
            if not removed.ok:
                raise _Refused(f"Could not undo the creation of {path}: {removed.stderr.strip()}")
            history.pop()
            return f"Undid the creation of {path}; the file is gone."
        self._write(sandbox, path, earlier)
        history.pop()
        shown = bound_text(_numbered(earlier.split("\n"), 1), self.max_output_chars)
        return f"Last edit of {path} undone. Its content now:\n{shown}"

    # -- helpers -------------------------------------------------------------------------------------------
    @staticmethod
    def _check_path(sandbox: Sandbox, path: str) -> str:
        root = sandbox.workdir.rstrip("/") or "/"
        if not path.startswith("/"):
            suggestion = posixpath.normpath(posixpath.join(root, path))
            raise _Refused(f"The path {path!r} is not absolute. Did you mean {suggestion}?")
        normal = posixpath.normpath(path)
        if normal != root and not normal.startswith(root + "/"):
            raise _Refused(
                f"The path {path} is outside the workspace {root}; only files under it can be used."
            )
        return normal

    def _read(self, sandbox: Sandbox, path: str, directory_ok: bool = False) -> str:
        try:
            data = sandbox.read_file(path)
        except FileNotFoundError:
            raise _Refused(f"The file {path} does not exist.") from None
        except IsADirectoryError:
            if directory_ok:
                raise
            raise _Refused(f"{path} is a directory; this command needs a file.") from None
        except PermissionError:
            raise _Refused(f"Permission denied reading {path}.") from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise _Refused(f"{path} is not UTF-8 text (a binary file?); use bash to inspect it.") from None

    @staticmethod
    def _write(sandbox: Sandbox, path: str, content: str) -> None:
        # The sandbox reports what open() would; each is the model's to fix, so it is told, not raised.
        try:
            sandbox.write_file(path, content)
        except PermissionError:
            raise _Refused(f"Permission denied writing {path}.") from None
        except (FileExistsError, NotADirectoryError):
            raise _Refused(f"Cannot write {path}: a part of its path is a file, not a directory.") from None
        except IsADirectoryError:
            raise _Refused(f"{path} is a directory; this command needs a file.") from None

    def _edited(self, path: str, content: str, first_line: int, line_count: int) -> str:
        lines = content.split("\n")
        start = max(first_line - SNIPPET_LINES, 1)
        end = min(first_line + line_count - 1 + SNIPPET_LINES, len(lines))
        snippet = _numbered(lines[start - 1 : end], start)
        return (
            f"The file {path} has been edited. Here's the result of running `cat -n` on a snippet of it:\n"
            f"{bound_text(snippet, self.max_output_chars)}\n"
            "Review the changes and make sure they are as expected. Edit the file again if necessary."
        )


def _kind(sandbox: Sandbox, path: str) -> str:
    result = sandbox.exec(
        f"if [ -d {shlex.quote(path)} ]; then echo dir; elif [ -e {shlex.quote(path)} ]; "
        "then echo file; else echo missing; fi",
        timeout=30,
    )
    return result.stdout.strip() or "missing"


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{number:6}\t{line}" for number, line in enumerate(lines, start=first))
