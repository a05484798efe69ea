"""The agent's changes to a repository, taken without running anything the agent could control.

Nothing in the agent's workspace is trusted after the episode: not its git (whose ``.git/config`` can name
programs git runs: fsmonitor, filters, external diffs), not its index or its history. So the changes are
found by comparing two manifests that the executors themselves compute (pure Python: every file's type,
executable bit and SHA-256): the agent's workspace against the pristine one in the fresh grading sandbox.
Paths the grader would drop anyway are never fetched; the rest come out as files, and the diff is built
from those bytes on the host by a git that reads no configuration but gym_swe's own (`hostgit`).

A file name may be any bytes the file system allows. One that is not UTF-8 (held here as Python's surrogate
escapes), or one git will not put in a tree, is dropped like a protected path, with the reason: no source fix
needs one, and the grader reads a diff's names as UTF-8. Dropped paths are reported escaped (``\xff``), so
what the grade carries is always valid text.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_swe.errors import FileTooLargeError, GradingError
from gym_swe.grading.diffs import BINARY_FILE, SYMBOLIC_LINK, FilteredDiff
from gym_swe.grading.hostgit import ScratchRepository
from gym_swe.sandbox.base import Sandbox

MAX_CHANGED_FILES = 5000
MAX_CHANGED_BYTES = 64 * 1024 * 1024


class SubmissionRejected(GradingError):
    """The agent's submission cannot be graded because of what the agent did (an unreadable file, changes
    too large to take): scored 0 like a failed test, never treated as a grader failure."""


@dataclass(frozen=True)
class Entry:
    """One manifest entry: a file (``kind="f"``) or a symbolic link (``kind="l"``)."""

    kind: str
    executable: bool = False
    size: int = 0
    digest: str | None = None
    target: str = ""

    @classmethod
    def parse(cls, raw: list[Any]) -> tuple[str, Entry]:
        if raw[1] == "l":
            return raw[0], cls("l", target=raw[2])
        return raw[0], cls("f", executable=raw[2], size=raw[3], digest=raw[4])

    @property
    def mode(self) -> str:
        if self.kind == "l":
            return "120000"
        return "100755" if self.executable else "100644"


def manifest(sandbox: Sandbox, workdir: str) -> dict[str, Entry]:
    """The files and links of ``workdir`` in ``sandbox``, by relative path (``.git`` left out)."""
    return dict(Entry.parse(raw) for raw in sandbox.manifest(workdir))


@dataclass(frozen=True)
class Changes:
    """What differs between the pristine tree and the agent's."""

    added: tuple[str, ...]
    modified: tuple[str, ...]
    deleted: tuple[str, ...]

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(sorted(self.added + self.modified + self.deleted))


def compare(pristine: Mapping[str, Entry], agent: Mapping[str, Entry]) -> Changes:
    unreadable = sorted(path for path, entry in agent.items() if entry.kind == "f" and entry.digest is None)
    if unreadable:
        raise SubmissionRejected(
            f"{len(unreadable)} file(s) in the workspace could not be read (e.g. {unreadable[0]!r}): "
            "made unreadable in the episode, so what they hold cannot be graded"
        )
    added = tuple(sorted(set(agent) - set(pristine)))
    deleted = tuple(sorted(set(pristine) - set(agent)))
    modified = tuple(sorted(path for path in set(agent) & set(pristine) if agent[path] != pristine[path]))
    return Changes(added, modified, deleted)


def take_diff(
    agent: Sandbox,
    pristine_sandbox: Sandbox,
    pristine: Mapping[str, Entry],
    workdir: str,
    reason_to_drop: Callable[[str, bool], str | None],
) -> FilteredDiff:
    """The agent's changes under ``workdir`` as a git diff against ``pristine`` (the manifest of
    ``pristine_sandbox``'s untouched tree), leaving out every path ``reason_to_drop(path, new)`` gives a
    reason for, and links, submodules and binary files.

    ``agent`` must be quiet (its processes killed), so nothing changes while it is read. Raises
    `SubmissionRejected` when the workspace cannot be taken as it is (unreadable files, over the limits),
    `GradingError` when the host's git fails.
    """
    try:
        agent_entries = manifest(agent, workdir)
    except FileTooLargeError as error:
        raise SubmissionRejected(f"the workspace is too large to take: {error}") from None
    except (PermissionError, FileNotFoundError, NotADirectoryError) as error:
        raise SubmissionRejected(f"the workspace could not be read: {error}") from None
    changes = compare(pristine, agent_entries)
    kept: list[str] = []
    dropped: list[tuple[str, str]] = []
    for path in changes.paths:
        links = [e for e in (agent_entries.get(path), pristine.get(path)) if e is not None and e.kind == "l"]
        if not _is_utf8(path):
            reason: str | None = NOT_UTF8
        elif links:
            reason = SYMBOLIC_LINK
        else:
            reason = reason_to_drop(path, path in changes.added)
        if reason is None:
            kept.append(path)
        else:
            dropped.append((shown_path(path), reason))
    if len(kept) > MAX_CHANGED_FILES:
        raise SubmissionRejected(f"{len(kept)} files changed, more than the {MAX_CHANGED_FILES} taken")
    size = sum(agent_entries[path].size for path in kept if path in agent_entries)
    if size > MAX_CHANGED_BYTES:
        raise SubmissionRejected(
            f"the changed files hold {size} bytes, more than the {MAX_CHANGED_BYTES} taken"
        )
    if not kept:
        return FilteredDiff("", (), tuple(dropped))

    with ScratchRepository() as repo:
        new_files = _fetch(
            agent, workdir, [p for p in kept if p in agent_entries], agent_entries, repo.root / "new"
        )
        old_files = _fetch(
            pristine_sandbox, workdir, [p for p in kept if p in pristine], pristine, repo.root / "old"
        )
        binary = sorted(path for path, data in {**old_files, **new_files}.items() if b"\0" in data[:8000])
        for path in binary:
            kept.remove(path)
            dropped.append((path, BINARY_FILE))
        old_tree = repo.tree([(pristine[p].mode, repo.blob(old_files[p]), p) for p in kept if p in old_files])
        new_tree = repo.tree(
            [(agent_entries[p].mode, repo.blob(new_files[p]), p) for p in kept if p in new_files]
        )
        in_trees = repo.paths(old_tree) | repo.paths(new_tree)
        for path in [p for p in kept if p not in in_trees]:
            kept.remove(path)
            dropped.append((path, "a path git does not take (a .git, . or .. part, in some spelling)"))
        diff = repo.diff(old_tree, new_tree) if kept else ""
    return FilteredDiff(diff, tuple(kept), tuple(sorted(dropped)))


NOT_UTF8 = "a file name that is not valid UTF-8 (the grader reads a diff's names as UTF-8)"


def _is_utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_path(path: str) -> str:
    """``path`` as valid text for logs: bytes that are not UTF-8 written as ``\\xNN``."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _fetch(
    sandbox: Sandbox, workdir: str, paths: list[str], entries: Mapping[str, Entry], dest: Path
) -> dict[str, bytes]:
    """The bytes of ``paths`` (regular files), checked against the hashes their manifest gave."""
    if not paths:
        return {}
    try:
        sandbox.get_files(workdir, paths, dest, max_bytes=MAX_CHANGED_BYTES + 64 * len(paths) * 1024)
    except FileTooLargeError as error:
        raise SubmissionRejected(f"the changed files are too large to take: {error}") from None
    files = {}
    for path in paths:
        target = dest / path
        if target.is_symlink() or not target.is_file():
            raise SubmissionRejected(f"{path} changed while the workspace was read")
        data = target.read_bytes()
        if hashlib.sha256(data).hexdigest() != entries[path].digest:
            raise SubmissionRejected(f"{path} changed while the workspace was read")
        files[path] = data
    return files
