"""The Sandbox contract, run against every backend (a real bubblewrap jail and a real Docker container)."""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

import pytest

from gym_swe.sandbox import Limits, Sandbox, make_sandbox


def test_is_a_sandbox(sandbox) -> None:
    assert isinstance(sandbox, Sandbox)
    assert sandbox.workdir == "/workspace"


def test_exec_reports_streams_exit_code_and_duration(sandbox) -> None:
    result = sandbox.exec("echo out; echo err >&2; exit 3")
    assert result.stdout == "out\n"
    assert result.stderr == "err\n"
    assert result.exit_code == 3
    assert not result.ok and not result.timed_out
    assert result.duration > 0


def test_exec_runs_in_workdir_or_cwd_with_env(sandbox) -> None:
    assert sandbox.exec("pwd").stdout == "/workspace\n"
    sandbox.exec("mkdir -p sub")
    assert sandbox.exec("pwd", cwd="sub").stdout == "/workspace/sub\n"
    assert sandbox.exec("echo $GREETING", env={"GREETING": "hello there"}).stdout == "hello there\n"
    assert "No such file" in sandbox.exec("true", cwd="/does/not/exist").stderr


def test_files_round_trip_text_bytes_and_unicode(sandbox) -> None:
    sandbox.write_file("deep/nested/a.txt", "héllo ✓\nline two\n")
    assert sandbox.read_file("/workspace/deep/nested/a.txt") == "héllo ✓\nline two\n".encode()
    blob = bytes(range(256)) * 1000
    sandbox.write_file("/workspace/blob.bin", blob)
    assert sandbox.read_file("blob.bin") == blob
    sandbox.write_file("run.sh", "#!/bin/sh\necho ran\n", mode=0o755)
    assert sandbox.exec("./run.sh").stdout == "ran\n"
    with pytest.raises(FileNotFoundError):
        sandbox.read_file("missing.txt")
    with pytest.raises(IsADirectoryError):
        sandbox.read_file("deep")


def test_upload_and_download_directories(sandbox, tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "mod.py").write_text("X = 1\n")
    (source / "README").write_text("readme\n")
    sandbox.upload(source)
    assert sandbox.exec("cat pkg/mod.py README").stdout == "X = 1\nreadme\n"
    sandbox.exec("echo new > pkg/new.txt && ln -s /etc/passwd pkg/link && ln -s ../../.. pkg/up")
    out = sandbox.download("/workspace/pkg", tmp_path / "out")
    assert out == tmp_path / "out" / "pkg"
    assert (out / "new.txt").read_text() == "new\n"
    assert (out / "mod.py").read_text() == "X = 1\n"
    # Links the agent made are not carried to the host, where they would point at host files.
    assert not (out / "link").exists() and not (out / "link").is_symlink()
    assert not (out / "up").is_symlink()


def test_timeout_kills_the_whole_process_group_and_sandbox_stays_usable(sandbox) -> None:
    marker = f"{uuid.uuid4().int % 10**6}.25"
    result = sandbox.exec(f"sleep {marker} & sleep {marker}; echo never", timeout=1)
    assert result.timed_out and result.exit_code == -9
    assert "never" not in result.stdout
    left = sandbox.exec(f"ps -eo args | grep -c '^sleep {marker}' || true").stdout.strip()
    assert left == "0"
    assert sandbox.exec("echo still here").stdout == "still here\n"


def test_sleep_1000_is_contained(sandbox) -> None:
    result = sandbox.exec("sleep 1000", timeout=2)
    assert result.timed_out
    assert sandbox.exec("echo ok").ok


def test_endless_output_is_bounded_head_and_tail(sandbox) -> None:
    result = sandbox.exec("echo FIRST; yes filler | head -c 5000000; echo; echo LAST", max_output=10_000)
    assert result.stdout.startswith("FIRST\n")
    assert result.stdout.endswith("LAST\n")
    assert result.stdout_cut > 4_900_000
    assert "bytes of output cut here" in result.stdout
    assert len(result.stdout) < 12_000


def test_endless_output_forever_times_out_with_bounded_memory(sandbox) -> None:
    result = sandbox.exec("yes", timeout=2, max_output=4096)
    assert result.timed_out
    assert result.stdout_cut > 0 and len(result.stdout) < 5000
    assert sandbox.exec("echo alive").stdout == "alive\n"


def test_fork_bomb_is_contained(sandbox) -> None:
    sandbox.exec(":(){ :|:& };:", timeout=5)  # returns at once; the bomb goes on in the background
    time.sleep(1)
    # The bomb stays under the process limit, and the sandbox recovers: a command that finds the limit
    # used up clears the leftovers and runs.
    assert sandbox.exec("echo survived", timeout=30).stdout == "survived\n"
    sandbox.kill_processes()
    assert int(sandbox.exec("ps -e --no-headers | wc -l").stdout) < 10
    # And the host can still start processes.
    assert subprocess.run(["true"]).returncode == 0


def test_kill_processes_ends_background_daemons(sandbox) -> None:
    sandbox.exec("(setsid nohup sleep 777 >/dev/null 2>&1 &); nohup sleep 778 >/dev/null 2>&1 &")
    assert sandbox.kill_processes() >= 2
    assert "sleep 77" not in sandbox.exec("ps -eo args").stdout
    assert sandbox.exec("echo ok").stdout == "ok\n"


def test_memory_hog_is_contained(sandbox) -> None:
    result = sandbox.exec("python3 -c 'x = bytearray(8 * 1024**3); print(len(x))'", timeout=60)
    assert result.exit_code != 0
    assert "8589934592" not in result.stdout
    assert sandbox.exec("echo fine").stdout == "fine\n"


def test_no_network(sandbox) -> None:
    probe = (
        'python3 -c "import socket; s = socket.socket(); s.settimeout(3); '
        "s.connect(('151.101.0.223', 80)); print('CONNECTED')\""
    )
    result = sandbox.exec(probe, timeout=20)
    assert "CONNECTED" not in result.stdout
    assert result.exit_code != 0
    assert (
        sandbox.exec("python3 -c \"import socket; socket.getaddrinfo('deb.debian.org', 80)\"").exit_code != 0
    )


def test_writes_do_not_reach_the_host(sandbox) -> None:
    name = f"gym_swe_escape_{uuid.uuid4().hex}"
    sandbox.exec(f"echo x > /tmp/{name}; echo x > /var/tmp/{name}; echo x > /{name}")
    for host_path in (Path("/tmp") / name, Path("/var/tmp") / name, Path("/") / name):
        assert not host_path.exists()


def test_close_leaves_nothing_running(sandbox_backend: str) -> None:
    marker = f"{uuid.uuid4().int % 10**6}.75"
    box = make_sandbox(sandbox_backend, limits=Limits(memory_mb=512, tmp_mb=128))
    box.exec(f"(setsid nohup sleep {marker} >/dev/null 2>&1 &); sleep {marker} >/dev/null 2>&1 &")
    assert f"sleep {marker}" in box.exec("ps -eo args").stdout
    container_id = box.container.id if sandbox_backend == "docker" else None
    box.close()
    box.close()  # twice is fine
    host_procs = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert f"sleep {marker}" not in host_procs
    if sandbox_backend == "local":
        assert not box.host_dir.exists()
    else:
        from gym_swe.sandbox.docker import docker_client

        assert docker_client().containers.list(all=True, filters={"id": container_id}) == []


def test_commands_cannot_kill_stop_or_interrupt_the_executor(sandbox) -> None:
    """The executor is the sandbox's pid 1: the kernel drops the signals its commands send it."""
    result = sandbox.exec(
        "for s in KILL STOP INT TERM HUP QUIT USR2; do kill -s $s 1; done; kill -9 $PPID; echo sent",
        timeout=30,
    )
    assert result.stdout.strip() == "sent"
    assert sandbox.exec("echo still-here").stdout == "still-here\n"
    # SIGUSR1 is the host's interrupt: sent from inside, it interrupts the command that sent it, no more
    assert sandbox.exec("kill -s USR1 1; sleep 5; echo after", timeout=30).interrupted
    assert sandbox.exec("echo still-here").stdout == "still-here\n"
    assert sandbox.alive


def test_the_executor_shuts_commands_out_of_its_memory_and_pipes(sandbox) -> None:
    """Non-dumpable: its /proc entries (memory, fds, environment) and ptrace are closed to commands."""
    probe = (
        "for p in mem environ maps fd/0 fd/1; do "
        '(head -c 1 /proc/1/$p | grep -q . && echo "open $p") 2>/dev/null || echo "closed $p"; done; '
        "(echo x > /proc/1/fd/1) 2>/dev/null && echo 'open write' || echo 'closed write'; "
        "readlink /proc/1/fd/1 > /dev/null 2>&1 && echo 'open link' || echo 'closed link'"
    )
    lines = sandbox.exec(probe, timeout=30).stdout.split()
    assert "open" not in lines, lines
    assert lines.count("closed") == 7
    assert sandbox.executor_info["protected"] is True
    assert sandbox.exec("echo fine").stdout == "fine\n"


def test_interrupt_stops_the_running_command_and_the_sandbox_goes_on(sandbox) -> None:
    import threading
    import time

    assert sandbox.interrupt() is False  # nothing running
    result: dict = {}
    worker = threading.Thread(
        target=lambda: result.update(r=sandbox.exec("echo start; sleep 60; echo never", timeout=120))
    )
    started = time.monotonic()
    worker.start()
    while not sandbox._running_command and time.monotonic() - started < 30:
        time.sleep(0.01)
    time.sleep(0.3)
    assert sandbox.interrupt() is True
    worker.join(timeout=60)
    assert not worker.is_alive()
    assert result["r"].interrupted and not result["r"].timed_out and not result["r"].ok
    assert result["r"].stdout == "start\n"
    again = sandbox.exec("echo next")
    assert again.stdout == "next\n" and not again.interrupted
