"""The local backend's own promises, against a real bubblewrap jail."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from gym_swe.errors import ConfigError, SandboxCrashedError, SandboxUnavailableError
from gym_swe.sandbox import Limits
from gym_swe.sandbox.local import WORKSPACE_PREFIX, LocalSandbox, prune_workspaces
from tests.conftest import REPO_ROOT, kill_jail, require_bwrap

pytestmark = pytest.mark.bwrap


@pytest.fixture(autouse=True)
def _bwrap() -> None:
    require_bwrap()


@pytest.fixture
def jail():
    with LocalSandbox(limits=Limits(memory_mb=512, file_size_mb=8, tmp_mb=16)) as box:
        yield box


def test_system_is_read_only_and_workspace_writable(jail: LocalSandbox) -> None:
    for path in ("/usr/evil", "/etc/evil", "/bin/evil"):
        result = jail.exec(f"touch {path}")
        assert result.exit_code != 0 and "Read-only file system" in result.stderr, path
    assert jail.exec("touch /workspace/fine && ls").stdout == "fine\n"


def test_runs_unprivileged_in_its_own_namespaces(jail: LocalSandbox) -> None:
    assert jail.exec("id -u").stdout == "1000\n"
    assert jail.exec("grep CapEff /proc/self/status").stdout.split() == ["CapEff:", "0000000000000000"]
    assert jail.exec("hostname").stdout == "sandbox\n"
    # Its own pid namespace: the host's processes are invisible.
    assert str(os.getpid()) not in jail.exec("ls /proc").stdout.split()
    # No nested user namespaces (a common step of sandbox escapes).
    assert jail.exec("unshare -U true").exit_code != 0


def test_host_files_outside_the_workspace_are_not_there(jail: LocalSandbox, tmp_path: Path) -> None:
    secret = tmp_path / f"secret-{uuid.uuid4().hex}"
    secret.write_text("host secret")
    for path in (str(secret), str(REPO_ROOT), "/root", str(Path.home()), "/work"):
        result = jail.exec(f"ls {path}")
        assert result.exit_code != 0, path
    assert "host secret" not in jail.exec(f"cat {secret} 2>&1").stdout


def test_other_sandboxes_workspaces_are_invisible(jail: LocalSandbox) -> None:
    with LocalSandbox() as other:
        name = f"other-{uuid.uuid4().hex}"
        other.exec(f"echo private > {name}")
        assert jail.exec(f"ls {other.host_dir}").exit_code != 0
        assert jail.exec(f"find / -name {name} 2>/dev/null").stdout == ""
        assert jail.exec(f"ls /workspace/{name}").exit_code != 0


def test_workspace_is_size_limited(tmp_path: Path) -> None:
    source = tmp_path / "repo"
    source.mkdir()
    (source / "keep.txt").write_text("pristine\n")
    fill = "for i in $(seq 1 20); do head -c 3000000 /dev/zero > f$i || exit 1; done"
    limits = Limits(disk_mb=16, file_size_mb=8)
    with (
        LocalSandbox(limits=limits) as fresh,
        LocalSandbox(workdir="/testbed", source=source, limits=limits) as repo,
    ):
        for box in (fresh, repo):
            result = box.exec(fill, timeout=60)
            assert result.exit_code != 0 and "No space left" in result.stderr, box.layout
            assert box.exec("rm -f f* && echo ok").stdout == "ok\n"
        assert repo.exec("cat keep.txt").stdout == "pristine\n"
    assert sorted(p.name for p in source.iterdir()) == ["keep.txt"]


def test_private_tmp_is_size_limited(jail: LocalSandbox) -> None:
    result = jail.exec("for i in 1 2 3 4 5; do head -c 5000000 /dev/zero > /tmp/fill$i || exit 1; done")
    assert result.exit_code != 0 and "No space left" in result.stderr
    assert jail.exec("echo ok").stdout == "ok\n"


def test_file_size_limit(jail: LocalSandbox) -> None:
    result = jail.exec("head -c 20000000 /dev/zero > big")
    assert result.exit_code != 0 and "File size limit exceeded" in result.stderr
    assert int(jail.exec("stat -c %s big").stdout) <= 8 * 1024 * 1024


def test_repository_workdir_seeded_from_a_source_that_stays_untouched(tmp_path: Path) -> None:
    source = tmp_path / "repo"
    source.mkdir()
    (source / "setup.py").write_text("print('hi')\n")
    with LocalSandbox(workdir="/testbed", source=source) as box:
        assert box.exec("pwd && cat setup.py").stdout == "/testbed\nprint('hi')\n"
        box.exec("echo changed > setup.py && touch new")
        assert box.exec("cat setup.py").stdout == "changed\n"
    assert (source / "setup.py").read_text() == "print('hi')\n"
    assert sorted(p.name for p in source.iterdir()) == ["setup.py"]


def test_read_only_binds(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "hello.sh").write_text("echo hello from a bound dir\n")
    with LocalSandbox(ro_binds={str(tools): "/opt/tools"}) as box:
        assert box.exec("sh /opt/tools/hello.sh").stdout == "hello from a bound dir\n"
        assert "Read-only" in box.exec("touch /opt/tools/x").stderr


def test_jail_killed_from_outside_gives_a_crash_with_the_reason(jail: LocalSandbox) -> None:
    assert jail.exec("echo up").ok
    kill_jail(jail)
    with pytest.raises(SandboxCrashedError) as raised:
        jail.exec("echo down")
    assert "jail exited with signal 9" in str(raised.value)
    jail.close()
    assert not jail.host_dir.exists()


def test_missing_bubblewrap_fails_with_the_install_hint(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a real PATH on which there is no bwrap
    with pytest.raises(SandboxUnavailableError, match="apt-get install bubblewrap"):
        LocalSandbox()


def test_isolation_none_is_only_by_name_and_warns() -> None:
    with pytest.raises(ConfigError, match="Known: 'bwrap', 'none'"):
        LocalSandbox(isolation="off")
    with pytest.warns(UserWarning, match="unconfined"), LocalSandbox(isolation="none") as box:
        result = box.exec("pwd && echo hi > f && cat f")
        assert result.stdout == f"{box.host_workspace}\nhi\n"


def test_network_can_be_granted_explicitly() -> None:
    code = "import socket; socket.create_connection(('deb.debian.org', 80), timeout=5); print('up')"
    probe = f'python3 -c "{code}"'
    if subprocess.run(["python3", "-c", code], capture_output=True).returncode != 0:
        pytest.skip("this host has no route to deb.debian.org")
    with LocalSandbox(network=True) as box:
        assert box.exec(probe, timeout=30).stdout == "up\n"
    with LocalSandbox() as box:
        assert box.exec(probe, timeout=30).exit_code != 0


def test_prune_removes_workspaces_of_dead_owners(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GYM_SWE_WORKSPACES", str(tmp_path))
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f"{WORKSPACE_PREFIX}{dead.pid}-abc"
    (stale / "workspace").mkdir(parents=True)
    with LocalSandbox() as live:
        assert live.host_dir.parent == tmp_path
        removed = prune_workspaces()
        assert removed == [stale]
        assert not stale.exists() and live.host_dir.exists()


def test_gym_swe_itself_is_hidden_where_the_jail_would_show_it() -> None:
    """A system-wide install puts gym_swe (and its task data: hidden tests, gold patches) under /usr; a bound
    directory may hold it too. The jail covers it."""
    package = Path(__file__).resolve().parents[2] / "gym_swe"
    checkout = package.parent
    with LocalSandbox(ro_binds=[str(checkout)]) as box:
        assert box.exec(f"ls {checkout}/README.md").ok  # the bound directory is there...
        assert box.exec(f"ls -A {package}").stdout == ""  # ...but not gym_swe in it
        assert box.exec(f"cat {package}/tasks/data/codedebug_bundled.jsonl").exit_code != 0


def test_cpu_quota_of_limits_cpus(tmp_path: Path) -> None:
    """Where gym_swe makes cgroups (as root), a jail may use ``Limits.cpus`` cores' worth of time at once:
    its processes sit in a cgroup whose CPU quota says so."""
    if os.geteuid() != 0:
        pytest.skip("jail cgroups need root")
    with LocalSandbox(limits=Limits(cpus=0.5)) as box:
        group = box._cgroup
        assert group is not None
        cpu = [d for d in group.directories if (d / "cpu.cfs_quota_us").exists() or (d / "cpu.max").exists()]
        assert cpu, "no cpu controller in the jail's cgroups"
        quota = (
            (cpu[0] / "cpu.cfs_quota_us") if (cpu[0] / "cpu.cfs_quota_us").exists() else cpu[0] / "cpu.max"
        )
        assert quota.read_text().split()[0] == "50000"
        box.exec("sleep 30 > /dev/null 2>&1 &")
        assert len((cpu[0] / "cgroup.procs").read_text().split()) >= 2  # the executor and the sleep


def test_the_jail_stderr_is_not_a_file_on_the_host(jail: LocalSandbox) -> None:
    assert not list(jail.host_dir.glob("*stderr*"))
    assert jail.exec("echo fine").stdout == "fine\n"
