"""The host side of the executor protocol (gym_swe.sandbox.executor_client), against the real executor in a
bubblewrap jail and in a Docker container: requests and their replies, errors as the builtin exceptions, every
reply bounded, and an executor that hangs or dies turned into a crash that says why and stays.

What every sandbox promises (streams, timeouts, containment) is tested in test_contract.py, and frames that
break the protocol in test_protocol.py; here is what the client itself does."""

from __future__ import annotations

import hashlib
import io
import signal
import tarfile
import threading
from pathlib import Path

import pytest

from gym_swe.errors import FileTooLargeError, SandboxCrashedError, SandboxError, SandboxExhaustedError
from gym_swe.sandbox import Limits, executor_client, make_sandbox
from gym_swe.sandbox.base import cut_note
from gym_swe.sandbox.executor_client import extract_safely
from tests.conftest import require_bwrap


def test_the_executor_greets_the_host_protected(sandbox) -> None:
    info = sandbox.executor_info
    assert info["ok"] is True and info["op"] == "hello"
    assert info["protected"] is True  # non-dumpable: commands cannot read its memory
    assert info["pid"] == 1  # the sandbox's first process


# -- requests and replies -----------------------------------------------------------------------------------
def test_requests_from_many_threads_each_get_their_own_reply(sandbox) -> None:
    replies: dict[int, str] = {}

    def ask(number: int) -> None:
        if number % 2:
            replies[number] = sandbox.exec(f"echo {number}").stdout
        else:
            sandbox.write_file(f"{sandbox.workdir}/{number}.txt", str(number))
            replies[number] = sandbox.read_file(f"{sandbox.workdir}/{number}.txt").decode() + "\n"

    threads = [threading.Thread(target=ask, args=(number,)) for number in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert replies == {number: f"{number}\n" for number in range(12)}
    assert sandbox.alive


def test_records_come_through_descriptor_3_in_order_and_bounded(sandbox) -> None:
    result = sandbox.exec(
        "echo out; echo one >&3; echo err >&2; printf two >&3; echo ' three' >&3", records=64
    )
    assert (result.stdout, result.stderr, result.records, result.records_cut) == (
        "out\n",
        "err\n",
        b"one\ntwo three\n",
        0,
    )
    flood = sandbox.exec("head -c 300000 /dev/zero | tr '\\0' x >&3; echo done", records=1000)
    assert flood.ok and flood.stdout == "done\n"  # read past the bound (never blocked), counted, dropped
    assert (flood.records, flood.records_cut) == (b"x" * 1000, 299_000)
    empty = sandbox.exec("true", records=0)
    assert (empty.records, empty.records_cut) == (b"", 0)


def test_without_records_a_command_has_no_descriptor_3_and_none_of_the_executors(sandbox) -> None:
    result = sandbox.exec("ls /proc/self/fd; echo x >&3")
    assert result.records is None and result.exit_code != 0, result
    assert result.stdout.split() == ["0", "1", "2", "3"]  # 3: ls's own listing of /proc/self/fd


def test_what_a_command_left_running_writes_to_the_records_later_is_not_waited_for(sandbox) -> None:
    result = sandbox.exec(
        "(sleep 60; echo late >&3) & echo $! > /tmp/left; echo early >&3", records=100, timeout=120
    )
    assert result.records == b"early\n", result
    # the command returned while what it left running still holds the descriptor (not waited for)
    assert sandbox.exec('kill -0 "$(cat /tmp/left)"').ok
    sandbox.kill_processes()


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        ({"command": "echo a\x00b"}, "the command contains a NUL byte (\\x00), which no program can receive"),
        ({"command": "pwd", "cwd": "/tmp\x00"}, "cwd contains a NUL byte"),
        ({"command": "env", "env": {"X": "\ud800"}}, "environment variable 'X' contains '\\ud800', a lone surrogate"),
    ],
)  # fmt: skip
def test_a_command_that_cannot_be_started_is_a_failed_command(sandbox, arguments, reason) -> None:
    result = sandbox.exec(**arguments)
    assert result.exit_code == 127 and result.stdout == ""
    assert result.stderr.startswith("cannot start command: ") and reason in result.stderr
    assert sandbox.exec("echo still here").stdout == "still here\n"


def test_file_errors_arrive_as_the_builtin_exceptions(sandbox, tmp_path: Path) -> None:
    workdir = sandbox.workdir
    sandbox.write_file(f"{workdir}/file.txt", "x")
    with pytest.raises(FileNotFoundError, match="nope"):
        sandbox.read_file(f"{workdir}/nope")
    with pytest.raises(IsADirectoryError):
        sandbox.read_file(workdir)
    with pytest.raises(FileExistsError):
        sandbox.write_file(f"{workdir}/file.txt/inner", "x")  # a file where a directory should be
    with pytest.raises(FileNotFoundError, match="nope"):
        sandbox.download(f"{workdir}/nope", tmp_path)
    with pytest.raises(FileNotFoundError, match="no such host file"):
        sandbox.upload(tmp_path / "absent")
    # Any other failure of a request is a SandboxError naming the request; the sandbox goes on.
    with pytest.raises(SandboxError, match="write failed: ValueError: embedded null byte") as raised:
        sandbox.write_file(f"{workdir}/bad\x00name", "x")
    assert not isinstance(raised.value, SandboxCrashedError)
    assert sandbox.alive and sandbox.read_file(f"{workdir}/file.txt") == b"x"


def test_a_file_the_jail_may_not_read_is_a_permission_error() -> None:
    require_bwrap()  # the jail runs the executor unprivileged (in a container it is root, and reads anything)
    with make_sandbox("local") as box:
        box.exec("echo secret > secret && chmod 000 secret")
        with pytest.raises(PermissionError):
            box.read_file(f"{box.workdir}/secret")
        assert box.manifest(box.workdir) == [["secret", "f", False, 7, None]]  # listed, not hashed


def test_write_file_sets_the_mode(sandbox) -> None:
    sandbox.write_file(f"{sandbox.workdir}/run.sh", "echo ran\n", mode=0o755)
    sandbox.write_file(f"{sandbox.workdir}/plain.txt", "text\n")
    assert sandbox.exec("stat -c %a run.sh && ./run.sh && test ! -x plain.txt").stdout == "755\nran\n"


def test_manifest_hashes_files_and_names_links(sandbox) -> None:
    workdir = sandbox.workdir
    sandbox.write_file(f"{workdir}/a.py", b"A = 1\n")
    sandbox.write_file(f"{workdir}/pkg/run.sh", b"echo\n", mode=0o755)
    sandbox.exec("ln -s a.py link && mkdir -p .git empty && echo ref > .git/HEAD")
    assert sorted(sandbox.manifest(workdir)) == [
        ["a.py", "f", False, 6, hashlib.sha256(b"A = 1\n").hexdigest()],
        ["link", "l", "a.py"],
        ["pkg/run.sh", "f", True, 5, hashlib.sha256(b"echo\n").hexdigest()],
    ]
    with pytest.raises(FileTooLargeError, match="more than 2 files"):
        sandbox.manifest(workdir, max_files=2)
    assert sandbox.alive


def test_get_files_keeps_links_as_links_and_download_drops_them(sandbox, tmp_path: Path) -> None:
    workdir = sandbox.workdir
    sandbox.exec(
        "mkdir -p d/sub && echo kept > d/sub/file.txt && ln -s /etc/passwd d/escape && ln -s sub d/inner"
    )
    fetched = sandbox.get_files(f"{workdir}/d", ["sub/file.txt", "escape"], tmp_path / "fetched")
    assert (fetched / "sub/file.txt").read_text() == "kept\n"
    assert (fetched / "escape").is_symlink() and str((fetched / "escape").readlink()) == "/etc/passwd"
    downloaded = sandbox.download(f"{workdir}/d", tmp_path / "downloaded")
    assert downloaded == tmp_path / "downloaded" / "d"
    assert sorted(str(path.relative_to(downloaded)) for path in downloaded.rglob("*")) == [
        "sub",
        "sub/file.txt",
    ]


# -- every reply bounded ------------------------------------------------------------------------------------
def test_command_output_is_kept_head_and_tail_per_stream(sandbox) -> None:
    result = sandbox.exec(
        "printf 'HEAD'; head -c 5000 /dev/zero | tr '\\0' a; printf 'TAIL'; head -c 3000 /dev/zero | tr '\\0' e >&2",
        max_output=1000,
    )
    assert (result.stdout_cut, result.stderr_cut) == (5008 - 1000, 3000 - 1000)
    assert result.stdout.startswith("HEAD") and result.stdout.endswith("TAIL")
    assert cut_note(4008) in result.stdout
    assert result.stderr == "e" * 500 + cut_note(2000) + "e" * 500


def test_the_sandbox_limits_bound_output_by_default(sandbox_backend: str) -> None:
    with make_sandbox(sandbox_backend, limits=Limits(output_bytes=2048)) as box:
        result = box.exec("seq 1 100000")
        assert result.stdout.startswith("1\n2\n") and result.stdout.endswith("99999\n100000\n")
        assert result.stdout_cut == len("\n".join(map(str, range(1, 100001))) + "\n") - 2048


def test_file_replies_past_their_bound_are_refused_and_the_sandbox_goes_on(sandbox, tmp_path: Path) -> None:
    workdir = sandbox.workdir
    sandbox.write_file(f"{workdir}/f.txt", b"x" * 2000)
    assert len(sandbox.read_file(f"{workdir}/f.txt", max_bytes=2000)) == 2000
    with pytest.raises(FileTooLargeError, match="larger than 1999 bytes"):
        sandbox.read_file(f"{workdir}/f.txt", max_bytes=1999)
    with pytest.raises(FileTooLargeError, match="more than 1000 bytes"):
        sandbox.get_files(workdir, ["f.txt"], tmp_path / "files", max_bytes=1000)
    with pytest.raises(FileTooLargeError, match="more than 1000 bytes"):
        sandbox.download(f"{workdir}/f.txt", tmp_path / "tar", max_bytes=1000)
    assert sandbox.alive and sandbox.download(f"{workdir}/f.txt", tmp_path / "tar").stat().st_size == 2000


# -- an executor that hangs or dies -------------------------------------------------------------------------
def test_a_hung_executor_is_a_crash_that_stays(sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    """The executor enforces a command's timeout itself; the host gives up only when it does not answer
    within the timeout plus a grace (shortened here), and then the sandbox is dead for good."""
    monkeypatch.setattr(executor_client, "HUNG_GRACE_SECONDS", 1.0)
    sandbox._signal_executor(signal.SIGSTOP)  # stopped, as a wedged sandbox would be
    with pytest.raises(SandboxCrashedError) as raised:
        sandbox.exec("echo never", timeout=1)
    message = str(raised.value)
    assert message.startswith(
        f"{sandbox.backend} sandbox died: the executor did not answer within 2 s (exec)"
    )
    assert not sandbox.alive and not sandbox.interrupt()
    for request in (lambda: sandbox.exec("echo"), lambda: sandbox.read_file(f"{sandbox.workdir}/x")):
        with pytest.raises(SandboxCrashedError) as again:
            request()
        assert str(again.value) == message


def test_a_request_without_a_timeout_waits_the_request_deadline(
    sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(executor_client, "REQUEST_SECONDS", 1.0)
    sandbox._signal_executor(signal.SIGSTOP)
    with pytest.raises(SandboxCrashedError, match=r"the executor did not answer within 1 s \(read\)"):
        sandbox.read_file(f"{sandbox.workdir}/x")


def test_a_dead_executor_is_a_crash_with_the_reason(sandbox) -> None:
    sandbox._signal_executor(signal.SIGKILL)
    with pytest.raises(SandboxCrashedError) as raised:
        sandbox.exec("echo never")
    assert type(raised.value) is SandboxCrashedError  # killed from outside: not the commands' own doing
    assert not isinstance(raised.value, SandboxExhaustedError)
    assert str(raised.value).startswith(f"{sandbox.backend} sandbox died: lost the executor during 'exec': ")
    with pytest.raises(SandboxCrashedError, match="lost the executor during 'exec'"):
        sandbox.write_file(f"{sandbox.workdir}/x", "x")
    assert not sandbox.alive


def test_a_closed_sandbox_refuses_requests_without_crashing(sandbox) -> None:
    sandbox.close()
    sandbox.close()  # twice is harmless
    with pytest.raises(SandboxError, match=f"{sandbox.backend} sandbox is closed") as raised:
        sandbox.exec("echo")
    assert not isinstance(raised.value, SandboxCrashedError)
    assert not sandbox.alive


# -- archives from a sandbox --------------------------------------------------------------------------------
def _archive(tmp_path: Path) -> tarfile.TarFile:
    """A tar archive with every kind of member a sandbox could put in one to reach outside ``dest``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:

        def add(
            name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"", link: str = "", mode: int = 0o644
        ):
            member = tarfile.TarInfo(name)
            member.type, member.linkname, member.mode, member.size = kind, link, mode, len(data)
            archive.addfile(member, io.BytesIO(data) if data else None)

        add("ok/file.txt", data=b"fine\n", mode=0o4755)  # setuid dropped, x kept
        add("/abs.txt", data=b"absolute\n")
        add("../up.txt", data=b"up\n")
        add("ok/../../up2.txt", data=b"up\n")
        add("hard", tarfile.LNKTYPE, link="ok/file.txt")
        add("device", tarfile.CHRTYPE)
        add("fifo", tarfile.FIFOTYPE)
        add("escape", tarfile.SYMTYPE, link=str(tmp_path / "outside"))
        add("escape/through.txt", data=b"through a link\n")
    buffer.seek(0)
    return tarfile.open(fileobj=buffer, mode="r:")


@pytest.mark.parametrize("keep_links", [False, True])
def test_extract_safely_keeps_what_came_out_inside_dest(tmp_path: Path, keep_links: bool) -> None:
    (tmp_path / "outside").mkdir()
    dest = tmp_path / "dest"
    dest.mkdir()
    with _archive(tmp_path) as archive:
        extract_safely(archive, dest, keep_links=keep_links)
    found = sorted(str(path.relative_to(dest)) for path in dest.rglob("*"))
    # The link is made as a link or not at all; either way nothing is written through it.
    links = ["escape"] if keep_links else ["escape", "escape/through.txt"]
    assert found == [*links, "ok", "ok/file.txt"]
    assert (dest / "escape").is_symlink() is keep_links
    assert (dest / "ok/file.txt").read_bytes() == b"fine\n"
    assert (dest / "ok/file.txt").stat().st_mode & 0o7777 == 0o755
    assert list((tmp_path / "outside").iterdir()) == []  # nothing written through the link
    assert not (tmp_path / "up.txt").exists() and not (tmp_path / "up2.txt").exists()
