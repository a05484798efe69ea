"""The ``docker`` backend: one container per sandbox, driven through the docker SDK.

The container's main process is the executor (executor.py), attached through its stdin and stdout: it is
the container's pid 1, which commands cannot signal. No network by default, memory/CPU/pids limits, a /tmp
tmpfs of ``Limits.tmp_mb`` and a /dev/shm of ``SHM_MB`` (both charged to the container's memory, which
`Limits` checks can hold them), fewer capabilities than docker's default, and ``gym_swe.*`` labels (so
`gym-swe sandbox prune` can find what a crashed run left); for a harness that runs in the container, the
directory of the proxy's unix socket bound read-only (``proxy_socket_dir``). Commands do not go through
``docker exec`` one by one (about 46 ms each here): every command and file transfer is a message on the
attached stream. Files travel as tar archives.
"""

from __future__ import annotations

import datetime
import functools
import io
import json
import os
import select
import socket
import struct
import tarfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gym_swe.errors import ConfigError, SandboxError, SandboxUnavailableError, missing_dependency
from gym_swe.sandbox.base import SHM_MB, Limits, MiB
from gym_swe.sandbox.executor_client import EXECUTOR_PATH, ExecutorSandbox, Transport

BASE_IMAGE = "gym-swe-base:latest"
LABEL = "gym_swe.sandbox"  # every container gym_swe creates carries this label
DAEMON_HINT = (
    "Start the daemon (sudo systemctl start docker, or run dockerd), check that this user may use it, "
    "or point DOCKER_HOST at a reachable daemon."
)
CONTAINER_EXECUTOR = "/run/gym_swe/executor.py"
# Where ``proxy_socket_dir`` appears in the container: the same path as in a local jail.
PROXY_SOCKET_DIR = "/run/gym-swe-proxy"
# Capabilities no sandbox needs; SYS_PTRACE above all (it would reach the executor's memory and pipes).
DROPPED_CAPABILITIES = ("SYS_PTRACE", "NET_RAW", "MKNOD", "SYS_CHROOT", "AUDIT_WRITE", "SETFCAP")
# Docker splits the executor's stream into frames of its own; none should come near this.
MAX_RAW_BYTES = 64 * 1024 * 1024
# Runs in the container to start the executor with whatever Python the image has (task images put it in
# different places). "$0" is the executor's path, "$1" its JSON config.
_LAUNCH = (
    "for p in python3 python /opt/miniconda3/bin/python3 /usr/local/bin/python3; do "
    'if command -v "$p" >/dev/null 2>&1; then exec "$p" -S -u "$0" "$1"; fi; done; '
    'echo "gym_swe: the image has no python3, which the sandbox executor needs" >&2; exit 127'
)


def _docker() -> Any:
    try:
        import docker
    except ImportError:
        raise missing_dependency("docker", "docker") from None
    return docker


@functools.cache
def docker_client() -> Any:
    """One docker client per process (from DOCKER_HOST or the default socket), checked to answer."""
    docker = _docker()
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as error:
        docker_client.cache_clear()
        raise SandboxUnavailableError(f"The Docker daemon is unreachable: {error}. {DAEMON_HINT}") from error
    return client


@functools.lru_cache(maxsize=1)
def _executor_archive() -> bytes:
    """executor.py as a tar archive for put_archive, at CONTAINER_EXECUTOR."""
    buffer = io.BytesIO()
    data = EXECUTOR_PATH.read_bytes()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        member = tarfile.TarInfo(CONTAINER_EXECUTOR.lstrip("/"))
        member.size, member.mode = len(data), 0o644
        archive.addfile(member, io.BytesIO(data))
    return buffer.getvalue()


class DockerStreamTransport:
    """An attached exec stream. Docker multiplexes stdout and stderr on it in frames: an 8-byte header
    (stream id, 3 zero bytes, big-endian length), then the payload. Stdout frames carry the protocol;
    stderr frames (executor diagnostics) are kept for error messages."""

    def __init__(self, sock: socket.socket, leftover: bytes = b"") -> None:
        self._sock = sock
        self._raw = bytearray(leftover)
        self._stdout = b""  # a frame `pending` found
        self._ended = False
        self.stderr_tail = bytearray()

    def send(self, data: bytes) -> None:
        self._sock.sendall(data)

    def recv(self, max_bytes: int, deadline: float | None) -> bytes:
        while True:
            payload = self._next_stdout_frame()
            if payload is not None:
                return payload
            if self._ended:
                return b""
            wait = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            ready, _, _ = select.select([self._sock], [], [], wait)
            if not ready:
                raise TimeoutError("no answer from the executor")
            self._read_socket(max_bytes)

    def pending(self) -> bool:
        while not self._ended and select.select([self._sock], [], [], 0)[0]:
            self._read_socket(65536)
        return bool(self._stdout) or self._has_stdout_frame()

    def _read_socket(self, max_bytes: int) -> None:
        chunk = self._sock.recv(max(max_bytes, 65536))
        if not chunk:
            self._ended = True
        self._raw += chunk
        if len(self._raw) > MAX_RAW_BYTES:  # a frame larger than any reply may be: never buffered whole
            raise OSError(f"a stream frame of more than {MAX_RAW_BYTES} bytes")

    def _has_stdout_frame(self) -> bool:
        payload = self._next_stdout_frame()
        if payload is None:
            return False
        self._stdout = payload + self._stdout
        return True

    def _next_stdout_frame(self) -> bytes | None:
        """The next complete stdout frame's payload (stderr frames are kept aside), or None."""
        if self._stdout:
            payload, self._stdout = self._stdout, b""
            return payload
        while len(self._raw) >= 8:
            stream, size = self._raw[0], struct.unpack(">I", self._raw[4:8])[0]
            if len(self._raw) < 8 + size:
                return None
            payload = bytes(self._raw[8 : 8 + size])
            del self._raw[: 8 + size]
            if stream == 1 and payload:
                return payload
            if stream == 2:
                self.stderr_tail = (self.stderr_tail + payload)[-4000:]
        return None

    def close(self) -> None:
        try:
            self._sock.close()
        except OSError:
            pass


def _attach_stream(api: Any, container_id: str) -> DockerStreamTransport:
    """Attach to a created container's stdin, stdout and stderr, before it starts, and return the stream.

    On a unix socket the HTTP upgrade is done here rather than by the SDK, because the SDK hands back the
    socket after its HTTP reader may already have buffered the first bytes of the stream, where select()
    cannot see them.
    """
    params = {"stream": 1, "stdin": 1, "stdout": 1, "stderr": 1}
    socket_path = getattr(getattr(api, "_custom_adapter", None), "socket_path", None)
    if not socket_path:
        sock = api.attach_socket(container_id, params=params)
        return DockerStreamTransport(getattr(sock, "_sock", sock))
    query = "&".join(f"{key}={value}" for key, value in params.items())
    request = (
        f"POST /v{api.api_version}/containers/{container_id}/attach?{query} HTTP/1.1\r\nHost: docker\r\n"
        "Connection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: 0\r\n\r\n"
    ).encode()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(60)
    sock.connect(socket_path)
    sock.sendall(request)
    response = b""
    while b"\r\n\r\n" not in response:
        chunk = sock.recv(65536)
        if not chunk:
            raise OSError("the Docker daemon closed the connection while attaching to the executor")
        response += chunk
    head, _, leftover = response.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].decode("latin-1")
    if " 101 " not in status and " 200 " not in status:
        raise OSError(f"the Docker daemon refused to attach to the executor: {status}: {leftover[:500]!r}")
    sock.settimeout(None)
    return DockerStreamTransport(sock, leftover)


class DockerSandbox(ExecutorSandbox):
    """A Docker container.

    Args:
        image: the image to run (default: the base image that `gym-swe images build` makes). An image that
            is not present locally is pulled when ``pull`` is true.
        workdir: the workspace path inside the container (created if missing).
        limits: resource limits (`Limits`): memory (no swap), CPUs, pids, file size.
        network: attach the default bridge network (off by default: ``network_mode="none"``).
        env: environment variables for every command.
        labels: extra container labels.
        source: a host directory whose contents are uploaded into the workspace.
        pull: pull a missing image (default True).
        proxy_socket_dir: a host directory holding the unix socket of gym_swe's proxy, bound read-only at
            ``PROXY_SOCKET_DIR`` for a harness that runs in the container. The container still has no
            network: the socket is its one way out, and only to the proxy (connecting to a socket needs no
            write access to its directory). Only the directory is bound, so keep nothing else in it.
        ro_binds: host directories bound read-only into the container, ``{host_path: container_path}`` (or
            paths bound at the same place), as a local jail's ``ro_binds``: an agent harness's installed
            files, say. The daemon must run on this host (a bind mount names a path on the daemon's host).
    """

    backend = "docker"

    def __init__(
        self,
        image: str = BASE_IMAGE,
        workdir: str = "/workspace",
        limits: Limits | None = None,
        network: bool = False,
        env: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        source: str | Path | None = None,
        pull: bool = True,
        proxy_socket_dir: str | Path | None = None,
        ro_binds: Sequence[str] | Mapping[str, str] = (),
    ) -> None:
        self.proxy_socket_dir = _checked_socket_dir(proxy_socket_dir)
        self.ro_binds = _checked_binds(ro_binds)
        super().__init__(workdir, limits)
        self.image = image
        self.network = network
        self.env = {"LANG": "C.UTF-8", "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat", **(env or {})}
        self.labels = {
            LABEL: "1",
            "gym_swe.owner_pid": str(os.getpid()),
            "gym_swe.owner_host": socket.gethostname(),
            "gym_swe.created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            **(labels or {}),
        }
        self.pull = pull
        self.container: Any = None
        self._transport_ref: DockerStreamTransport | None = None
        self._last_reply = time.time()  # wall clock, as the daemon's events are stamped
        self.cleanup_error: str | None = None  # why removing the container failed, if it did
        self._boot()
        if source is not None:
            self.upload(source, workdir)

    def _ensure_image(self, client: Any) -> None:
        errors = _docker().errors
        try:
            client.images.get(self.image)
            return
        except errors.ImageNotFound:
            pass
        if self.pull:
            try:
                client.images.pull(self.image)
                return
            except errors.APIError as error:
                reason = f"pulling it failed: {error.explanation or error}"
        else:
            reason = "pull=False"
        hint = " Build it with: gym-swe images build" if self.image == BASE_IMAGE else ""
        raise SandboxUnavailableError(f"Docker image {self.image!r} is not available ({reason}).{hint}")

    def _start_executor(self) -> Transport:
        client = docker_client()
        self._ensure_image(client)
        docker = _docker()
        limits = self.limits
        config = json.dumps(
            {
                "workdir": self.workdir,
                "limits": limits.for_executor(address_space=False),
                "private_pids": True,
            }
        )
        # The executor is the container's main process, its pid 1: the kernel then ignores the signals
        # commands send it (SIGKILL included, root or not), and it reaps the orphans they leave.
        self.container = client.containers.create(
            self.image,
            entrypoint=["/bin/sh", "-c", _LAUNCH, CONTAINER_EXECUTOR, config],
            command=[],
            stdin_open=True,
            network_mode="bridge" if self.network else "none",
            mem_limit=f"{limits.memory_mb}m",
            memswap_limit=f"{limits.memory_mb}m",  # no swap: over the limit means killed, not slow
            nano_cpus=int(limits.cpus * 1e9),
            pids_limit=limits.processes,
            ulimits=[
                docker.types.Ulimit(
                    name="fsize", soft=limits.file_size_mb * MiB, hard=limits.file_size_mb * MiB
                ),
                docker.types.Ulimit(name="core", soft=0, hard=0),
            ],
            # No CAP_SYS_PTRACE (docker never grants it; dropped here in case a daemon's default does):
            # without it nothing in the container may read the executor's memory or its pipes.
            cap_drop=list(DROPPED_CAPABILITIES),
            security_opt=["no-new-privileges"],
            tmpfs={"/tmp": f"rw,exec,nosuid,size={limits.tmp_mb}m"},
            shm_size=f"{SHM_MB}m",
            mounts=self._mounts(docker),
            labels=self.labels,
            environment=self.env,
            working_dir=self.workdir,
            hostname="sandbox",
        )
        self.container.put_archive("/", _executor_archive())
        self._transport_ref = _attach_stream(client.api, self.container.id)
        self.container.start()
        return self._transport_ref

    def _mounts(self, docker: Any) -> list[Any]:
        mounts = [
            docker.types.Mount(target, source, type="bind", read_only=True)
            for source, target in self.ro_binds.items()
        ]
        if self.proxy_socket_dir is not None:
            mounts.append(
                docker.types.Mount(PROXY_SOCKET_DIR, self.proxy_socket_dir, type="bind", read_only=True)
            )
        return mounts

    def _signal_executor(self, signum: int) -> None:
        if self.container is None:
            raise SandboxError("docker sandbox: no container")
        try:
            self.container.kill(signal=int(signum))  # the executor is the container's main process
        except Exception as error:
            raise SandboxError(f"docker sandbox: could not signal the executor: {error}") from error

    def _replied(self) -> None:
        self._last_reply = time.time()

    def _exhaustion(self) -> str | None:
        if self.container is None:
            return None
        self.container.reload()  # a container removed from outside, or a daemon gone: raises, so None
        state = self.container.attrs.get("State", {})
        # The executor SIGKILLed (137) while the container's own memory limit was hit: Docker's OOMKilled
        # says the limit was hit at some time in its life, the daemon's "oom" events say when.
        if state.get("Running") or state.get("ExitCode") != 137 or not state.get("OOMKilled"):
            return None
        events = self.container.client.api.events(
            since=self._last_reply,
            until=time.time(),  # now: a later bound would keep the stream open until then
            filters={"container": self.container.id, "event": "oom"},
            decode=True,
        )
        if not any(event.get("Action", event.get("status")) == "oom" for event in events):
            return None  # the OOM was earlier (a command it killed): the executor died of something else
        return (
            f"the OOM killer of the container's own memory limit took its executor: the commands used up the "
            f"memory they may use (Limits.memory_mb={self.limits.memory_mb}, /tmp and /dev/shm included)"
        )

    def _death_details(self) -> str:
        parts = []
        if self._transport_ref is not None and self._transport_ref.stderr_tail:
            text = bytes(self._transport_ref.stderr_tail).decode("utf-8", errors="replace").strip()
            parts.append(f"executor stderr: {text}")
        if self.container is not None:
            try:
                self.container.reload()
                state = self.container.attrs.get("State", {})
                parts.append(
                    f"container {self.container.short_id} is {state.get('Status')}"
                    f" (exit code {state.get('ExitCode')}, OOM-killed: {state.get('OOMKilled')})"
                )
            except Exception as error:
                parts.append(f"container {self.container.short_id} cannot be inspected: {error}")
        return "; ".join(parts)

    def _stop(self) -> None:
        if self._transport_ref is not None:
            self._transport_ref.close()
        container, self.container = self.container, None
        if container is None:
            return
        try:
            container.remove(force=True)
        except Exception as error:
            # Already gone, or the daemon is down: `gym-swe sandbox prune` removes it later by its label.
            if "No such container" not in str(error) and "404" not in str(error):
                self.cleanup_error = str(error)


def _checked_socket_dir(path: str | Path | None) -> str | None:
    """``path`` resolved, when it is an absolute path to an existing directory; else a ConfigError."""
    if path is None:
        return None
    if not isinstance(path, (str, Path)) or not os.path.isabs(path):
        raise ConfigError(
            f"proxy_socket_dir must be an absolute path to an existing directory (the one holding the "
            f"proxy's unix socket), got {path!r}"
        )
    if not os.path.isdir(path):
        raise ConfigError(
            f"proxy_socket_dir must be an existing directory (the one holding the proxy's unix socket): "
            f"{str(path)!r} is {'not a directory' if os.path.exists(path) else 'missing'}"
        )
    resolved = os.path.realpath(path)
    if resolved == "/":
        raise ConfigError("proxy_socket_dir must be the directory of the proxy's socket, not the root '/'")
    return resolved


def _checked_binds(binds: Sequence[str] | Mapping[str, str]) -> dict[str, str]:
    """``ro_binds`` as ``{host_path: container_path}``: each host path an existing absolute path (resolved),
    each container path absolute; else a ConfigError."""
    pairs = dict(binds) if isinstance(binds, Mapping) else {path: path for path in binds}
    checked = {}
    for source, target in pairs.items():
        if not os.path.isabs(str(source)) or not os.path.exists(source):
            raise ConfigError(f"ro_binds: {str(source)!r} must be an absolute path to an existing host path")
        if not str(target).startswith("/") or str(target) == "/":
            raise ConfigError(f"ro_binds: the container path {str(target)!r} must be absolute, not '/'")
        checked[os.path.realpath(source)] = str(target)
    return checked


def prune(all_owners: bool = False) -> list[str]:
    """Remove gym_swe containers left behind by processes that are gone (or, with ``all_owners``, every
    gym_swe container on the daemon). Returns the short ids removed."""
    client = docker_client()
    host = socket.gethostname()
    removed = []
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        labels = container.labels
        owner = labels.get("gym_swe.owner_pid", "")
        ours = labels.get("gym_swe.owner_host") == host and owner.isdigit()
        if not all_owners and ours and _pid_alive(int(owner)):
            continue
        container.remove(force=True)
        removed.append(container.short_id)
    return removed


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
