"""The agent's diff, made safe to grade: changes to protected paths are dropped before it is applied.

The reward must mean the bug is fixed, so nothing the agent changes may decide how the tests run or what
they check: not the tests (those the task's test patch touches, and any test-like file), not pytest's
configuration or plugins (conftest.py, pytest.ini, pytest.toml, tox.ini, setup.cfg, pyproject.toml, installed
distributions' metadata), not Python's start-up hooks (sitecustomize.py, usercustomize.py, .pth files), not
compiled bytecode that Python would load instead of a source file, not modules that would shadow installed
ones, and not git's own configuration. Binary patches, symbolic links and submodules are dropped as well: a
source fix needs none of them, and each is a way to put something in the tree that a text diff does not show.

The diff is split the way ``git apply`` reads it (`split_diff`): a part starts at a ``diff --git`` line or at
a traditional ``---``/``+++``/``@@`` header, and a hunk ends where its line counts say, so that text hidden
after a hunk is a part of its own here exactly as it is for git. The grader also checks the effect: after the
kept diff is applied, only kept paths may differ from the pristine tree (`patching.unexpected_changes`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

# Files whose change could alter how tests run, wherever they are in the repository.
PROTECTED_NAMES = frozenset({
    "conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini", "setup.cfg",
    "pyproject.toml", "noxfile.py",
    "sitecustomize.py", "usercustomize.py", ".coveragerc", "runtests.py",
})  # fmt: skip
PROTECTED_SUFFIXES = (".pth",)
GIT_FILES = frozenset({".gitattributes", ".gitmodules"})
BYTECODE_SUFFIXES = (".pyc", ".pyo")
METADATA_SUFFIXES = (".dist-info", ".egg-info", ".egg-link")
# Directory names that hold tests; anything under them is a test file.
TEST_DIRS = frozenset({"test", "tests", "testing", "__tests__"})
SYMLINK_MODE, GITLINK_MODE = "120000", "160000"
# Why a change is left out whatever its path: a source fix needs none of these.
BINARY_FILE, SYMBOLIC_LINK, SUBMODULE = "a binary file", "a symbolic link", "a submodule"

_GIT_HEADER = re.compile(r"^diff --git (?P<a>\S+|\".*?\") (?P<b>\S+|\".*?\")$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_EXTENDED = (
    "old mode ", "new mode ", "deleted file mode ", "new file mode ", "copy from ", "copy to ",
    "rename old ", "rename new ", "rename from ", "rename to ", "similarity index ",
    "dissimilarity index ", "index ",
)  # fmt: skip


@dataclass(frozen=True)
class FilePatch:
    """The part of a diff that changes one file, as git apply reads it."""

    old_path: str | None
    """Repository-relative path before the change (None for a new file)."""
    new_path: str | None
    """Repository-relative path after the change (None for a deleted file)."""
    text: str
    binary: bool = False
    """A ``GIT binary patch`` or a ``Binary files ... differ`` line."""
    modes: frozenset[str] = field(default_factory=frozenset)
    """Every file mode the part names (``100644``, ``100755``, ``120000`` for a symbolic link...)."""
    names: frozenset[str] = field(default_factory=frozenset)
    """Every path any of the part's header lines names."""

    @property
    def paths(self) -> list[str]:
        found = [p for p in (self.old_path, self.new_path) if p is not None]
        return found + sorted(name for name in self.names if name not in found)


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote(path: str) -> str:
    """Git quotes unusual paths C-style, with octal escapes for bytes: ``"t\\303\\251st.py"``."""
    if len(path) < 2 or path[0] != '"' or path[-1] != '"':
        return path
    body, out, index = path[1:-1], bytearray(), 0
    while index < len(body):
        char = body[index]
        if char == "\\" and index + 1 < len(body):
            following = body[index + 1]
            if following in "01234567":
                out.append(int(body[index + 1 : index + 4], 8) & 0xFF)
                index += 4
                continue
            out.append(_ESCAPES.get(following, ord(following)))
            index += 2
            continue
        out += char.encode("utf-8", errors="surrogateescape")
        index += 1
    return out.decode("utf-8", "replace")


def _strip_prefix(path: str) -> str | None:
    path = _unquote(path.strip())
    if path == "/dev/null":
        return None
    # git apply -p1 drops everything up to the first slash, whatever the prefix is
    return path.split("/", 1)[1] if "/" in path else path


def _name_of(line: str) -> str:
    """The path of a ``---``/``+++`` line (a tab or a quoted name ends it)."""
    rest = line[4:]
    if rest.startswith('"'):
        end = rest.find('"', 1)
        while end > 0 and rest[end - 1] == "\\":
            end = rest.find('"', end + 1)
        return rest[: end + 1] if end > 0 else rest
    return rest.split("\t")[0].rstrip("\n")


def split_diff(diff: str) -> list[FilePatch]:
    """Split a diff into per-file parts the way ``git apply`` does (text it would skip is dropped)."""
    lines = diff.splitlines(keepends=True)
    parts: list[FilePatch] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("diff --git "):
            part, index = _read_git_patch(lines, index)
            parts.append(part)
        elif (
            line.startswith("--- ")
            and index + 2 < len(lines)
            and lines[index + 1].startswith("+++ ")
            and lines[index + 2].startswith("@@ -")
        ):
            old, new = _strip_prefix(_name_of(line)), _strip_prefix(_name_of(lines[index + 1]))
            end = _read_hunks(lines, index + 2)
            names = frozenset(name for name in (old, new) if name is not None)
            parts.append(FilePatch(old, new, "".join(lines[index:end]), names=names))
            index = end
        else:
            index += 1  # git apply skips what is not a patch header
    return parts


def _read_git_patch(lines: list[str], start: int) -> tuple[FilePatch, int]:
    """A ``diff --git`` part: its extended header lines, its ``---``/``+++`` names, then hunks or binary data.
    Every name any of its lines gives is recorded (git refuses parts whose names disagree, but a filter that
    checks them all need not know which one git would take)."""
    match = _GIT_HEADER.match(lines[start].rstrip("\n"))
    old = new = None
    if match:
        old, new = _strip_prefix(match["a"]), _strip_prefix(match["b"])
    names = {name for name in (old, new) if name is not None}
    modes: set[str] = set()
    created = deleted = False
    index = start + 1
    while index < len(lines):
        line = lines[index].rstrip("\n")
        if line.startswith(_EXTENDED):
            if line.startswith(("old mode ", "new mode ", "deleted file mode ", "new file mode ")):
                modes.add(line.rsplit(" ", 1)[1])
                created = created or line.startswith("new file mode ")
                deleted = deleted or line.startswith("deleted file mode ")
            elif line.startswith("index ") and " " in line[6:]:
                modes.add(line.rsplit(" ", 1)[1])
            elif line.startswith(("rename from ", "copy from ", "rename old ")):
                old = _unquote(line.split(" ", 2)[2])
                names.add(old)
            elif line.startswith(("rename to ", "copy to ", "rename new ")):
                new = _unquote(line.split(" ", 2)[2])
                names.add(new)
            index += 1
        elif line.startswith("--- ") and index + 1 < len(lines) and lines[index + 1].startswith("+++ "):
            for name in (_strip_prefix(_name_of(line)), _strip_prefix(_name_of(lines[index + 1]))):
                if name is not None:
                    names.add(name)
            created = created or _strip_prefix(_name_of(line)) is None
            deleted = deleted or _strip_prefix(_name_of(lines[index + 1])) is None
            index += 2
        else:
            break
    binary = index < len(lines) and lines[index].startswith(("GIT binary patch", "Binary files "))
    index = _read_binary(lines, index) if binary else _read_hunks(lines, index)
    part = FilePatch(
        old_path=None if created else old,
        new_path=None if deleted else new,
        text="".join(lines[start:index]),
        binary=binary,
        modes=frozenset(modes),
        names=frozenset(names),
    )
    return part, index


def _read_hunks(lines: list[str], index: int) -> int:
    """Consume the hunks that start at ``index``, each exactly as long as its header says."""
    while index < len(lines):
        match = _HUNK.match(lines[index])
        if not match:
            return index
        old_count = int(match[2]) if match[2] is not None else 1
        new_count = int(match[4]) if match[4] is not None else 1
        index += 1
        while index < len(lines) and (old_count > 0 or new_count > 0):
            first = lines[index][:1]
            if first in (" ", "\n", "\r", ""):
                old_count, new_count = old_count - 1, new_count - 1
            elif first == "-":
                old_count -= 1
            elif first == "+":
                new_count -= 1
            elif first != "\\":
                break  # a corrupt hunk: git apply refuses the whole patch; the effect check catches it
            index += 1
        while index < len(lines) and lines[index].startswith("\\"):
            index += 1  # "\ No newline at end of file" after the last line
    return index


def _read_binary(lines: list[str], index: int) -> int:
    if lines[index].startswith("Binary files "):
        return index + 1
    index += 1
    blanks = 0
    while index < len(lines) and blanks < 2:  # a forward and a reverse block, each ended by an empty line
        if not lines[index].strip():
            blanks += 1
        elif not lines[index].startswith(("literal ", "delta ")) and not lines[index][:1].isalpha():
            break
        index += 1
    return index


def is_test_like(path: str) -> bool:
    """A test file by its name or place: ``test_*.py``, ``*_test.py``, ``tests.py``, or under a tests dir."""
    pure = PurePosixPath(path)
    name = pure.name
    if (
        name.startswith("test_")
        or name.endswith(("_test.py", "_tests.py"))
        or name in ("tests.py", "test.py")
    ):
        return True
    return any(part in TEST_DIRS for part in pure.parts[:-1])


def shadowed_module(
    path: str, shadowable: Collection[str], editable: Mapping[str, Collection[str]] | None = None
) -> str | None:
    """The module a new file at ``path`` would shadow: a top-level module or package of the repository root
    (first on ``sys.path`` while tests run) or of a directory an editable install puts on ``sys.path``
    (``editable``: those directories, relative to the root, with the modules each holds; ``src`` always
    counts as one), named like a module the test run imports from its environment or the standard library
    (``shadowable``), or like a module of another of those directories (a new ``verpkg/__init__.py`` at the
    root would be imported in place of the project's ``src/verpkg``)."""
    editable = editable or {}
    parts = PurePosixPath(path).parts
    home = ""
    for root in sorted({"src", *editable}, key=lambda root: -len(PurePosixPath(root).parts)):
        prefix = PurePosixPath(root).parts
        if len(parts) > len(prefix) and parts[: len(prefix)] == prefix:
            home, parts = root, parts[len(prefix) :]
            break
    if not parts:
        return None
    top = parts[0]
    name = top[: -len(".py")] if len(parts) == 1 and top.endswith(".py") else top
    if len(parts) == 1 and not top.endswith(".py") and "." in top:
        name = top.split(".", 1)[0]  # an extension module: name.cpython-311-x86_64-linux-gnu.so
    if name in shadowable:
        return name
    if any(name in names for root, names in editable.items() if root != home):
        return name
    return None


def protection_reason(
    path: str,
    test_patch_paths: Iterable[str] = (),
    shadowable: Collection[str] = (),
    new: bool = False,
    editable: Mapping[str, Collection[str]] | None = None,
    runner_paths: Collection[str] = (),
) -> str | None:
    """Why ``path`` is protected (None when the agent may change it). ``new``: the change creates it,
    which only matters for names that shadow an installed module (``shadowable``, ``editable``: see
    `shadowed_module`); ``runner_paths``: the files of the task's test runner (`TestRunner.protected`)."""
    pure = PurePosixPath(path)
    name = pure.name
    if path in set(test_patch_paths):
        return "touched by the task's tests"
    if path in runner_paths:
        return "the test runner's own"
    if ".git" in pure.parts:
        return "git internals"
    if name in GIT_FILES:
        return "git configuration"
    if name in PROTECTED_NAMES:
        return "test configuration or start-up hook"
    if name.endswith(PROTECTED_SUFFIXES):
        return "a .pth start-up hook"
    if "__pycache__" in pure.parts or name.endswith(BYTECODE_SUFFIXES):
        return "compiled bytecode, which Python may load in place of the source"
    if any(part.endswith(METADATA_SUFFIXES) for part in pure.parts):
        return "installed distributions' metadata (entry points, plugins)"
    if is_test_like(path):
        return "a test file"
    if new and (module := shadowed_module(path, shadowable, editable)) is not None:
        return f"a new module that shadows the installed {module!r}"
    return None


def part_reason(
    part: FilePatch,
    test_patch_paths: Iterable[str],
    shadowable: Collection[str] = (),
    editable: Mapping[str, Collection[str]] | None = None,
    runner_paths: Collection[str] = (),
) -> str | None:
    """Why a whole part is dropped: a protected path, or a kind of change a source fix never needs."""
    if part.binary:
        return BINARY_FILE
    if SYMLINK_MODE in part.modes:
        return SYMBOLIC_LINK
    if GITLINK_MODE in part.modes:
        return SUBMODULE
    test_paths = set(test_patch_paths)
    created = part.new_path is not None and part.new_path != part.old_path
    for path in part.paths:
        new = created and path == part.new_path
        reason = protection_reason(
            path, test_paths, shadowable, new=new, editable=editable, runner_paths=runner_paths
        )
        if reason is not None:
            return reason
    return None


@dataclass(frozen=True)
class FilteredDiff:
    """The agent's changes, ready to grade: the diff to apply, the paths it changes, and what was left out
    and why. `filter_diff` makes one from a diff; `changes.take_diff` from the agent's workspace itself."""

    diff: str
    """The kept changes as a git diff ("" when none is left)."""
    kept: tuple[str, ...]
    """Every path the kept changes touch (both sides of a rename)."""
    dropped: tuple[tuple[str, str], ...]
    """(path, reason) for every file whose change was left out."""


def filter_diff(
    diff: str,
    test_patch: str = "",
    shadowable: Collection[str] = (),
    editable: Mapping[str, Collection[str]] | None = None,
    runner_paths: Collection[str] = (),
) -> FilteredDiff:
    """Drop the changes to protected paths from ``diff`` (the ``test_patch``'s paths are protected too, and
    ``runner_paths``; ``shadowable`` and ``editable``: see `shadowed_module`)."""
    test_paths = {path for part in split_diff(test_patch) for path in part.paths}
    kept_text: list[str] = []
    kept: list[str] = []
    dropped: list[tuple[str, str]] = []
    for part in split_diff(diff):
        reason = part_reason(part, test_paths, shadowable, editable, runner_paths)
        label = part.new_path or part.old_path or "?"
        if reason is not None:
            dropped.append((label, reason))
        else:
            kept_text.append(part.text)
            kept.extend(path for path in part.paths if path not in kept)
    text = "".join(kept_text)
    if text and not text.endswith("\n"):
        text += "\n"
    return FilteredDiff(diff=text, kept=tuple(kept), dropped=tuple(dropped))
