"""Picking a backend by name, and Limits validation."""

from __future__ import annotations

import pytest

from gym_swe.errors import ConfigError
from gym_swe.sandbox import BACKENDS, Limits, backend_class, make_sandbox


def test_backends_are_named_in_one_map() -> None:
    assert set(BACKENDS) == {"local", "docker"}
    assert backend_class("local").__name__ == "LocalSandbox"
    assert backend_class("docker").__name__ == "DockerSandbox"


def test_unknown_backend_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as raised:
        make_sandbox("dokcer")
    message = str(raised.value)
    assert "Unknown sandbox backend 'dokcer'" in message
    assert "Did you mean 'docker'?" in message
    assert "'local'" in message


@pytest.mark.parametrize("field", ["memory_mb", "processes", "file_size_mb", "cpu_seconds", "tmp_mb"])
def test_limits_must_be_positive_ints(field: str) -> None:
    with pytest.raises(ConfigError, match=f"Limits.{field} must be a positive int, got -1"):
        Limits(**{field: -1})
    with pytest.raises(ConfigError):
        Limits(**{field: "10"})


def test_limits_for_executor_in_bytes() -> None:
    assert Limits(memory_mb=256, tmp_mb=8, file_size_mb=3).for_executor()["memory_bytes"] == 256 * 1024 * 1024


def test_limits_whose_tmpfs_mounts_memory_cannot_hold_fail_naming_the_fields() -> None:
    """/tmp and /dev/shm are memory: were they larger than memory_mb, filling them would end in the OOM
    killer taking the executor (a dead sandbox, not graded) instead of a full disk for the command."""
    with pytest.raises(ConfigError) as raised:
        Limits(memory_mb=512)  # tmp_mb keeps its default, 1024
    message = str(raised.value)
    assert (
        "Limits.memory_mb=512" in message and "Limits.tmp_mb=1024" in message and "at least 1216" in message
    )
    Limits(memory_mb=512, tmp_mb=320)  # 320 + 128 (/dev/shm, docker's /dev) + 64 for the commands: fits
    with pytest.raises(ConfigError, match="at least 513"):
        Limits(memory_mb=512, tmp_mb=321)


def test_a_local_jail_must_also_hold_its_workspace_tmpfs_in_memory() -> None:
    from gym_swe.sandbox import check_limits

    fits_docker = Limits(memory_mb=1024, tmp_mb=256)  # disk_mb keeps its default, 2048
    check_limits("docker", fits_docker)
    with pytest.raises(ConfigError) as raised:
        check_limits("local", fits_docker)
    message = str(raised.value)
    assert (
        "Limits.tmp_mb=256" in message
        and "Limits.disk_mb=2048" in message
        and "Limits.memory_mb=1024" in message
    )
    check_limits("local", Limits(memory_mb=1024, tmp_mb=256, disk_mb=640))  # 256 + 64 + 640 + 64 = 1024
