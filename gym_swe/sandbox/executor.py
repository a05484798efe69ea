"""The executor: a small process kept running inside every sandbox (a bubblewrap jail or a container).

The host starts it once per sandbox and then sends it requests, so a command costs one process start inside
the sandbox instead of a new jail or a ``docker exec`` (about 46 ms here). It is run as a script
(``python3 -S -c <this file's text>``), so it must stay standard-library only and work on any Python >= 3.6
that a task image may carry: no dataclasses, walrus, f-string ``=``, or imports from gym_swe.

Protocol, over the executor's stdin/stdout, one request at a time: a frame is one line of JSON (the header),
then exactly ``header["size"]`` bytes of payload (0 when absent). Requests carry ``op`` and ``id``; every
reply echoes the ``id`` and carries ``ok`` and, when ``ok`` is false, ``error`` (a message) and ``kind`` (the
exception class name). The host checks every reply against its schema (see protocol.py).

  hello (sent first, unasked)      -> {pid, python, protected}
  exec {cmd, timeout, cwd, env, max_output, records?}
                                   -> {exit_code, timed_out, interrupted, duration, stdout_size, stdout_head,
                                       stdout_cut, stderr_size, stderr_head, stderr_cut}; payload: kept
                                       stdout + stderr. SIGUSR1 to the executor interrupts the command.
                                       With ``records`` (a byte bound), the command also gets a pipe as
                                       file descriptor 3, read beside stdout and stderr: the reply adds
                                       {records_size, records_cut} and the payload ends with the first
                                       ``records`` bytes that came through it (``records_cut``: how many
                                       more came, read and dropped). What arrived is kept in the order it
                                       came, and nothing the command does later takes it back.
  read {path, max_bytes}           -> payload: the file's bytes (FileTooLargeError past max_bytes)
  write {path, mode?} + payload    -> {}
  put_tar {dest} + payload         -> {} (a tar archive extracted under dest)
  get_tar {path, max_bytes}        -> payload: a tar archive of path (its base name at the top)
  manifest {path, max_files, max_bytes?}
                                   -> payload: JSON [[relative path, "f", executable, size, sha256 or null]
                                       or [relative path, "l", link target], ...]; ``.git`` directories and
                                       files of other types are left out (FileTooLargeError past max_files,
                                       past max_bytes of JSON, or for a directory too deep to name)
  get_files {path, names, max_bytes}
                                   -> payload: a tar archive of the named files and links under path
  kill_all                         -> {killed, left}: every process the commands started, background ones too
  ping                             -> {}

The executor is the sandbox's trusted part, and the commands it starts run as the same user, so it makes
itself non-dumpable first thing (``protected`` in the hello): the kernel then refuses every process without
CAP_SYS_PTRACE (which no sandbox grants) access to its memory, its file descriptors (the protocol pipes) and
its environment under /proc, and refuses to ptrace it. The data that passes through it (hidden tests sent
to a grading sandbox, say) stays out of reach of the code it runs.
"""

import errno
import hashlib
import io
import json
import math
import os
import resource
import select
import signal
import stat
import subprocess
import sys
import tarfile
import time

# After an interrupt (SIGUSR1 from the host): how long the command's group has after SIGINT before SIGKILL.
INTERRUPT_GRACE = 1.0
# How long to keep reading after the command exited, for output still in the pipes. A background process
# the command started may hold the pipes open forever; its later output is not waited for.
DRAIN_SECONDS = 0.05
READ_CHUNK = 65536
PR_SET_DUMPABLE = 4
RECORDS_FD = 3
"""The descriptor a command that asked for ``records`` writes them to. The executor keeps its own descriptor
3 open (`reserve_records_fd`), so that none of the pipes it makes for a command lands there."""


class FileTooLargeError(Exception):
    """A file (or a set of files) over the size the host asked for at most."""


class BoundedCapture(object):
    """Keeps the first and the last ``limit // 2`` bytes of a stream and counts what was cut between them."""

    def __init__(self, limit):
        self.half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.size = 0

    def add(self, data):
        self.size += len(data)
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            # Trim in batches so that a flood of small writes stays linear.
            if len(self.tail) > 2 * self.half:
                del self.tail[: len(self.tail) - self.half]

    def kept(self):
        tail = bytes(self.tail[-self.half :]) if self.tail else b""
        return bytes(self.head), tail

    def cut(self):
        head, tail = self.kept()
        return self.size - len(head) - len(tail)


class HeadCapture(object):
    """Keeps the first ``limit`` bytes of a stream and counts what came after them (read, then dropped)."""

    def __init__(self, limit):
        self.limit = max(int(limit), 0)
        self.data = bytearray()
        self.size = 0

    def add(self, data):
        self.size += len(data)
        room = self.limit - len(self.data)
        if room > 0:
            self.data += data[:room]

    def cut(self):
        return self.size - len(self.data)


def reserve_records_fd():
    """Hold descriptor `RECORDS_FD` (/dev/null where nothing is there yet), not inherited by commands."""
    try:
        os.fstat(RECORDS_FD)
    except OSError:
        fd = os.open(os.devnull, os.O_RDONLY)
        if fd != RECORDS_FD:
            os.dup2(fd, RECORDS_FD, inheritable=False)
            os.close(fd)


def apply_limits(limits):
    """Set the sandbox-wide rlimits on this process; every command inherits them."""
    pairs = [
        ("memory_bytes", resource.RLIMIT_AS),
        ("processes", resource.RLIMIT_NPROC),
        ("file_size_bytes", resource.RLIMIT_FSIZE),
    ]
    for key, which in pairs:
        value = limits.get(key)
        if value:
            try:
                resource.setrlimit(which, (int(value), int(value)))
            except (ValueError, OSError):
                pass  # a limit the platform refuses must not stop the sandbox; the others still apply
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ValueError, OSError):
        pass


def make_non_dumpable():
    """Shut other processes of this uid out of this one's /proc entries and ptrace. True when it worked."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            return False
        with open("/proc/self/status") as status:
            return not any(line.split() == ["Dumpable:", "1"] for line in status)
    except Exception:
        return False


def list_pids():
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def process_state(pid):
    """(state letter, parent pid) of a process, or ("", 0) once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return "", 0


def find_shell():
    for shell in ("/bin/bash", "/usr/bin/bash", "/bin/sh"):
        if os.path.exists(shell):
            return shell
    return "sh"


class Executor(object):
    def __init__(self, stdin, stdout, workdir, limits, private_pids, protected=False):
        self.private_pids = private_pids
        self.protected = protected
        self.groups = set()
        self.stdin = stdin
        self.stdout = stdout
        self.workdir = workdir
        self.limits = limits
        self.shell = find_shell()
        # A command's exit must wake poll(): SIGCHLD writes a byte to this pipe (signal.set_wakeup_fd).
        self.wakeup_read, wakeup_write = os.pipe()
        for fd in (self.wakeup_read, wakeup_write):
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(wakeup_write)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        # As the pid namespace's init, the kernel drops every signal that commands send it (SIGKILL and
        # SIGSTOP included) unless it handles that signal; Python handles SIGINT, so that one goes back to
        # the default. Commands therefore cannot kill or stop the executor.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        self.is_init = os.getpid() == 1
        # SIGUSR1 from the host interrupts the running command (Ctrl-C in `gym-swe play`). A command sending
        # it can only interrupt itself.
        self.interrupt_requested = False
        signal.signal(signal.SIGUSR1, self.on_interrupt)
        # Processes that were there before any command (the sandbox's init, the container's main process):
        # kill_all spares them, and this executor.
        self.spared = set(list_pids()) | {os.getpid()}

    def on_interrupt(self, signum, frame):
        self.interrupt_requested = True

    # -- framing ---------------------------------------------------------------------------------------------
    def send(self, header, payload=b""):
        header = dict(header)
        header["size"] = len(payload)
        self.stdout.write(json.dumps(header).encode("utf-8") + b"\n")
        if payload:
            self.stdout.write(payload)
        self.stdout.flush()

    def receive(self):
        line = self.stdin.readline()
        if not line:
            return None, b""
        header = json.loads(line.decode("utf-8"))
        size = int(header.get("size", 0))
        chunks = []
        while size > 0:
            chunk = self.stdin.read(size)
            if not chunk:
                return None, b""
            chunks.append(chunk)
            size -= len(chunk)
        return header, b"".join(chunks)

    def serve(self):
        hello = {"ok": True, "op": "hello", "pid": os.getpid(), "python": sys.version.split()[0]}
        hello["protected"] = self.protected
        self.send(hello)
        while True:
            header, payload = self.receive()
            if header is None:
                return
            handler = getattr(self, "op_" + str(header.get("op")), None)
            if handler is None:
                error = {"ok": False, "kind": "ValueError", "error": "unknown op %r" % header.get("op")}
                self.send(dict(error, id=header.get("id")))
                continue
            try:
                reply, data = handler(header, payload)
            except Exception as error:  # any failure is reported to the host, never fatal to the executor
                kind, message = type(error).__name__, str(error)[:2000]
                self.send({"ok": False, "kind": kind, "error": message, "id": header.get("id")})
                continue
            reply["ok"] = True
            reply["id"] = header.get("id")
            self.send(reply, data)
            self.reap_orphans()

    # -- operations -----------------------------------------------------------------------------------------
    def resolve(self, path):
        return os.path.join(self.workdir, path) if not os.path.isabs(path) else path

    def op_ping(self, header, payload):
        return {}, b""

    def op_kill_all(self, header, payload):
        killed = self.kill_all()
        left = len(self.strays()) if self.private_pids else 0
        return {"killed": killed, "left": left}, b""

    def reap_orphans(self, keep=None):
        """As pid 1, wait for exited orphans (zombies that commands left), so that they free their pids.
        ``keep``: the running command, which its own Popen waits for."""
        if not self.is_init:
            return
        for pid in list_pids():
            if pid == 1 or pid == keep:
                continue
            if process_state(pid) == ("Z", 1):
                try:
                    os.waitpid(pid, os.WNOHANG)
                except OSError:
                    pass

    def strays(self):
        """Processes commands started that are still alive (zombies, already dead, do not count)."""
        return [pid for pid in list_pids() if pid not in self.spared and process_state(pid)[0] != "Z"]

    def kill_all(self):
        """SIGKILL every process a command started, setsid daemons and fork bombs included.

        Rounds repeat until none is left, because a process not yet killed may fork between two rounds.
        Without a pid namespace of its own (isolation="none") the executor would see the host's processes,
        so there it only kills the process groups of its own commands.
        """
        if not self.private_pids:
            for group in self.groups:
                try:
                    os.killpg(group, signal.SIGKILL)
                except OSError:
                    pass
            count, self.groups = len(self.groups), set()
            return count
        killed = set()
        for _ in range(100):
            self.reap_orphans()
            strays = self.strays()
            if not strays:
                break
            for pid in strays:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
                except OSError:
                    pass
            time.sleep(0.002)
        return len(killed)

    def op_read(self, header, payload):
        limit = int(header["max_bytes"])
        # Never blocking, and never a pipe: a FIFO the agent left in place of a file would hang the executor
        # (and the host with it), and /proc/self/fd/0 or 1 behind a symlink are its own protocol pipes.
        fd = os.open(self.resolve(header["path"]), os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            refuse_pipes(os.fstat(fd).st_mode, header["path"])
            data = handle.read(limit + 1)  # a bounded read: /dev/zero or a growing file stops here too
        if data is None:
            raise OSError(errno.EAGAIN, "nothing to read now from %s, a device" % header["path"])
        if len(data) > limit:
            raise FileTooLargeError("%s is larger than %d bytes" % (header["path"], limit))
        return {}, data

    def op_write(self, header, payload):
        path = self.resolve(header["path"])
        parent = os.path.dirname(path)
        if parent and not os.path.isdir(parent):
            os.makedirs(parent)
        # As for reads: a FIFO without a reader fails at once (ENXIO) instead of blocking, and only a regular
        # file is written.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK, 0o666)
        with os.fdopen(fd, "wb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, "%s is not a regular file, so it is not written" % header["path"])
            os.ftruncate(fd, 0)
            handle.write(payload)
        if header.get("mode") is not None:
            os.chmod(path, int(header["mode"]))
        return {}, b""

    def op_put_tar(self, header, payload):
        dest = self.resolve(header.get("dest") or self.workdir)
        if not os.path.isdir(dest):
            os.makedirs(dest)
        with tarfile.open(fileobj=io.BytesIO(payload), mode="r:*") as archive:
            if hasattr(tarfile, "tar_filter"):
                archive.extractall(dest, filter="tar")
            else:
                archive.extractall(dest)
        return {}, b""

    def op_get_tar(self, header, payload):
        path = self.resolve(header["path"])
        if not os.path.lexists(path):
            raise FileNotFoundError("No such file or directory: %r" % header["path"])
        buffer = BoundedBuffer(int(header["max_bytes"]), header["path"])
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            archive.add(path, arcname=os.path.basename(path.rstrip("/")) or ".")
        return {}, buffer.getvalue()

    def op_manifest(self, header, payload):
        """Every file and symbolic link under path, with a hash of each file's bytes. Only this process's
        own code runs: no git, no hooks, nothing the workspace could configure."""
        root = self.resolve(header["path"])
        limit = int(header["max_files"])
        max_bytes = int(header.get("max_bytes") or 0)  # the reply's size, as JSON: checked as it grows
        entries = []
        size = 2

        def unreadable(error):
            if getattr(error, "errno", None) in (errno.ENAMETOOLONG, errno.ELOOP):
                # Too deep to name: what is under it cannot be taken (nor carried by git): the agent's doing.
                raise FileTooLargeError("a directory under %s is nested deeper than a path can name" % root)
            raise error  # a directory the walk cannot enter must not look like an empty one

        for directory, dirs, files in os.walk(root, onerror=unreadable):
            # os.walk lists links to directories with the directories: they are entries, never walked into.
            links = [d for d in dirs if os.path.islink(os.path.join(directory, d))]
            dirs[:] = sorted(d for d in dirs if d != ".git" and d not in links)
            for name in sorted(files + links):
                path = os.path.join(directory, name)
                relative = os.path.relpath(path, root)
                entry = manifest_entry(path, relative)
                if entry is not None:
                    entries.append(entry)
                    size += len(json.dumps(entry)) + 2
                if len(entries) > limit:
                    raise FileTooLargeError("more than %d files under %s" % (limit, header["path"]))
                if max_bytes and size > max_bytes:
                    raise FileTooLargeError(
                        "the list of the files under %s comes to more than %d bytes" % (root, max_bytes)
                    )
        return {}, json.dumps(entries).encode("utf-8")

    def op_get_files(self, header, payload):
        root = self.resolve(header["path"])
        buffer = BoundedBuffer(int(header["max_bytes"]), "the files asked for")
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            for name in header["names"]:
                path = os.path.join(root, name)
                if os.path.islink(path) or os.path.isfile(path):
                    archive.add(path, arcname=name, recursive=False)
        return {}, buffer.getvalue()

    def op_exec(self, header, payload):
        timeout = header.get("timeout")
        deadline_span = float(timeout) if timeout else None
        limit = int(header.get("max_output") or 262144)
        env = dict(os.environ)
        env.update(header.get("env") or {})
        cwd = self.resolve(header.get("cwd") or self.workdir)
        out, err = BoundedCapture(limit), BoundedCapture(limit)
        records = HeadCapture(header["records"]) if header.get("records") is not None else None
        start = time.monotonic()
        process = None
        failure = None  # type: Exception | None
        self.interrupt_requested = False
        # The records pipe: its write end goes to the command as RECORDS_FD and is closed here once the
        # command started, so that the read end sees the end of the stream when the command's side closes.
        records_read, records_write = os.pipe() if records is not None else (None, None)
        try:
            try:
                process = self.spawn(header["cmd"], cwd, env, records_write)
            except (ValueError, UnicodeError) as error:  # a NUL byte or an unencodable character: bad input
                failure = error
            except OSError as error:
                failure = error
                if error.errno == errno.EAGAIN:
                    # The process limit is used up, by a fork bomb or leftover background processes:
                    # clear them.
                    killed = self.kill_all()
                    err.add(
                        ("[sandbox: process limit reached; killed %d leftover processes]\n" % killed).encode()
                    )
                    try:
                        process = self.spawn(header["cmd"], cwd, env, records_write)
                    except OSError as again:
                        failure = again
        finally:
            if records_write is not None:
                os.close(records_write)
        try:
            if process is None:
                err.add(("cannot start command: %s\n" % failure).encode("utf-8"))
                reply = self.exec_reply(127, False, time.monotonic() - start, out, err, records)
                reply[0]["interrupted"] = False
                return reply
            cpu = self.limits.get("cpu_seconds")
            if cpu:
                try:  # per command, not on the executor, whose own CPU time adds up over the episode
                    resource.prlimit(process.pid, resource.RLIMIT_CPU, (int(cpu), int(cpu)))
                except (ValueError, OSError, AttributeError):
                    pass
            extra = {records_read: records} if records is not None else {}
            stopped = self.pump(process, out, err, deadline_span and start + deadline_span, extra)
        finally:
            if records_read is not None:
                os.close(records_read)
        if stopped:
            self.kill_group(process)
        process.wait()
        interrupted = self.interrupt_requested
        timed_out = stopped and not interrupted
        reply = self.exec_reply(process.returncode, timed_out, time.monotonic() - start, out, err, records)
        reply[0]["interrupted"] = interrupted
        return reply

    def spawn(self, command, cwd, env, records_write=None):
        # With records, the pipe's write end becomes the command's RECORDS_FD. The executor's own descriptor 3
        # stays where it is: pass_fds keeps that number open in the child, where the dup2 replaced it.
        asked = records_write is not None
        pass_fds = (RECORDS_FD,) if asked else ()
        preexec = (lambda: os.dup2(records_write, RECORDS_FD)) if asked else None
        process = subprocess.Popen(
            [self.shell, "-c", command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,  # its own process group, so a timeout kills every child
            pass_fds=pass_fds,
            preexec_fn=preexec,
        )
        self.groups.add(process.pid)
        return process

    def pump(self, process, out, err, deadline, extra=None):
        """Read both pipes (and the ``extra`` ones: fd -> capture) until the command exits (plus a short
        drain), the deadline passes, or the grace of an interrupt runs out (the command got SIGINT when the
        interrupt came).

        Returns True when the command must be killed. The SIGCHLD wakeup pipe makes poll() return the moment
        the command exits, so neither a silent command nor one that leaves its pipes to a background child is
        noticed late, and nothing here sleeps or spins.
        """
        captures = {process.stdout.fileno(): out, process.stderr.fileno(): err}
        captures.update(extra or {})
        poller = select.poll()
        for fd in captures:
            poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        poller.register(self.wakeup_read, select.POLLIN)
        exited_at = None
        interrupt_deadline = None
        try:
            while True:
                now = time.monotonic()
                if exited_at is None and process.poll() is not None:
                    exited_at = now
                if self.interrupt_requested and interrupt_deadline is None and exited_at is None:
                    try:
                        os.killpg(process.pid, signal.SIGINT)  # as Ctrl-C in a terminal would
                    except OSError:
                        pass
                    interrupt_deadline = now + INTERRUPT_GRACE
                limits = [d for d in (deadline, interrupt_deadline) if d is not None]
                if exited_at is not None:
                    if not captures or now - exited_at >= DRAIN_SECONDS:
                        return False
                    wait = exited_at + DRAIN_SECONDS - now
                elif limits:
                    if now >= min(limits):
                        return True
                    wait = min(limits) - now
                else:
                    wait = None
                timeout_ms = None if wait is None else math.ceil(wait * 1000)
                for fd, _ in poller.poll(timeout_ms):
                    if fd == self.wakeup_read:
                        os.read(fd, 4096)
                        self.reap_orphans(keep=process.pid)
                        continue
                    data = os.read(fd, READ_CHUNK)
                    if data:
                        captures[fd].add(data)
                    else:
                        poller.unregister(fd)
                        del captures[fd]
        finally:
            process.stdout.close()
            process.stderr.close()

    @staticmethod
    def kill_group(process):
        """SIGKILL the command's process group until it is empty: a fork bomb forks between two kills."""
        for _ in range(200):
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except OSError:
                break  # ESRCH: nothing left in the group
            if process.poll() is not None:
                try:
                    os.killpg(process.pid, 0)
                except OSError:
                    break
            time.sleep(0.005)

    @staticmethod
    def exec_reply(code, timed_out, duration, out, err, records=None):
        out_head, out_tail = out.kept()
        err_head, err_tail = err.kept()
        reply = {
            "exit_code": code,
            "timed_out": timed_out,
            "duration": duration,
            "stdout_size": len(out_head) + len(out_tail),
            "stdout_head": len(out_head),
            "stdout_cut": out.cut(),
            "stderr_size": len(err_head) + len(err_tail),
            "stderr_head": len(err_head),
            "stderr_cut": err.cut(),
        }
        payload = out_head + out_tail + err_head + err_tail
        if records is not None:
            reply["records_size"] = len(records.data)
            reply["records_cut"] = records.cut()
            payload += bytes(records.data)
        return reply, payload


class BoundedBuffer(io.BytesIO):
    """A BytesIO that refuses to grow past ``limit`` bytes (archives of what the sandbox holds)."""

    def __init__(self, limit, what):
        io.BytesIO.__init__(self)
        self.limit = limit
        self.what = what

    def write(self, data):
        if self.tell() + len(data) > self.limit:
            raise FileTooLargeError("%s come to more than %d bytes" % (self.what, self.limit))
        return io.BytesIO.write(self, data)


def refuse_pipes(mode, path):
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        raise OSError(errno.EINVAL, "%s is a pipe or a socket, not a file" % path)


def manifest_entry(path, relative):
    """[relative, "f", executable, size, sha256] for a file, [relative, "l", target] for a symbolic link, None
    for anything else. A file this process may not read has no hash (null)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if os.path.islink(path):
        try:
            return [relative, "l", os.readlink(path)]
        except OSError:
            return None
    if not os.path.isfile(path):
        return None
    executable = bool(info.st_mode & 0o100)
    digest = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return [relative, "f", executable, info.st_size, None]
    with os.fdopen(fd, "rb") as handle:
        while True:
            chunk = handle.read(1 << 20)
            if not chunk:
                break
            digest.update(chunk)
    return [relative, "f", executable, info.st_size, digest.hexdigest()]


def main():
    protected = make_non_dumpable()  # before anything else: nothing may read this process from here on
    reserve_records_fd()
    config = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    workdir = config.get("workdir") or os.getcwd()
    limits = config.get("limits") or {}
    apply_limits(limits)
    # Commands must not inherit the executor's protocol pipes.
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    Executor(stdin, stdout, workdir, limits, bool(config.get("private_pids")), protected).serve()


if __name__ == "__main__":
    main()
