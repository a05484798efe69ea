"""Stopping a collection early, from a signal or from another thread, leaving no episode running.

`signals_interrupt` turns SIGINT and SIGTERM (how schedulers stop jobs) into `Interrupted` in the main thread;
a `Stop` shared with `gym_swe.rollout.collector.collect` (or a harness's collector) ends its episodes: no new
one starts, each running command is interrupted, and a sandbox whose command ignores that is closed after
`STOP_GRACE_SECONDS`. `gym-swe eval` and ``trainers/grpo.py`` exit 130 or 143 (`Interrupted.exit_code`).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Protocol

from gym_swe.sandbox.base import Sandbox

STOP_GRACE_SECONDS = 10.0
"""How long a stopped collection waits for the commands it interrupted (a command may ignore SIGINT) before
it closes their sandboxes, which ends them for sure."""


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM, raised in the main thread by `signals_interrupt`. A KeyboardInterrupt, so that code
    which handles Ctrl-C handles both; ``exit_code`` is the shell's for the signal (130, 143)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.signal_name = signal.Signals(signum).name
        super().__init__(self.signal_name)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def interrupt_of(error: BaseException) -> Interrupted:
    """``error`` as an `Interrupted`: a plain KeyboardInterrupt (Ctrl-C where no handler was installed) is
    SIGINT's."""
    return error if isinstance(error, Interrupted) else Interrupted(signal.SIGINT)


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """Within: SIGINT and SIGTERM (how schedulers stop a job) raise `Interrupted` in the main thread, once.
    Later signals are ignored while it is handled, so that closing the sandboxes is not cut short (a process
    that must go at once can still be killed). Outside the main thread it changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised = False

    def handle(signum: int, frame: Any) -> None:
        nonlocal raised
        if not raised:
            raised = True
            raise Interrupted(signum)

    previous = {signum: signal.signal(signum, handle) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class Stopped(Exception):
    """A collection ended by its `Stop` before every episode had ended."""


class Stop:
    """Ends collections early, from any thread (see the module docstring). Pass one to `collect` to stop it
    from elsewhere: a trainer's collection running in the background while its main thread is interrupted."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._changed = threading.Condition()
        self._running: dict[int, object] = {}  # id(env) -> env, for the envs an episode is using now
        self._hooks: dict[int, Callable[[], None]] = {}

    def is_set(self) -> bool:
        return self._event.is_set()

    def set(self) -> None:
        """Stop: interrupt the command each running episode's sandbox runs, and call the hooks episodes
        registered (a harness's rollout ends, so its next request is refused)."""
        self._event.set()
        with self._changed:
            envs, hooks = list(self._running.values()), list(self._hooks.values())
        for hook in hooks:
            quietly(hook)
        for env in envs:
            sandbox = _sandbox_of(env)
            if sandbox is not None:
                quietly(sandbox.interrupt)

    @contextmanager
    def running(self, env: object) -> Iterator[None]:
        """Marks ``env`` as in use by an episode (its commands are interrupted when this is set)."""
        with self._changed:
            self._running[id(env)] = env
        try:
            yield
        finally:
            with self._changed:
                self._running.pop(id(env), None)
                self._changed.notify_all()

    @contextmanager
    def hook(self, callback: Callable[[], None]) -> Iterator[None]:
        """Calls ``callback`` when this is set while inside (at once if it is set already)."""
        with self._changed:
            self._hooks[id(callback)] = callback
        if self.is_set():
            quietly(callback)
        try:
            yield
        finally:
            with self._changed:
                self._hooks.pop(id(callback), None)

    @contextmanager
    def threads(self, width: int, made: Sequence[Closable]) -> Iterator[ThreadPoolExecutor]:
        """``width`` threads for episodes. On any exception (Ctrl-C, SIGTERM, a Stop, a callback failing)
        nothing is left running (`drain`); at the end the threads are joined and the envs in ``made`` (the
        ones a factory made for this collection) closed."""
        threads = ThreadPoolExecutor(max_workers=width)
        try:
            yield threads
        except BaseException:
            self.drain(threads)
            raise
        finally:
            threads.shutdown(wait=True)
            for env in made:
                quietly(env.close)

    def drain(self, threads: ThreadPoolExecutor) -> None:
        """Set, cancel what ``threads`` has not started, wait for the episodes still running (closing their
        sandboxes after `STOP_GRACE_SECONDS`), and wait for ``threads`` to end."""
        self.set()
        threads.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        with self._changed:
            while self._running and time.monotonic() < deadline:
                self._changed.wait(max(deadline - time.monotonic(), 0.0))
            envs = list(self._running.values())
        for env in envs:  # a command that ignored the interrupt, or grading: its sandbox goes now
            sandbox = _sandbox_of(env)
            if sandbox is not None:
                quietly(sandbox.close)
        threads.shutdown(wait=True)


def _sandbox_of(env: object) -> Sandbox | None:
    """The sandbox of an env in this process (None for an env elsewhere: a Ray actor's, a remote one)."""
    sandbox: Sandbox | None = getattr(getattr(env, "unwrapped", None), "sandbox", None)
    return sandbox


class Closable(Protocol):
    """What `Stop.threads` closes: any env (in this process, a Ray actor's handle, a remote one)."""

    def close(self) -> None: ...


def quietly(action: Callable[[], Any]) -> None:
    """Calls ``action``, ignoring an Exception it raises."""
    try:
        action()
    except Exception:
        pass  # stopping goes on: a sandbox that is already gone has nothing left to stop
