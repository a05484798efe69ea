"""The Sandbox protocol: where agent code and tests run, whatever the backend.

A sandbox is one isolated workspace (``/workspace`` for functions, ``/testbed`` for repositories) with a
shell. Failing commands are data (`ExecResult`), not exceptions; only a sandbox that cannot be used at all
raises (`SandboxError`). Backends live beside this file and are picked by name in ``gym_swe.sandbox``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

from gym_swe.errors import ConfigError

MiB = 1024 * 1024
SHM_MB = 64
"""Size of /dev/shm in every sandbox (docker's default), a tmpfs charged to the sandbox's memory."""
SCRATCH_MB = SHM_MB + 64
"""Memory-backed scratch space every sandbox has beside /tmp: /dev/shm, and docker's own /dev (a 64 MiB
tmpfs the container's root may write; a local jail's /dev is read-only)."""
MIN_COMMAND_MB = 64
"""Memory that filling every scratch mount must still leave to the commands (and the executor) themselves."""


@dataclass(frozen=True)
class Limits:
    """Resource limits for everything that runs in one sandbox."""

    memory_mb: int = 4096
    """Memory of everything the sandbox runs, its scratch tmpfs mounts included (/tmp, /dev/shm: see
    `SCRATCH_MB`): the container's memory limit (docker), the jail's cgroup memory limit (local, where gym_swe
    may create cgroups: as root; otherwise an address-space limit per process)."""
    processes: int = 256
    """Most processes (and threads) alive at once."""
    file_size_mb: int = 1024
    """Largest file a command may write."""
    cpu_seconds: int = 3600
    """CPU time per command (a timeout still ends a command earlier, in wall time)."""
    cpus: float = 1.0
    """CPU cores' worth of time the sandbox may use at once: the container's CPU quota (docker), the jail's
    cgroup CPU quota (local, where gym_swe may create cgroups: as root)."""
    tmp_mb: int = 1024
    """Size of the private /tmp, a tmpfs (local: /var/tmp is the same one). It is memory, so it counts
    against ``memory_mb``, which must hold it with room to spare (checked here)."""
    disk_mb: int = 2048
    """What the workspace may grow by (local: a fresh workspace, or the copy-on-write layer over a source,
    lives on a tmpfs of this size, charged to the jail's memory, so ``memory_mb`` must hold it too: the envs
    check that at make, see `LocalSandbox.check_limits`; docker and copied workspaces are bounded per file by
    ``file_size_mb`` only)."""
    output_bytes: int = 256 * 1024
    """Output kept per stream and command: the head and tail, with a note of how much was cut between."""

    def __post_init__(self) -> None:
        sizes = ("memory_mb", "processes", "file_size_mb", "cpu_seconds", "tmp_mb", "disk_mb", "output_bytes")
        for name in sizes:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"Limits.{name} must be a positive int, got {value!r}")
        if not isinstance(self.cpus, (int, float)) or self.cpus <= 0:
            raise ConfigError(f"Limits.cpus must be a positive number, got {self.cpus!r}")
        # A tmpfs is memory: filled, it is charged to the sandbox's memory like a process. Were the scratch
        # mounts larger than memory_mb, filling them would end in the kernel's OOM killer taking the executor
        # (a dead sandbox) rather than in "No space left on device" for the command that filled them.
        needed = self.tmp_mb + SCRATCH_MB + MIN_COMMAND_MB
        if needed > self.memory_mb:
            raise ConfigError(
                f"Limits.memory_mb={self.memory_mb} cannot hold the sandbox's memory-backed scratch space: "
                f"Limits.tmp_mb={self.tmp_mb} (/tmp) + {SCRATCH_MB} (/dev/shm and /dev) are tmpfs mounts "
                f"charged to memory_mb, and commands need at least {MIN_COMMAND_MB} MiB beside them, so "
                f"memory_mb must be at least {needed}. Raise memory_mb or lower tmp_mb to at most "
                f"{max(self.memory_mb - SCRATCH_MB - MIN_COMMAND_MB, 0)}."
            )

    def for_executor(self, address_space: bool = True) -> dict[str, int]:
        """The rlimits the in-sandbox executor applies (see executor.apply_limits). ``address_space=False``
        where a cgroup limits memory already: RLIMIT_AS also counts reserved, unused address space, which
        breaks programs that reserve much (JVMs, Go, sanitizers)."""
        rlimits = {
            "processes": self.processes,
            "file_size_bytes": self.file_size_mb * MiB,
            "cpu_seconds": self.cpu_seconds,
        }
        if address_space:
            rlimits["memory_bytes"] = self.memory_mb * MiB
        return rlimits


@dataclass(frozen=True)
class ExecResult:
    """What one command did. ``stdout``/``stderr`` are bounded: when a stream was longer than the limit, its
    head and tail are kept and ``stdout_cut``/``stderr_cut`` say how many bytes were dropped between them."""

    exit_code: int
    """The command's exit status; negative when a signal ended it (-9 after a timeout)."""
    stdout: str
    stderr: str
    timed_out: bool = False
    duration: float = 0.0
    """Seconds the command ran, measured inside the sandbox."""
    stdout_cut: int = 0
    stderr_cut: int = 0
    interrupted: bool = False
    """The command was stopped from outside: by `Sandbox.interrupt` (SIGINT, then SIGKILL after a grace
    period), or, inside an env's step, by the step's time bound (`gym_swe.envs.step_bound`)."""
    records: bytes | None = None
    """What the command wrote to its records pipe (file descriptor 3), in the order it came, when ``exec``
    was asked for ``records``; None when it was not. At most the bound asked for: see ``records_cut``."""
    records_cut: int = 0
    """Bytes the command wrote to its records pipe past the bound (read and dropped: the stream is broken)."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.interrupted

    @property
    def output(self) -> str:
        """stdout then stderr, as a person would read them in a terminal."""
        if self.stdout and self.stderr:
            return self.stdout + ("" if self.stdout.endswith("\n") else "\n") + self.stderr
        return self.stdout or self.stderr


def cut_note(cut: int) -> str:
    return f"\n[... {cut} bytes of output cut here ...]\n"


def join_head_tail(head: bytes, tail: bytes, cut: int) -> str:
    """Decode kept output, marking where bytes were cut (a split UTF-8 character becomes U+FFFD)."""
    if not cut:
        return (head + tail).decode("utf-8", errors="replace")
    return head.decode("utf-8", errors="replace") + cut_note(cut) + tail.decode("utf-8", errors="replace")


@runtime_checkable
class Sandbox(Protocol):
    """One isolated workspace with a shell. Use it as a context manager, or call ``close()``."""

    workdir: str
    """The workspace path inside the sandbox (``/workspace`` or ``/testbed``); relative paths start here."""

    def exec(
        self,
        command: str,
        timeout: float | None = 60.0,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        max_output: int | None = None,
        records: int | None = None,
    ) -> ExecResult:
        """Run ``command`` with bash inside the sandbox. A timeout kills the command's whole process group.
        Output beyond ``max_output`` bytes per stream (default ``Limits.output_bytes``) is cut in the middle.
        A command that cannot be started (a NUL byte in it) is a failed `ExecResult` (exit code 127).

        ``records`` (a byte bound): the command also gets a pipe as file descriptor 3, which the sandbox's
        executor (out of the command's reach) reads as the command runs; `ExecResult.records` holds its first
        ``records`` bytes, in the order they came, and ``records_cut`` how many more came. What the command
        wrote there cannot be taken back: the grader streams each test's outcome through it."""
        ...

    def kill_processes(self) -> int:
        """Kill every process commands started (background daemons too); returns how many were killed."""
        ...

    def interrupt(self) -> bool:
        """From another thread: stop the command ``exec`` is running, as Ctrl-C would (SIGINT to its process
        group, SIGKILL a second later); that ``exec`` then returns with ``interrupted``. False when no
        command was running."""
        ...

    def read_file(self, path: str, max_bytes: int = ...) -> bytes:
        """The bytes of a file in the sandbox. Raises FileNotFoundError / IsADirectoryError like open(), and
        `FileTooLargeError` for a file over ``max_bytes`` (the host never reads more into its memory)."""
        ...

    def manifest(self, path: str, max_files: int = ...) -> list[list[Any]]:
        """Every file and symbolic link under ``path`` (``.git`` directories left out), as the sandbox's own
        trusted code sees them: ``[relative path, "f", executable, size, sha256 or None]`` or
        ``[relative path, "l", target]``. Runs no program the workspace could configure."""
        ...

    def get_files(self, path: str, names: list[str], dest: str | Path, max_bytes: int = ...) -> Path:
        """Copy the named files and links under ``path`` into the host directory ``dest`` (links as links)."""
        ...

    def write_file(self, path: str, content: str | bytes, mode: int | None = None) -> None:
        """Write a file in the sandbox (text as UTF-8), creating parent directories."""
        ...

    def upload(self, source: str | Path, dest: str | None = None) -> None:
        """Copy the contents of a host directory (or one file) into ``dest`` (default: the workspace)."""
        ...

    def download(self, path: str, dest: str | Path) -> Path:
        """Copy a sandbox file or directory to the host directory ``dest``; returns the host path."""
        ...

    def close(self) -> None:
        """Stop everything running in the sandbox and remove it. Safe to call twice."""
        ...

    def __enter__(self) -> Sandbox: ...

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None: ...
