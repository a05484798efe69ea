"""Patching the grading sandbox's checkout: applying a diff (`apply`: git alone for the agent's diff, patch(1)
too for the task's own test patch), checking that it changed only the paths the filter kept
(`unexpected_changes`), and building again what the install built where it changes a compiled source
(`rebuild`, the task's ``rebuild`` commands)."""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Collection, Sequence

from gym_swe.grading.changes import Entry, compare, manifest
from gym_swe.sandbox.base import Sandbox
from gym_swe.tasks.swe import SWETask

_CAUSE = re.compile(
    r"^(?:E\s+)?(?:\w+\.)*\w*(?:Error|Exception|Warning)\b.*$|^ERROR: .*$|^INTERNALERROR> .*$", re.M
)


def cause_of(output: str) -> str | None:
    """The line of a test run's output that says why it stopped (the last error line), if any."""
    found = _CAUSE.findall(output[-30_000:])
    return found[-1].strip()[:500] if found else None


def unexpected_changes(
    sandbox: Sandbox, workdir: str, pristine: dict[str, Entry], kept: Collection[str]
) -> list[str]:
    """Paths that differ from the pristine tree but are not among the ``kept`` ones."""
    changed = compare(pristine, manifest(sandbox, workdir)).paths
    return [path for path in changed if path not in set(kept)]


COMPILED_SUFFIXES = (
    ".c",
    ".cc",
    ".cpp",
    ".cxx",
    ".h",
    ".hh",
    ".hpp",
    ".pyx",
    ".pxd",
    ".pxi",
    ".f",
    ".f90",
    ".cu",
)
"""Sources a build compiles: a change to one takes effect only once the task's ``rebuild`` commands ran."""
REBUILD_TIMEOUT = 1800.0


def rebuild(
    sandbox: Sandbox, task: SWETask, workdir: str, kept: Sequence[str], timeout: float, log: list[str]
) -> str | None:
    """Build again what the install built, where the agent's diff (its ``kept`` paths) changes a compiled
    source and the task's environment says how (``rebuild``); None when that went well or was not needed,
    else why the diff does not build (the submission fails: the tests would run the old build)."""
    compiled = [path for path in kept if path.lower().endswith(COMPILED_SUFFIXES)]
    if not compiled:
        return None
    commands = task.environment.rebuild
    if not commands:
        log.append(f"compiled sources changed ({', '.join(compiled[:5])}), but the task's environment has no "
                   "rebuild commands: the tests run the prepared build")  # fmt: skip
        return None
    deadline = time.monotonic() + timeout
    for command in commands:
        left = deadline - time.monotonic()
        result = sandbox.exec(f"cd {shlex.quote(workdir)} && {command}", timeout=max(1.0, left))
        ended = f"exit {result.exit_code}{', timed out' if result.timed_out else ''}"
        log.append(f"rebuild: $ {command}\n[{ended}]\n{result.output[-5000:]}")
        if not result.ok:
            how = "took longer than its limit" if result.timed_out else f"failed (exit {result.exit_code})"
            cause = cause_of(result.output) or result.output.strip()[-300:]
            return (
                f"the diff changes compiled sources ({', '.join(compiled[:3])}) and rebuilding them {how}: "
                + (f"`{command}`: {cause}")
            )
    return None


def apply(sandbox: Sandbox, patch_file: str, workdir: str, fallback: bool) -> str | None:
    """Apply a patch with git (or, for the task's own test patch, with patch(1) where git refuses); None
    when it applied, else why not. The agent's diff gets git alone: patch(1) reads diffs its own way."""
    quoted = shlex.quote(workdir)
    result = sandbox.exec(f"cd {quoted} && git apply --whitespace=nowarn {patch_file}", timeout=300)
    if result.ok:
        return None
    if fallback:
        again = sandbox.exec(
            f"cd {quoted} && patch --batch --forward --no-backup-if-mismatch -p1 -i {patch_file}", timeout=300
        )
        if again.ok:
            return None
    return (result.stderr or result.stdout).strip()[-2000:]
