"""The ``local`` backend: one bubblewrap jail per sandbox, kept alive for the sandbox's whole life.

Inside the jail: the host system read-only (``/usr``, ``/etc`` and the ``/bin``, ``/lib`` links), the
workspace writable at its in-sandbox path, a private ``/tmp`` tmpfs (``/var/tmp`` leads there), fresh
``/proc`` and a read-only ``/dev`` with its own ``/dev/shm``, no network, its own pid/ipc/uts/user namespaces
and no capabilities. The host's home, the project checkout and other sandboxes' workspaces are simply not
there. Commands run as uid 1000 under the rlimits of `Limits`.

Every place a command may write is a tmpfs of a set size (``/tmp``: ``Limits.tmp_mb``, ``/dev/shm``:
``SHM_MB``, a fresh or copy-on-write workspace: ``Limits.disk_mb``); the rest of the jail's root, a tmpfs
bwrap makes without a size, is read-only. Filling them ends in "No space left on device" for the command,
never in the OOM killer taking the executor.

The executor (see executor.py) is the jail's only long-lived process; killing the jail (bwrap dies, taking
its pid namespace with it) ends everything the agent started, background processes included.
"""

from __future__ import annotations

import functools
import json
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

from gym_swe.errors import ConfigError, SandboxError, SandboxUnavailableError, unknown_name
from gym_swe.sandbox.base import MIN_COMMAND_MB, SHM_MB, Limits, MiB
from gym_swe.sandbox.cgroups import JailCgroup
from gym_swe.sandbox.executor_client import EXECUTOR_PATH, ExecutorSandbox, Transport

ISOLATIONS = ("bwrap", "none")
SOURCE_MODES = ("auto", "overlay", "copy")
# Workspaces live under here on the host, named with the owner's pid so `gym-swe sandbox prune` can tell
# which ones a crashed run left behind.
WORKSPACE_PREFIX = "gym_swe-ws-"
PACKAGE_DIR = Path(__file__).resolve().parents[1]
JAIL_EXECUTOR = "/run/gym_swe/executor.py"
JAIL_BIN = "/run/gym_swe/bin"
DEFAULT_PATH = f"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:{JAIL_BIN}"
BWRAP_INSTALL_HINT = (
    "bubblewrap (bwrap) is not installed, and the local sandbox needs it to jail agent code. "
    "Install it (Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf install bubblewrap), "
    "use sandbox='docker', or, only on a machine where agent code may run unconfined, isolation='none'."
)


def workspace_root() -> Path:
    """Host directory that holds local sandboxes' workspaces (``GYM_SWE_WORKSPACES`` or the temp dir)."""
    return Path(os.environ.get("GYM_SWE_WORKSPACES") or tempfile.gettempdir())


class PipeTransport:
    """The executor's stdin/stdout as pipes of a host child process."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._write_fd = process.stdin.fileno()
        self._read_fd = process.stdout.fileno()
        self._process = process
        self._early = b""  # bytes `pending` found
        self._ended = False

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._write_fd, view)
            view = view[written:]

    def recv(self, max_bytes: int, deadline: float | None) -> bytes:
        if self._early:
            data, self._early = self._early[:max_bytes], self._early[max_bytes:]
            return data
        if self._ended:
            return b""
        while True:
            wait = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            ready, _, _ = select.select([self._read_fd], [], [], wait)
            if ready:
                return os.read(self._read_fd, max_bytes)
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError("no answer from the executor")

    def pending(self) -> bool:
        if self._early:
            return True
        if self._ended or not select.select([self._read_fd], [], [], 0)[0]:
            return False
        self._early = os.read(self._read_fd, 65536)
        self._ended = not self._early  # end of stream: the request that follows reports it
        return bool(self._early)

    def close(self) -> None:
        for stream in (self._process.stdin, self._process.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


class LocalSandbox(ExecutorSandbox):
    """A bubblewrap jail on this machine (or, asked for by name, no jail at all).

    Args:
        workdir: the workspace path inside the jail (``/workspace``; ``/testbed`` for repositories).
        limits: resource limits (`Limits`).
        isolation: ``"bwrap"`` (default) or ``"none"``: run commands unjailed on the host, in a temp
            directory, with the rlimits only. Only for machines where agent code may do anything.
        network: give the jail the host's network (off by default).
        ro_binds: extra host paths visible read-only inside the jail at the same path (a prepared virtual
            environment, say), or ``{host_path: jail_path}``.
        rw_binds: like ``ro_binds``, but writable (for preparing environments; never for agent episodes).
        scratch_dirs: jail paths outside the workspace where commands may write, each a fresh tmpfs of
            ``Limits.tmp_mb`` (a Harbor verifier's ``/logs/verifier``): jail memory, not the host's disk.
        env: extra environment variables for every command.
        source: a host directory whose contents seed the workspace; the source itself is never changed.
        source_mode: how the workspace gets the source: ``"overlay"`` (copy-on-write, constant time: an
            overlay mount with the source as its read-only lower layer; needs root), ``"copy"`` (a copy,
            reflinked where the filesystem can), or ``"auto"`` (overlay where possible, else copy).
    """

    backend = "local"

    def __init__(
        self,
        workdir: str = "/workspace",
        limits: Limits | None = None,
        isolation: str = "bwrap",
        network: bool = False,
        ro_binds: Sequence[str] | Mapping[str, str] = (),
        env: Mapping[str, str] | None = None,
        source: str | Path | None = None,
        rw_binds: Mapping[str, str] | None = None,
        source_mode: str = "auto",
        scratch_dirs: Sequence[str] = (),
    ) -> None:
        if isolation not in ISOLATIONS:
            raise ConfigError(unknown_name("isolation", isolation, ISOLATIONS))
        if not workdir.startswith("/"):
            raise ConfigError(f"workdir must be an absolute path inside the sandbox, got {workdir!r}")
        if source_mode not in SOURCE_MODES:
            raise ConfigError(unknown_name("source_mode", source_mode, SOURCE_MODES))
        if source_mode == "overlay" and not overlay_possible():
            raise ConfigError(
                "source_mode='overlay' needs root and the unshare command; use 'copy' or 'auto'"
            )
        super().__init__(workdir, limits)
        self.isolation = isolation
        self.network = network
        self.ro_binds = dict(ro_binds) if isinstance(ro_binds, Mapping) else {p: p for p in ro_binds}
        self.rw_binds = dict(rw_binds or {})
        if isinstance(scratch_dirs, str) or not all(str(path).startswith("/") for path in scratch_dirs):
            raise ConfigError(f"scratch_dirs must be a list of absolute paths, got {scratch_dirs!r}")
        if scratch_dirs and isolation != "bwrap":
            raise ConfigError("scratch_dirs needs isolation='bwrap' (they are tmpfs mounts of the jail)")
        self.scratch_dirs = tuple(str(path) for path in scratch_dirs)
        self.extra_env = dict(env or {})
        self._process: subprocess.Popen[bytes] | None = None
        self._jail_pid: int | None = None  # the jail's pid 1, as the host sees it
        self._cgroup: JailCgroup | None = None
        self._oom_kills_seen = 0  # the cgroup's OOM kills by the executor's last reply
        if isolation == "bwrap" and shutil.which("bwrap") is None:
            raise SandboxUnavailableError(BWRAP_INSTALL_HINT)
        try:
            self.host_dir = Path(
                tempfile.mkdtemp(prefix=f"{WORKSPACE_PREFIX}{os.getpid()}-", dir=workspace_root())
            )
        except OSError as error:
            raise SandboxError(
                f"local sandbox: could not make its directory in {workspace_root()}: {error}"
            ) from error
        # Where the workspace lives: "tmpfs" (a fresh one, in the jail), "overlay" (copy-on-write over the
        # source, its writable layer on a tmpfs), "copy" (a copy on the host's disk), "host" (isolation none).
        # Only "copy" and "host" have the files on the host, at host_workspace.
        self.host_workspace: Path | None = None
        self._overlay_lower: Path | None = None
        try:
            if isolation == "none":
                self.layout = "host"
                self.host_workspace = self.host_dir / "workspace"
                if source is not None:
                    copy_tree(Path(source), self.host_workspace)
                else:
                    self.host_workspace.mkdir()
            elif source is None:
                self.layout = "tmpfs"
            elif source_mode != "copy" and overlay_possible():
                self.layout = "overlay"
                self._overlay_lower = Path(source).resolve()
                for part in ("layer", "merged"):
                    (self.host_dir / part).mkdir()
            else:
                self.layout = "copy"
                self.host_workspace = self.host_dir / "workspace"
                copy_tree(Path(source), self.host_workspace)
        except OSError as error:
            _remove_tree(self.host_dir)
            raise SandboxError(f"local sandbox: could not set up the workspace: {error}") from error
        if isolation == "none":
            warnings.warn(
                "LocalSandbox(isolation='none'): agent commands run unconfined on this machine, with its "
                "network and files. Use it only where that is acceptable.",
                stacklevel=2,
            )
            self.workdir = str(self.host_workspace)
        self._boot()

    @classmethod
    def check_limits(cls, limits: Limits) -> None:
        """A jail's workspace (fresh, or the copy-on-write layer over a source) is a tmpfs of ``disk_mb``,
        charged to the jail's memory with /tmp and /dev/shm: ``memory_mb`` must hold them all, filled, and
        leave room to the commands; else filling them would end in the OOM killer, not a full disk."""
        needed = limits.tmp_mb + SHM_MB + limits.disk_mb + MIN_COMMAND_MB
        if needed > limits.memory_mb:
            raise ConfigError(
                f"Limits.memory_mb={limits.memory_mb} cannot hold a local jail's tmpfs mounts: "
                f"Limits.tmp_mb={limits.tmp_mb} (/tmp) + {SHM_MB} (/dev/shm) + "
                f"Limits.disk_mb={limits.disk_mb} (the workspace) are charged to the jail's memory, and "
                f"commands need at least {MIN_COMMAND_MB} MiB beside them, so memory_mb must be at least "
                f"{needed}. Raise memory_mb, or lower tmp_mb or disk_mb."
            )

    # -- the jail ------------------------------------------------------------------------------------------
    def _environment(self) -> dict[str, str]:
        env = {
            "PATH": DEFAULT_PATH,
            "HOME": "/tmp",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TERM": "dumb",
            "PAGER": "cat",
            "GIT_PAGER": "cat",
            "TMPDIR": "/tmp",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        if self.isolation == "none":
            env["HOME"] = env["TMPDIR"] = str(self.host_dir)
        env.update(self.extra_env)
        return env

    def _bwrap_argv(self, python: str) -> list[str]:
        argv = [
            "bwrap",
            "--die-with-parent",  # the jail never outlives the Python process that owns it
            "--new-session",
            "--unshare-all",
            "--unshare-user",  # required, not just tried: the uid map and --disable-userns depend on it
            "--as-pid-1",  # the executor is the jail's init: the kernel shields it from its commands' signals
            *(["--share-net"] if self.network else []),
            "--uid", "1000", "--gid", "1000",
            "--cap-drop", "ALL",
            "--hostname", "sandbox",
            "--ro-bind", "/usr", "/usr",
            "--ro-bind", "/etc", "/etc",
            *_etc_masks(),
        ]  # fmt: skip
        for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            host = Path("/") / top
            if host.is_symlink():
                argv += ["--symlink", os.readlink(host), str(host)]
            elif host.is_dir():
                argv += ["--ro-bind", str(host), str(host)]
        argv += [
            "--proc", "/proc",
            "--dev", "/dev",
            "--size", str(SHM_MB * MiB), "--tmpfs", "/dev/shm",
            "--size", str(self.limits.tmp_mb * MiB), "--tmpfs", "/tmp",
            "--symlink", "/tmp", "/var/tmp",  # one budget for both: an unsized tmpfs would be host memory
            "--dir", "/run",
        ]  # fmt: skip
        if self.layout == "tmpfs":
            argv += ["--size", str(self.limits.disk_mb * MiB), "--tmpfs", self.workdir]
        else:
            workspace = self.host_dir / "merged" if self.layout == "overlay" else self.host_workspace
            argv += ["--bind", str(workspace), self.workdir]
        for host_path, jail_path in self.ro_binds.items():
            argv += ["--ro-bind", str(host_path), str(jail_path)]
        for host_path, jail_path in self.rw_binds.items():
            argv += ["--bind", str(host_path), str(jail_path)]
        for jail_path in self.scratch_dirs:
            argv += ["--size", str(self.limits.tmp_mb * MiB), "--tmpfs", jail_path]
        if not python.startswith("/usr/"):  # an interpreter outside /usr: make its installation visible
            prefix = str(Path(sys.base_prefix).resolve())
            argv += ["--ro-bind", prefix, prefix]
        # gym_swe itself holds hidden tests and gold patches (its task data): where the jail would show it (a
        # system-wide install under /usr, or inside a bound directory), an empty tmpfs covers it.
        package = PACKAGE_DIR.resolve()
        visible = ["/usr", "/etc", *self.ro_binds, *self.rw_binds]
        roots = [Path(root).resolve() for root in visible]
        if any(package == root or root in package.parents for root in roots):
            argv += ["--tmpfs", str(package)]
        argv += ["--ro-bind", str(EXECUTOR_PATH), JAIL_EXECUTOR]
        if not Path("/usr/bin/python").exists():  # models type `python`; Debian only has python3
            argv += ["--symlink", python, f"{JAIL_BIN}/python"]
        # The jail's root and /dev are tmpfs mounts bwrap makes without a size: writable, they would be host
        # memory without a bound. Everything mounted on them above stays as it was.
        argv += ["--remount-ro", "/dev", "--remount-ro", "/"]
        argv += ["--disable-userns", "--chdir", self.workdir, "--clearenv"]
        for key, value in self._environment().items():
            argv += ["--setenv", key, value]
        return argv

    def _overlay_prefix(self) -> list[str]:
        """Mount the copy-on-write workspace in a mount namespace of the jail's own, then start bwrap there:
        the mounts are invisible to the host and go away with the jail. The writable layer is a tmpfs of
        ``Limits.disk_mb``, so filling the disk fills only that."""
        assert self._overlay_lower is not None
        mount = (
            'mount -t tmpfs -o "size=$1" tmpfs "$3" && mkdir "$3/upper" "$3/work" '
            '&& mount -t overlay overlay -o "lowerdir=$2,upperdir=$3/upper,workdir=$3/work" "$4" '
            '&& shift 4 && exec "$@"'
        )
        layer, merged = self.host_dir / "layer", self.host_dir / "merged"
        parts = [str(self.limits.disk_mb * MiB), str(self._overlay_lower), str(layer), str(merged)]
        return [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "/bin/sh",
            "-c",
            mount,
            "gym_swe-jail",
            *parts,
        ]

    def _start_executor(self) -> Transport:
        python = _jail_python() if self.isolation == "bwrap" else sys.executable
        if self.isolation == "bwrap":
            self._cgroup = JailCgroup.create(self.host_dir.name, self.limits)
        config = {
            "workdir": self.workdir,
            "limits": self.limits.for_executor(address_space=self._cgroup is None),
            "private_pids": self.isolation == "bwrap",
        }
        pass_fds: tuple[int, ...] = ()
        if self.isolation == "bwrap":
            info_read, info_write = os.pipe()  # bwrap writes {"child-pid": N} here once the jail is up
            pass_fds = (info_write,)
            argv = [*self._bwrap_argv(python), "--info-fd", str(info_write)]
            if self._overlay_lower is not None:
                argv = self._overlay_prefix() + argv
            if self._cgroup is not None:
                argv = self._cgroup.enter_prefix() + argv
            argv += [python, "-S", "-u", JAIL_EXECUTOR, json.dumps(config)]
            env = {"PATH": os.environ.get("PATH", DEFAULT_PATH)}  # the jail sets its own (--clearenv)
        else:
            argv = [python, "-S", "-u", str(EXECUTOR_PATH), json.dumps(config)]
            env = {**os.environ, **self._environment()}
        try:
            # stderr is a pipe the host reads only when the jail dies (bwrap's and the executor's own
            # errors, never a command's): nothing lands on the host's disk, and at most a pipe's worth.
            self._process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.host_dir,
                env=env,
                pass_fds=pass_fds,
                start_new_session=True,  # its own process group: close() kills the group at once
            )
        finally:
            for fd in pass_fds:
                os.close(fd)
        assert self._process.stderr is not None
        os.set_blocking(self._process.stderr.fileno(), False)
        if pass_fds:
            self._jail_pid = _read_jail_pid(info_read)
        return PipeTransport(self._process)

    def _signal_executor(self, signum: int) -> None:
        if self.isolation == "none" or self._jail_pid is None:
            raise SandboxError("local sandbox: interrupting needs the jail (isolation='bwrap')")
        os.kill(self._jail_pid, signum)  # the executor is the jail's pid 1

    def _replied(self) -> None:
        if self._cgroup is not None:
            self._oom_kills_seen = self._cgroup.oom_kills() or 0

    def _exhaustion(self) -> str | None:
        if self._cgroup is None or self._process is None:
            return None
        kills = self._cgroup.oom_kills()
        if kills is None or kills <= self._oom_kills_seen:
            return None  # the OOM killer took nothing since the last reply
        try:
            # bwrap passes on its pid 1's death as 128 + the signal: 137 is the executor SIGKILLed. The jail
            # itself killed (from outside, or by close()) reads as -9 instead.
            status = self._process.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            return None  # the executor is alive (hung, not dead): not the OOM killer's work
        if status != 128 + signal.SIGKILL:
            return None
        return (
            f"the OOM killer of the jail's own memory limit took its executor: the commands used up the "
            f"memory they may use (Limits.memory_mb={self.limits.memory_mb}, /tmp and /dev/shm included)"
        )

    def _death_details(self) -> str:
        parts = []
        if self._process is not None and self._process.poll() is not None:
            code = self._process.returncode
            parts.append(f"jail exited with {'signal ' + str(-code) if code < 0 else 'status ' + str(code)}")
        if self._process is not None and self._process.stderr is not None:
            try:
                data = self._process.stderr.read(65536) or b""
            except (OSError, ValueError):
                data = b""
            tail = data[-2000:].decode("utf-8", errors="replace").strip()
            if tail:
                parts.append(f"jail stderr: {tail}")
        return "; ".join(parts)

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
            for pipe in (process.stdin, process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()
            if self.isolation == "none":
                _kill_strays(self.host_dir)
        if self._jail_pid is not None:
            _wait_gone(self._jail_pid)
            self._jail_pid = None
        if self._cgroup is not None:
            self._cgroup.kill_and_remove()
            self._cgroup = None
        if self.host_dir.exists():
            _remove_tree(self.host_dir)


@functools.cache
def _private_system_files(root: str = "/etc") -> tuple[tuple[str, bool], ...]:
    """(path, is_dir) of what under ``root`` is not world-readable (/etc/shadow, /etc/ssl/private...), the
    outermost of each subtree only. Found once per process (about 50 ms for a usual /etc)."""
    found: list[tuple[str, bool]] = []
    for directory, dirs, files in os.walk(root):
        for name in list(dirs) + files:
            path = os.path.join(directory, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if stat.S_ISLNK(mode):
                continue
            if stat.S_ISDIR(mode):
                if mode & 0o005 != 0o005:
                    found.append((path, True))
                    dirs.remove(name)
            elif not mode & 0o004:
                found.append((path, False))
    return tuple(found)


def _etc_masks() -> list[str]:
    """bwrap arguments that hide what in /etc only its owner (or group) may read. The jail's user is the
    host's root for file ownership when gym_swe runs as root (bwrap maps the one uid it has), so without
    these the owner's read bit would let it read them."""
    argv: list[str] = []
    for path, is_dir in _private_system_files():
        if is_dir:
            argv += ["--perms", "0755", "--tmpfs", path, "--remount-ro", path]
        else:
            argv += ["--ro-bind", "/dev/null", path]
    return argv


def _read_jail_pid(fd: int, seconds: float = 60.0) -> int | None:
    """The jail's pid 1 from bwrap's --info-fd (None if bwrap failed before writing it)."""
    text = b""
    deadline = time.monotonic() + seconds
    with os.fdopen(fd, "rb", buffering=0) as info:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([info], [], [], max(deadline - time.monotonic(), 0.0))
            chunk = info.read(4096) if ready else b""
            if not chunk:
                break
            text += chunk
    try:
        return int(json.loads(text)["child-pid"])
    except (ValueError, KeyError, TypeError):
        return None


def _jail_python() -> str:
    """The interpreter that runs the executor inside the jail: the system's, as the jail shows /usr."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK):
            return candidate
    return str(Path(sys.executable).resolve())


def overlay_possible() -> bool:
    """Copy-on-write workspaces need root (to mount overlayfs in a private mount namespace)."""
    return os.geteuid() == 0 and shutil.which("unshare") is not None


def copy_tree(source: Path, dest: Path) -> None:
    """Copy a directory tree, reflinking where the filesystem can (btrfs, xfs): then it is copy-on-write."""
    done = subprocess.run(
        ["cp", "-a", "--reflink=auto", str(source), str(dest)], capture_output=True, text=True
    )
    if done.returncode != 0:
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(source, dest, symlinks=True)


def prune_workspaces() -> list[Path]:
    """Remove local workspaces whose owning process is gone (a crashed run's leftovers). Returns them."""
    removed = []
    for path in sorted(workspace_root().glob(f"{WORKSPACE_PREFIX}*")):
        owner = path.name[len(WORKSPACE_PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            _remove_tree(path)
            removed.append(path)
    return removed


def _wait_gone(pid: int, seconds: float = 5.0) -> None:
    """Wait until the jail's pid 1 has exited: the kernel kills the rest of its pid namespace before that.

    It is an orphan once bwrap is killed, so the host's init reaps it, sometimes seconds later: a zombie
    counts as gone.
    """
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return
        if state in ("Z", "X"):
            return
        try:
            os.kill(pid, signal.SIGKILL)  # --die-with-parent already sent it; this only hurries it
        except ProcessLookupError:
            return
        time.sleep(0.001)


def _kill_strays(host_dir: Path) -> None:
    """isolation='none' has no pid namespace: kill processes still running in the workspace."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if Path(os.readlink(proc / "cwd")).is_relative_to(host_dir):
                os.kill(int(proc.name), signal.SIGKILL)
        except (OSError, ValueError):
            continue


def _remove_tree(path: Path) -> None:
    """rmtree that also removes what the agent made unreadable (a chmod 000 directory, say)."""
    for root, dirs, _ in os.walk(path):
        for name in dirs:
            child = os.path.join(root, name)
            if not os.path.islink(child):
                try:
                    os.chmod(child, 0o700)  # before os.walk descends into it
                except OSError:
                    pass
    shutil.rmtree(path, ignore_errors=True)
