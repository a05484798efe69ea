"""Per-jail control groups: the process, memory and CPU limits of a local sandbox, where they can be had.

Rlimits alone are not enough when gym_swe runs as root (as on CI machines and many clusters): the jail's
uid maps to host uid 0, and the kernel does not apply RLIMIT_NPROC to root, so a fork bomb would fill the
host's process table. Where this process may create control groups (root, cgroup v1 or v2 with the pids and
memory controllers), each jail gets its own, with ``pids.max``, a memory limit and, where the cpu controller
is there, a CPU quota of ``Limits.cpus`` (so that what an agent leaves running between steps cannot take
cores from other episodes); everything the jail starts is charged to it, the pages of its tmpfs mounts
included. Elsewhere (an unprivileged user) RLIMIT_NPROC does apply, the executor's rlimits are the limits,
and there is no CPU quota.

The cgroup's OOM-kill counter tells a jail whose executor the OOM killer took (the commands used up the
jail's own memory: the agent's doing) from one killed from outside.
"""

from __future__ import annotations

import os
import shlex
import signal
import time
import warnings
from pathlib import Path

from gym_swe.sandbox.base import Limits, MiB

CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP = "gym_swe"
CPU_PERIOD_US = 100_000
_warned = False


class JailCgroup:
    """The control group(s) of one jail: one directory on cgroup v2, one per controller on v1."""

    def __init__(self, directories: list[Path], oom_events: Path | None = None) -> None:
        self.directories = directories
        # Kept open: the counter is read after every reply the executor gives, so it must cost a pread only.
        self._oom_fd: int | None = None
        if oom_events is not None:
            try:
                self._oom_fd = os.open(oom_events, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                self._oom_fd = None  # an older kernel without the counter: every death is then unexplained

    @classmethod
    def create(cls, name: str, limits: Limits) -> JailCgroup | None:
        """Make the jail's cgroup with the limits set, or return None where that is not possible."""
        if os.geteuid() != 0:
            return None  # unprivileged: RLIMIT_NPROC applies, and we may not create cgroups anyway
        try:
            if (CGROUP_ROOT / "pids" / "cgroup.procs").exists() and (CGROUP_ROOT / "memory").is_dir():
                return cls._create_v1(name, limits)
            if (CGROUP_ROOT / "cgroup.controllers").exists():
                return cls._create_v2(name, limits)
        except OSError as error:
            _warn_once(f"could not create a cgroup for the jail ({error})")
            return None
        _warn_once("no cgroup hierarchy with the pids and memory controllers was found")
        return None

    @classmethod
    def _create_v1(cls, name: str, limits: Limits) -> JailCgroup:
        pids = CGROUP_ROOT / "pids" / GROUP / name
        memory = CGROUP_ROOT / "memory" / GROUP / name
        cpu = CGROUP_ROOT / "cpu" / GROUP / name
        pids.mkdir(parents=True)
        memory.mkdir(parents=True)
        directories = [pids, memory]
        if (CGROUP_ROOT / "cpu" / "cpu.cfs_quota_us").exists():
            cpu.mkdir(parents=True)
            directories.append(cpu)
        group = cls(directories, memory / "memory.oom_control")
        try:
            # bwrap's own two processes count too.
            (pids / "pids.max").write_text(str(limits.processes + 2))
            (memory / "memory.limit_in_bytes").write_text(str(limits.memory_mb * MiB))
            swap = memory / "memory.memsw.limit_in_bytes"
            if swap.exists():
                swap.write_text(str(limits.memory_mb * MiB))
            if cpu in directories:
                (cpu / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
                (cpu / "cpu.cfs_quota_us").write_text(str(cpu_quota_us(limits)))
        except OSError:
            group.remove()
            raise
        return group

    @classmethod
    def _create_v2(cls, name: str, limits: Limits) -> JailCgroup:
        base = CGROUP_ROOT / GROUP
        base.mkdir(exist_ok=True)
        available = (CGROUP_ROOT / "cgroup.controllers").read_text().split()
        wanted = [c for c in ("pids", "memory", "cpu") if c in available or c != "cpu"]
        for parent in (CGROUP_ROOT, base):
            enabled = (parent / "cgroup.subtree_control").read_text().split()
            missing = [c for c in wanted if c not in enabled]
            if missing:
                (parent / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in missing))
        directory = base / name
        directory.mkdir()
        group = cls([directory], directory / "memory.events")
        try:
            (directory / "pids.max").write_text(str(limits.processes + 2))
            (directory / "memory.max").write_text(str(limits.memory_mb * MiB))
            if (directory / "memory.swap.max").exists():
                (directory / "memory.swap.max").write_text("0")
            if (directory / "cpu.max").exists():
                (directory / "cpu.max").write_text(f"{cpu_quota_us(limits)} {CPU_PERIOD_US}")
        except OSError:
            group.remove()
            raise
        return group

    def enter_prefix(self) -> list[str]:
        """A command prefix that moves itself into the cgroup and then execs the rest of the command, so the
        jail is inside from its first process on (moving it afterwards would race with its forks)."""
        moves = " && ".join(f"echo $$ > {shlex.quote(str(d / 'cgroup.procs'))}" for d in self.directories)
        return ["/bin/sh", "-c", f'{moves} && exec "$@"', "gym_swe-jail"]

    def oom_kills(self) -> int | None:
        """How many processes the OOM killer has taken in this cgroup (None where the kernel does not say)."""
        if self._oom_fd is None:
            return None
        try:
            text = os.pread(self._oom_fd, 4096, 0).decode("ascii", errors="replace")
        except OSError:
            return None
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return None

    def pids(self) -> list[int]:
        found: set[int] = set()
        for directory in self.directories:
            try:
                found.update(int(line) for line in (directory / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                continue
        return sorted(found)

    def kill_and_remove(self, seconds: float = 5.0) -> None:
        """Kill whatever is left in the cgroup and remove it."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            left = self.pids()
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.005)
        self.remove()

    def remove(self) -> None:
        if self._oom_fd is not None:
            os.close(self._oom_fd)
            self._oom_fd = None
        for directory in self.directories:
            try:
                directory.rmdir()
            except OSError:
                pass  # still busy, or gone: `gym-swe sandbox prune` removes empty leftovers


def jail_cgroup_parents() -> list[Path]:
    """The directories under which jails' cgroups are made (per controller on v1)."""
    return [CGROUP_ROOT / part / GROUP for part in ("pids", "memory", "cpu")] + [CGROUP_ROOT / GROUP]


def cpu_quota_us(limits: Limits) -> int:
    """The jail's CPU time per scheduling period: ``Limits.cpus`` cores' worth."""
    return max(1000, int(limits.cpus * CPU_PERIOD_US))


def prune_cgroups() -> list[Path]:
    """Remove empty jail cgroups left behind by crashed runs."""
    removed = []
    for parent in jail_cgroup_parents():
        if not parent.is_dir():
            continue
        for directory in parent.iterdir():
            if not directory.is_dir():
                continue
            try:
                if not (directory / "cgroup.procs").read_text().strip():
                    directory.rmdir()
                    removed.append(directory)
            except OSError:
                continue
    return removed


def _warn_once(reason: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(
            f"Local sandboxes run as root without per-jail cgroups: {reason}. Memory is still limited per "
            "process (RLIMIT_AS), but the kernel does not apply the process limit (RLIMIT_NPROC) to root, "
            "so a fork bomb in a jail is held back only by the host's own limits. Use sandbox='docker' for "
            "hard limits.",
            stacklevel=3,
        )
