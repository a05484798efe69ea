"""Host side of the executor protocol, shared by every backend that runs ``executor.py`` in its sandbox.

A backend says how to start the executor and how to reach its stdin/stdout (a `Transport`), and how to stop
everything; `ExecutorSandbox` does the rest: commands, files, uploads and downloads, bounded output, and
turning a dead or hung executor into a `SandboxCrashedError` that says why.
"""

from __future__ import annotations

import io
import json
import os
import signal
import tarfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any, NoReturn, Protocol, TypeVar

from gym_swe.errors import FileTooLargeError, SandboxCrashedError, SandboxError, SandboxExhaustedError
from gym_swe.sandbox.base import ExecResult, Limits, join_head_tail
from gym_swe.sandbox.protocol import MAX_HEADER_BYTES, ProtocolViolation, check_reply, parse_header

EXECUTOR_PATH = Path(__file__).with_name("executor.py")
_Box = TypeVar("_Box", bound="ExecutorSandbox")  # `with DockerSandbox(...) as box` gives a DockerSandbox

# Seconds the host waits beyond a command's own timeout before it declares the executor hung: the executor
# enforces the timeout itself, so this only fires when the sandbox is wedged (or killed from outside).
HUNG_GRACE_SECONDS = 30.0
# Deadline for requests that carry no timeout of their own (files, ping), and for the executor to start.
REQUEST_SECONDS = 120.0
# The most the host takes into its memory from one sandbox reply, by kind (callers may ask for less).
READ_MAX_BYTES = 64 * 1024 * 1024
ARCHIVE_MAX_BYTES = 512 * 1024 * 1024
MANIFEST_MAX_FILES = 500_000
MANIFEST_MAX_BYTES = 256 * 1024 * 1024

# Exceptions the executor may report that callers expect as the builtin type, as with open().
_FILE_ERRORS: dict[str, type[Exception]] = {
    "FileNotFoundError": FileNotFoundError,
    "IsADirectoryError": IsADirectoryError,
    "NotADirectoryError": NotADirectoryError,
    "PermissionError": PermissionError,
    "FileExistsError": FileExistsError,
    "FileTooLargeError": FileTooLargeError,
}


class Transport(Protocol):
    """A byte pipe to the executor's stdin and from its stdout."""

    def send(self, data: bytes) -> None: ...

    def recv(self, max_bytes: int, deadline: float | None) -> bytes:
        """Up to ``max_bytes`` (b"" at end of stream); raises TimeoutError at ``deadline`` (monotonic)."""
        ...

    def pending(self) -> bool:
        """Whether protocol bytes are waiting to be read now (between requests there must be none)."""
        ...

    def close(self) -> None: ...


class ExecutorSandbox(ABC):
    """A sandbox whose commands and files go through one executor process kept running inside it."""

    backend: str = ""

    def __init__(self, workdir: str, limits: Limits | None) -> None:
        self.workdir = workdir
        self.limits = limits or Limits()
        self._lock = threading.Lock()
        self._buffer = bytearray()
        self._transport: Transport | None = None
        self._closed = False
        self._dead_reason: str | None = None
        self._dead_error: type[SandboxCrashedError] = SandboxCrashedError
        self._next_id = 0
        self._running_command = False
        self.executor_info: dict[str, Any] = {}

    # -- what a backend provides ---------------------------------------------------------------------------
    @abstractmethod
    def _start_executor(self) -> Transport:
        """Create the sandbox and start the executor in it."""

    @abstractmethod
    def _stop(self) -> None:
        """Kill everything in the sandbox and remove it. Must be safe to call more than once."""

    def _death_details(self) -> str:
        """What the backend knows about why the sandbox died (exit status, OOM kill, stderr)."""
        return ""

    def _exhaustion(self) -> str | None:
        """Called once the executor is lost: why its death was the sandbox's own commands' doing (killed by
        the OOM killer of the sandbox's own memory limit since the last reply it gave), or None for any other
        death (killed from outside, a daemon gone). Must be read before `_stop` removes the evidence."""
        return None

    def _replied(self) -> None:  # noqa: B027 (a backend that needs no note does nothing)
        """Called after every well-formed reply: the executor was alive then (a backend notes what it needs
        to tell, should it die later, whether it died of the commands' own resource use)."""

    def _signal_executor(self, signum: int) -> None:
        """Send the executor a signal from the host (the backend knows where it runs)."""
        raise NotImplementedError

    def _needs_protection(self) -> bool:
        """Whether commands share a machine boundary with the executor (all but an unjailed sandbox)."""
        return True

    # -- life cycle ----------------------------------------------------------------------------------------
    def _boot(self) -> None:
        """Start the executor and wait for its hello. Backends call this at the end of ``__init__``."""
        try:
            self._transport = self._start_executor()
            header, _ = self._receive("hello", None, 0, time.monotonic() + REQUEST_SECONDS)
        except (OSError, EOFError, TimeoutError, ValueError, ProtocolViolation) as error:
            details = self._death_details()
            self.close()
            raise SandboxError(
                f"{self.backend} sandbox failed to start: {error}" + (f"; {details}" if details else "")
            ) from error
        except BaseException:
            self.close()
            raise
        if not header.get("ok"):
            self.close()
            raise SandboxError(f"{self.backend} sandbox: expected the executor's hello, got {header!r}")
        if self._needs_protection() and not header["protected"]:
            self.close()
            raise SandboxError(
                f"{self.backend} sandbox: its executor could not make itself non-dumpable (prctl through "
                "ctypes failed in the sandbox's python), so the commands it runs could read its memory and "
                "forge its replies; refusing to use it"
            )
        self.executor_info = header

    @property
    def alive(self) -> bool:
        return not self._closed and self._dead_reason is None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self._transport is not None:
                self._transport.close()
        finally:
            self._stop()

    def __enter__(self: _Box) -> _Box:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- the protocol ----------------------------------------------------------------------------------------
    def _request(
        self,
        header: dict[str, Any],
        payload: bytes = b"",
        timeout: float | None = None,
        max_reply: int = 0,
        max_records: int | None = None,
    ) -> tuple[dict[str, Any], bytes]:
        """Send one request and read its reply, which may carry at most ``max_reply`` bytes of payload (an
        ``exec`` reply, at most ``max_records`` of them records, when the request asked for records).

        A reply that breaks the protocol, bytes that arrive unasked, a dead or silent executor: the sandbox
        is then crashed (`SandboxCrashedError`) and stays so.
        """
        op = str(header.get("op"))
        with self._lock:
            if self._closed:
                raise SandboxError(f"{self.backend} sandbox is closed")
            if self._dead_reason is not None:
                raise self._dead_error(self._dead_reason)
            assert self._transport is not None
            wait = REQUEST_SECONDS if timeout is None else timeout + HUNG_GRACE_SECONDS
            deadline = time.monotonic() + wait
            self._next_id += 1
            request_id = self._next_id
            try:
                if self._buffer or self._transport.pending():
                    raise ProtocolViolation("bytes arrived that no request asked for")
                frame = json.dumps({**header, "id": request_id, "size": len(payload)}).encode("utf-8")
                self._transport.send(frame + b"\n" + payload)
                reply, data = self._receive(op, request_id, max_reply, deadline, max_records)
            except ProtocolViolation as violation:
                self._die(f"protocol violation during {op!r}: {violation}")
            except TimeoutError:
                self._die(f"the executor did not answer within {wait:.0f} s ({op})")
            except (OSError, ValueError, EOFError) as error:
                self._die(f"lost the executor during {op!r}: {error}")
            self._replied()
        if not reply["ok"]:
            kind, message = reply["kind"], reply["error"]
            if kind in _FILE_ERRORS:
                raise _FILE_ERRORS[kind](message)
            raise SandboxError(f"{self.backend} sandbox: {op} failed: {kind}: {message}")
        return reply, data

    def _die(self, reason: str) -> NoReturn:
        exhaustion = details = None
        try:
            exhaustion = self._exhaustion()
        except Exception:  # no evidence of the commands' doing: a death like any other
            exhaustion = None
        try:
            details = self._death_details()
        except Exception as error:  # diagnostics are best effort; the reason itself must survive
            details = f"(could not inspect the sandbox: {error})"
        parts = [f"{self.backend} sandbox died: {reason}", exhaustion, details]
        self._dead_reason = "; ".join(part for part in parts if part)
        self._dead_error = SandboxExhaustedError if exhaustion else SandboxCrashedError
        self._buffer.clear()
        try:
            self._stop()
        finally:
            raise self._dead_error(self._dead_reason)

    def _receive(
        self,
        op: str,
        request_id: int | None,
        max_payload: int,
        deadline: float,
        max_records: int | None = None,
    ) -> tuple[dict[str, Any], bytes]:
        header = parse_header(self._read_line(deadline))
        check_reply(op, request_id, header, max_payload, max_records)
        payload = self._read_exactly(header["size"], deadline)
        if self._buffer:
            raise ProtocolViolation(f"{len(self._buffer)} bytes after the reply to {op!r}")
        return header, payload

    def _fill(self, deadline: float, want: int) -> None:
        assert self._transport is not None
        chunk = self._transport.recv(max(want, 1), deadline)
        if not chunk:
            raise EOFError("the executor's output ended")
        self._buffer += chunk

    def _read_line(self, deadline: float) -> bytes:
        searched = 0
        while True:
            end = self._buffer.find(b"\n", searched)
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                return line
            searched = len(self._buffer)
            if searched > MAX_HEADER_BYTES:
                raise ProtocolViolation(f"a header line longer than {MAX_HEADER_BYTES} bytes")
            self._fill(deadline, MAX_HEADER_BYTES + 1 - searched)

    def _read_exactly(self, size: int, deadline: float) -> bytes:
        while len(self._buffer) < size:
            self._fill(deadline, min(size - len(self._buffer), 1 << 20))
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    # -- the Sandbox protocol --------------------------------------------------------------------------------
    def exec(
        self,
        command: str,
        timeout: float | None = 60.0,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        max_output: int | None = None,
        records: int | None = None,
    ) -> ExecResult:
        limit = max_output or self.limits.output_bytes
        if records is not None and (not isinstance(records, int) or isinstance(records, bool) or records < 0):
            raise ValueError(f"records must be a byte bound (an int >= 0) or None, got {records!r}")
        problem = _unrunnable(command, cwd, env)
        if problem is not None:  # the policy's mistake, not the sandbox's: an ordinary failed command
            return ExecResult(
                exit_code=127,
                stdout="",
                stderr=f"cannot start command: {problem}\n",
                records=b"" if records is not None else None,
            )
        request = {
            "op": "exec",
            "cmd": command,
            "timeout": timeout,
            "cwd": cwd,
            "env": dict(env) if env else None,
            "max_output": limit,
        }
        if records is not None:
            request["records"] = records
        self._running_command = True
        try:
            reply, data = self._request(
                request, timeout=timeout, max_reply=2 * limit + 2 + (records or 0), max_records=records
            )
        finally:
            self._running_command = False
        out_size, out_head = reply["stdout_size"], reply["stdout_head"]
        err_head, err_size = reply["stderr_head"], reply["stderr_size"]
        out, err = data[:out_size], data[out_size : out_size + err_size]
        return ExecResult(
            exit_code=int(reply["exit_code"]),
            stdout=join_head_tail(out[:out_head], out[out_head:], reply["stdout_cut"]),
            stderr=join_head_tail(err[:err_head], err[err_head:], reply["stderr_cut"]),
            timed_out=bool(reply["timed_out"]),
            duration=float(reply["duration"]),
            stdout_cut=int(reply["stdout_cut"]),
            stderr_cut=int(reply["stderr_cut"]),
            interrupted=bool(reply["interrupted"]),
            records=data[out_size + err_size :] if records is not None else None,
            records_cut=int(reply["records_cut"]) if records is not None else 0,
        )

    def interrupt(self) -> bool:
        """Stop the command being run (see `Sandbox.interrupt`); False when none is."""
        if not self._running_command or not self.alive:
            return False
        try:
            self._signal_executor(signal.SIGUSR1)
        except (OSError, SandboxError):
            return False
        return True

    def kill_processes(self) -> int:
        """Kill every process that commands started, background daemons included; returns how many.

        The envs call this at submit, so nothing the agent left running can change the workspace later.
        """
        reply = self._request({"op": "kill_all"})[0]
        if reply["left"]:
            self._die(f"{reply['left']} process(es) survived kill_all")
        return int(reply["killed"])

    def read_file(self, path: str, max_bytes: int = READ_MAX_BYTES) -> bytes:
        """The file's bytes; `FileTooLargeError` when it holds more than ``max_bytes``."""
        return self._request({"op": "read", "path": path, "max_bytes": max_bytes}, max_reply=max_bytes)[1]

    def manifest(self, path: str, max_files: int = MANIFEST_MAX_FILES) -> list[list[Any]]:
        """Every file and symbolic link under ``path`` (``.git`` directories left out), hashed by the
        executor itself, so that no program the workspace could configure runs: ``[relative path, "f",
        executable, size, sha256 or None]`` or ``[relative path, "l", target]``."""
        _, data = self._request(
            {"op": "manifest", "path": path, "max_files": max_files, "max_bytes": MANIFEST_MAX_BYTES - 4096},
            timeout=600,
            max_reply=MANIFEST_MAX_BYTES,
        )
        try:
            entries = json.loads(data)
        except ValueError as error:
            self._die(f"protocol violation during 'manifest': {error}")
        if not isinstance(entries, list) or not all(_manifest_entry_ok(entry) for entry in entries):
            self._die("protocol violation during 'manifest': malformed entries")
        return entries

    def get_files(
        self, path: str, names: list[str], dest: str | Path, max_bytes: int = ARCHIVE_MAX_BYTES
    ) -> Path:
        """Copy the named files and symbolic links under ``path`` (relative names) into the host directory
        ``dest``, links as links; returns ``dest``."""
        _, data = self._request(
            {"op": "get_files", "path": path, "names": names, "max_bytes": max_bytes},
            timeout=600,
            max_reply=max_bytes,
        )
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
            extract_safely(archive, dest, keep_links=True)
        return dest

    def write_file(self, path: str, content: str | bytes, mode: int | None = None) -> None:
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        self._request({"op": "write", "path": path, "mode": mode}, data)

    def upload(self, source: str | Path, dest: str | None = None) -> None:
        source = Path(source)
        if not source.exists():
            raise FileNotFoundError(f"upload: no such host file or directory: {source}")
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            if source.is_dir():
                for child in sorted(source.iterdir()):
                    archive.add(child, arcname=child.name)
            else:
                archive.add(source, arcname=source.name)
        self._request({"op": "put_tar", "dest": dest or self.workdir}, buffer.getvalue())

    def download(self, path: str, dest: str | Path, max_bytes: int = ARCHIVE_MAX_BYTES) -> Path:
        _, data = self._request({"op": "get_tar", "path": path, "max_bytes": max_bytes}, max_reply=max_bytes)
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
            extract_safely(archive, dest)
        top = PurePosixPath(path.rstrip("/")).name or "."
        return dest / top


def _unrunnable(command: str, cwd: str | None, env: Mapping[str, str] | None) -> str | None:
    """Why a command cannot be started at all (a NUL byte or a lone surrogate in it), or None."""
    texts = [("the command", command), ("cwd", cwd or "")]
    texts += [(f"environment variable {key!r}", f"{key}={value}") for key, value in (env or {}).items()]
    for what, text in texts:
        if not isinstance(text, str):
            return f"{what} is not text"
        if "\x00" in text:
            return f"{what} contains a NUL byte (\\x00), which no program can receive"
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            return f"{what} contains {text[error.start]!r}, a lone surrogate that is not valid Unicode"
    return None


def _manifest_entry_ok(entry: Any) -> bool:
    if not isinstance(entry, list) or len(entry) < 3 or not isinstance(entry[0], str):
        return False
    if entry[1] == "l":
        return len(entry) == 3 and isinstance(entry[2], str)
    return (
        entry[1] == "f"
        and len(entry) == 5
        and isinstance(entry[2], bool)
        and isinstance(entry[3], int)
        and (entry[4] is None or isinstance(entry[4], str))
    )


def extract_safely(archive: tarfile.TarFile, dest: Path, keep_links: bool = False) -> None:
    """Extract an archive that came out of a sandbox: what the agent made must not reach outside ``dest``.

    Links are dropped (a symlink to /etc/passwd or to the host's checkout must not be followed later) unless
    ``keep_links``, when symbolic links are made as links but never followed during the extraction; absolute
    names, ``..`` parts, hard links and device files are always dropped.
    """
    root = dest.resolve()
    members = []
    for member in archive.getmembers():
        name = PurePosixPath(member.name)
        if name.is_absolute() or ".." in name.parts:
            continue
        if keep_links and member.issym():
            members.append(member)
            continue
        if not (member.isfile() or member.isdir()):
            continue
        target = (root / name).resolve()
        if target != root and root not in target.parents:
            continue
        member.mode = (member.mode & 0o755) | 0o600  # keep x bits, drop setuid and make it readable by us
        members.append(member)
    # Extract files only after their directories, and never through a symlink made by this archive.
    for member in members:
        target = root / member.name
        if member.isdir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        if any(p.is_symlink() for p in [target, *target.parents] if p != root and root in p.parents):
            continue
        if member.issym():
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(member.linkname, target)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        source = archive.extractfile(member)
        if source is None:
            continue
        with source, open(target, "wb") as handle:
            while chunk := source.read(1 << 20):
                handle.write(chunk)
        os.chmod(target, member.mode & 0o777)
