"""The docker backend's own promises, against a real Docker daemon."""

from __future__ import annotations

import os
import subprocess

import pytest

from gym_swe.errors import SandboxCrashedError, SandboxUnavailableError
from gym_swe.sandbox import Limits
from gym_swe.sandbox.docker import BASE_IMAGE, LABEL, DockerSandbox, docker_client, prune
from tests.conftest import require_docker

pytestmark = pytest.mark.docker


@pytest.fixture(autouse=True)
def _docker() -> None:
    require_docker()


def test_container_has_limits_labels_and_no_network() -> None:
    limits = Limits(memory_mb=300, processes=64, cpus=0.5, tmp_mb=64)
    with DockerSandbox(limits=limits, labels={"task": "t1"}) as box:
        box.container.reload()
        host_config = box.container.attrs["HostConfig"]
        assert host_config["NetworkMode"] == "none"
        assert host_config["Memory"] == 300 * 1024 * 1024
        assert host_config["MemorySwap"] == 300 * 1024 * 1024
        assert host_config["ShmSize"] == 64 * 1024 * 1024
        assert host_config["Tmpfs"] == {"/tmp": "rw,exec,nosuid,size=64m"}
        assert host_config["PidsLimit"] == 64
        assert host_config["NanoCpus"] == 500_000_000
        labels = box.container.labels
        assert labels[LABEL] == "1" and labels["task"] == "t1"
        assert labels["gym_swe.owner_pid"] == str(os.getpid())
        assert box.exec("cat /sys/class/net/*/operstate 2>/dev/null; ls /sys/class/net").stdout.split() == [
            "unknown",
            "lo",
        ]


def test_repository_workdir_and_source_upload(tmp_path) -> None:
    (tmp_path / "mod.py").write_text("VALUE = 42\n")
    with DockerSandbox(workdir="/testbed", source=tmp_path) as box:
        assert box.exec("pwd && python3 -c 'import mod; print(mod.VALUE)'").stdout == "/testbed\n42\n"


def test_container_killed_from_outside_gives_a_crash_with_the_reason() -> None:
    box = DockerSandbox()
    container_id = box.container.id
    docker_client().containers.get(container_id).kill()
    with pytest.raises(SandboxCrashedError) as raised:
        box.exec("echo hi")
    assert "sandbox died" in str(raised.value)
    box.close()
    assert docker_client().containers.list(all=True, filters={"id": container_id}) == []


def test_unreachable_daemon_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    docker_client.cache_clear()
    try:
        with pytest.raises(SandboxUnavailableError, match=r"Docker daemon is unreachable.*DOCKER_HOST"):
            DockerSandbox()
    finally:
        monkeypatch.undo()
        docker_client.cache_clear()


def test_missing_image_is_a_clear_error() -> None:
    with pytest.raises(SandboxUnavailableError, match="not available"):
        DockerSandbox(image="gym-swe-no-such-image:0", pull=False)


def test_prune_removes_containers_of_dead_owners_only() -> None:
    client = docker_client()
    dead = subprocess.Popen(["true"])
    dead.wait()
    orphan = client.containers.run(
        BASE_IMAGE,
        ["sleep", "infinity"],
        detach=True,
        network_mode="none",
        labels={
            LABEL: "1",
            "gym_swe.owner_pid": str(dead.pid),
            "gym_swe.owner_host": __import__("socket").gethostname(),
        },
    )
    with DockerSandbox() as live:
        removed = prune()
        assert orphan.short_id in removed
        assert live.container.short_id not in removed
        assert live.exec("echo alive").stdout == "alive\n"
    assert client.containers.list(all=True, filters={"id": orphan.id}) == []


def test_proxy_socket_dir_is_bound_read_only_and_its_socket_answers(tmp_path) -> None:
    """The one way out of a container with no network: a unix socket in a directory bound read-only (a
    socket on a read-only mount still accepts connections)."""
    import socket
    import threading

    from gym_swe.sandbox.docker import PROXY_SOCKET_DIR

    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "proxy.sock"))
    server.listen(1)
    heard: list[bytes] = []

    def answer() -> None:
        connection, _ = server.accept()
        with connection:
            heard.append(connection.recv(100))
            connection.sendall(b"pong")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        with DockerSandbox(proxy_socket_dir=tmp_path) as box:
            mounts = box.container.attrs["Mounts"]
            assert [(m["Source"], m["Destination"], m["RW"]) for m in mounts] == [
                (str(tmp_path), PROXY_SOCKET_DIR, False)
            ]
            assert box.container.attrs["HostConfig"]["NetworkMode"] == "none"
            client = (
                "import socket; s = socket.socket(socket.AF_UNIX); "
                f"s.connect('{PROXY_SOCKET_DIR}/proxy.sock'); s.sendall(b'ping'); print(s.recv(100).decode())"
            )
            assert box.exec(f'python3 -c "{client}"').stdout == "pong\n"
            written = box.exec(f"touch {PROXY_SOCKET_DIR}/planted")
            assert written.exit_code != 0 and "Read-only file system" in written.output
            assert box.exec("ls /sys/class/net").stdout.split() == ["lo"]
    finally:
        thread.join(timeout=10)
        server.close()
    assert heard == [b"ping"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["proxy.sock"]


def test_a_sandbox_without_proxy_socket_dir_binds_nothing() -> None:
    with DockerSandbox() as box:
        assert box.container.attrs["Mounts"] == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("relative/dir", "must be an absolute path"),
        (42, "must be an absolute path"),
        ("/no/such/gym-swe-dir", "is missing"),
        ("/etc/hostname", "is not a directory"),
        ("/", "not the root"),
    ],
)
def test_a_bad_proxy_socket_dir_is_a_clear_error_before_any_container(value, expected) -> None:  # type: ignore[no-untyped-def]
    from gym_swe.errors import ConfigError

    # Checked first: an image that does not exist would be the error if a container were tried.
    with pytest.raises(ConfigError, match=expected) as raised:
        DockerSandbox(image="gym-swe-no-such-image:never", pull=False, proxy_socket_dir=value)
    assert "proxy_socket_dir" in str(raised.value)


def test_ro_binds_are_bound_read_only_beside_the_socket_dir(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """An agent harness's installed files, bound read-only (the daemon runs on this host)."""
    tools, sockets = tmp_path / "tools", tmp_path / "sockets"
    tools.mkdir()
    sockets.mkdir()
    (tools / "hello.sh").write_text("echo hello from the host\n")
    with DockerSandbox(ro_binds={str(tools): "/opt/tools"}, proxy_socket_dir=sockets) as box:
        mounts = sorted((m["Source"], m["Destination"], m["RW"]) for m in box.container.attrs["Mounts"])
        from gym_swe.sandbox.docker import PROXY_SOCKET_DIR

        assert mounts == sorted([(str(tools), "/opt/tools", False), (str(sockets), PROXY_SOCKET_DIR, False)])
        assert box.exec("sh /opt/tools/hello.sh").stdout == "hello from the host\n"
        written = box.exec("touch /opt/tools/planted")
        assert written.exit_code != 0 and "Read-only file system" in written.output
    assert sorted(p.name for p in tools.iterdir()) == ["hello.sh"]


@pytest.mark.parametrize(
    ("binds", "expected"),
    [
        ({"relative": "/opt/x"}, "must be an absolute path to an existing host path"),
        ({"/no/such/gym-swe-dir": "/opt/x"}, "must be an absolute path to an existing host path"),
        ({"/etc": "opt/x"}, "must be absolute, not '/'"),
        ({"/etc": "/"}, "must be absolute, not '/'"),
    ],
)
def test_a_bad_ro_bind_is_a_clear_error_before_any_container(binds, expected) -> None:  # type: ignore[no-untyped-def]
    from gym_swe.errors import ConfigError

    with pytest.raises(ConfigError, match=expected) as raised:
        DockerSandbox(image="gym-swe-no-such-image:never", pull=False, ro_binds=binds)
    assert "ro_binds" in str(raised.value)
