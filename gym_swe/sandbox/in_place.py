"""A sandbox that is the machine this process already runs on: for gym_swe's grader inside a container that
someone else made (a Harbor task's verifier, `gym_swe.grading.in_container`).

No jail: the container is the only boundary, and it is shared with whatever else runs in it. What this
backend adds is a user: the executor, and every command it runs, runs as ``user`` (an unprivileged uid), so
the code under test cannot read what only root may (the verifier's ``/tests``, where the gold facts of the
sealed checks lie) nor the grading process's memory, which runs as root. Unlike ``LocalSandbox(isolation=
"none")``, which makes a workspace of its own in a temp directory, the workspace is ``workdir`` as given:
a repository whose environment was installed at ``/testbed`` (an editable install) must be graded there.

Closing kills every process of ``user`` (a child that takes that uid sends SIGKILL to all it may signal),
so nothing a test left running outlives the grade. The uid must therefore be one nothing else uses.
"""

from __future__ import annotations

import json
import os
import pwd
import signal
import subprocess
import sys
from collections.abc import Mapping

from gym_swe.errors import ConfigError
from gym_swe.sandbox.base import Limits
from gym_swe.sandbox.executor_client import EXECUTOR_PATH, ExecutorSandbox, Transport
from gym_swe.sandbox.local import DEFAULT_PATH, PipeTransport


class InPlaceSandbox(ExecutorSandbox):
    """Commands run on this machine, in ``workdir`` as it is, as ``user`` (a name or uid in /etc/passwd).

    Only for a process that is root inside a container made for one grade: it must be able to take the
    user's uid, and it kills all of that uid's processes when it closes.
    """

    backend = "in-place"

    def __init__(
        self, workdir: str, user: str, limits: Limits | None = None, env: Mapping[str, str] | None = None
    ) -> None:
        if not workdir.startswith("/"):
            raise ConfigError(f"workdir must be an absolute path, got {workdir!r}")
        try:
            entry = pwd.getpwuid(int(user)) if user.isdigit() else pwd.getpwnam(user)
        except KeyError:
            raise ConfigError(f"in-place sandbox: no user {user!r} in /etc/passwd") from None
        if entry.pw_uid == 0:
            raise ConfigError("in-place sandbox: user must not be root (the grader's secrets are root's)")
        if os.geteuid() != 0:
            raise ConfigError("in-place sandbox: the grading process must be root to run commands as a user")
        super().__init__(workdir, limits)
        self.uid, self.gid, self.home = entry.pw_uid, entry.pw_gid, entry.pw_dir
        self.extra_env = dict(env or {})
        self._process: subprocess.Popen[bytes] | None = None
        self._boot()

    def _demote(self) -> None:
        os.setgroups([])
        os.setgid(self.gid)
        os.setuid(self.uid)

    def _start_executor(self) -> Transport:
        config = {"workdir": self.workdir, "limits": self.limits.for_executor(), "private_pids": False}
        env = {
            "PATH": DEFAULT_PATH,
            "HOME": self.home,
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TERM": "dumb",
            "TMPDIR": "/tmp",
            "PYTHONDONTWRITEBYTECODE": "1",
            **self.extra_env,
        }
        # sys.executable: gym_swe's own interpreter (its venv's), which the user may run and not write.
        self._process = subprocess.Popen(
            [sys.executable, "-S", "-u", str(EXECUTOR_PATH), json.dumps(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd="/",
            env=env,
            preexec_fn=self._demote,
            start_new_session=True,
        )
        return PipeTransport(self._process)

    def _signal_executor(self, signum: int) -> None:
        if self._process is not None:
            os.kill(self._process.pid, signum)

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    pipe.close()
        kill_user_processes(self.uid, self.gid)
        if process is not None:
            process.wait()


def kill_user_processes(uid: int, gid: int) -> None:
    """SIGKILL every process of ``uid``: from a child that takes the uid, ``kill(-1)`` reaches exactly those
    (a process may signal only its own uid's when it is not root), the child itself excepted."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
