"""The proxy's connections, bounded as a server facing untrusted clients must be.

Anything in a sandbox that can reach the proxy's socket can connect, with no secret: the agent's own code, not
only its harness. Unbounded, a flood of connections that send nothing takes every file descriptor of the
process the proxy runs in (the trainer's): other rollouts' requests fail, and so does whatever the trainer
spawns next ("too many open files"). So:

- **In all**: at most ``max_connections`` open at once, by default a quarter of this process's descriptor
  limit (`default_max_connections`), whatever the clients do: the rest stays the trainer's. A connection past
  that closes the *oldest idle* one (no request being served) of the socket with the most connections: an
  honest harness sends its request as soon as it connects, so connections that send nothing, or their headers
  a byte at a time, are the ones that go, however many there are. When every open connection is serving a
  request, the new one is closed instead.
- **Per socket**: the kernel queues connections not yet accepted in the listening socket's backlog, and a
  client that reconnects as fast as it can keeps that full, so that others' connects fail (EAGAIN). Give each
  sandbox a socket of its own (`ProxyServer.listen`): a flood fills only its own backlog, and room is made
  on the socket with the most connections, its own.
- **Per rollout**: at most ``max_per_rollout`` requests of one rollout served at once (a 429 past that, and
  the connection closed), counted only once the secret is checked, so nobody can use up another rollout's.
- **In time**: a connection that has not sent a whole request within ``idle_timeout`` seconds of opening (or
  of its last response) is closed (aiohttp's keep-alive timeout), and a request body that takes longer than
  that to arrive is a 408.

Clients that reconnect and retry (every OpenAI SDK does) lose nothing: the proxy answers a retried request
from its record (see `gym_swe.rollout.proxy.server`).
"""

from __future__ import annotations

import asyncio
import errno
import os
import resource
import socket
import stat
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from gym_swe.rollout.proxy.conversation import RequestError

DEFAULT_MAX_PER_ROLLOUT = 8  # a harness sends one request at a time; a retry may overlap its original
DEFAULT_IDLE_TIMEOUT = 60.0
# Out of descriptors (the trainer's own use, not the proxy's: it stays under its cap): accept again later.
_RESOURCE_ERRORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


def default_max_connections() -> int:
    """A quarter of this process's soft descriptor limit (between 64 and 4096): the proxy's share, the rest
    left to the trainer's sandboxes, processes and files."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 4096
    return max(64, min(4096, soft // 4))


class ConnectionLimiter:
    """Accepts the proxy's connections on its sockets and keeps them within the bounds above. Used on the
    event loop only."""

    def __init__(self, max_connections: int, max_per_rollout: int) -> None:
        self.max_connections = max_connections
        self.max_per_rollout = max_per_rollout
        # Open connections (aiohttp's protocol objects) by the socket they came in on, least recently active
        # first. Room is made on the socket with the most: a flood on one socket closes its own.
        self._open: dict[str, OrderedDict[Any, None]] = {}
        self._count = 0
        self._serving: dict[Any, str] = {}  # connection -> the rollout whose request it is serving
        self._per_rollout: Counter[str] = Counter()
        self.accepted = self.evicted = self.refused = self.over_rollout = 0
        """Counts, for logs and tests: connections accepted, closed to make room, refused (every one busy),
        and requests refused with a 429 (their rollout's requests at the cap)."""

    async def serve(self, listener: socket.socket, protocol_factory: Callable[[], Any], door: str) -> None:
        """Accept connections on ``listener`` (non-blocking, listening), named ``door``, until cancelled."""
        loop = asyncio.get_running_loop()
        connections = self._open.setdefault(door, OrderedDict())
        while True:
            try:
                connection, _ = await loop.sock_accept(listener)
            except OSError as error:
                if error.errno in _RESOURCE_ERRORS:
                    await asyncio.sleep(0.1)
                    continue
                raise
            if not self._make_room():
                self.refused += 1
                connection.close()
                continue
            self.accepted += 1
            try:
                _, protocol = await loop.connect_accepted_socket(protocol_factory, connection)
            except OSError:
                connection.close()
                continue
            connections[protocol] = None
            self._count += 1

    def _make_room(self) -> bool:
        """Whether a new connection may open: room under the cap, made by closing the oldest idle connection
        of the socket that has the most."""
        while self._count >= self.max_connections:
            if len(self._serving) >= self._count:
                return False  # every one is serving a request
            connections = max(self._open.values(), key=len)
            oldest = next(iter(connections))
            transport = getattr(oldest, "transport", None)
            if transport is None or transport.is_closing():  # closed by itself: only forget it
                del connections[oldest]
                self._count -= 1
            elif oldest in self._serving:
                if all(connection in self._serving for connection in connections):
                    return False  # the largest socket's are all serving: the others have fewer
                connections.move_to_end(oldest)
            else:
                del connections[oldest]
                self._count -= 1
                self.evicted += 1
                oldest.force_close()
        return True

    @contextmanager
    def serving(self, connection: Any, rollout_id: str) -> Iterator[None]:
        """Marks ``connection`` as serving a request of ``rollout_id`` (an authorized one): it is not closed
        to make room meanwhile. A `RequestError` (429) when that rollout's requests are at the cap."""
        if self._per_rollout[rollout_id] >= self.max_per_rollout:
            self.over_rollout += 1
            raise RequestError(
                429,
                f"rollout {rollout_id!r} has {self.max_per_rollout} requests in flight already (this proxy's "
                "max_connections_per_rollout): send one at a time",
                code="too_many_requests",
            )
        self._per_rollout[rollout_id] += 1
        self._serving[connection] = rollout_id
        try:
            yield
        finally:
            self._serving.pop(connection, None)
            self._per_rollout[rollout_id] -= 1
            if not self._per_rollout[rollout_id]:
                del self._per_rollout[rollout_id]
            for connections in self._open.values():
                if connection in connections:
                    connections.move_to_end(connection)  # active just now: the last to be closed for room

    def requests_of(self, rollout_id: str) -> int:
        """Requests of ``rollout_id`` being served now."""
        return self._per_rollout[rollout_id]

    @property
    def open_connections(self) -> int:
        """Connections open now."""
        return sum(
            1
            for connections in self._open.values()
            for connection in connections
            if getattr(connection, "transport", None) is not None and not connection.transport.is_closing()
        )


BACKLOG = 128  # connections the kernel holds until the proxy accepts them (aiohttp's default)


def unix_listener(path: str) -> socket.socket:
    """A non-blocking socket listening at the unix path ``path``."""
    try:  # a socket file a previous proxy left (as asyncio's own unix servers do)
        if stat.S_ISSOCK(os.stat(path).st_mode):
            os.remove(path)
    except FileNotFoundError:
        pass
    return _listening(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM), path)


def tcp_listener(host: str, port: int) -> socket.socket:
    """A non-blocking socket listening on ``host``:``port`` (0: any free port)."""
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    return _listening(listener, (host, port))


def _listening(listener: socket.socket, address: Any) -> socket.socket:
    try:
        listener.bind(address)
        listener.listen(BACKLOG)
        listener.setblocking(False)
    except OSError:
        listener.close()
        raise
    return listener
