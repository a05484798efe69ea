"""`gym-swe images build`."""

from __future__ import annotations

import pytest

from tests.cli.shell import gym_swe
from tests.conftest import require_docker


@pytest.mark.docker
def test_images_build_skips_an_up_to_date_image() -> None:
    require_docker()
    result = gym_swe("images", "build", "--method", "debootstrap")
    assert result.returncode == 0, result.stderr
    assert "up to date" in result.stdout


def test_images_build_takes_task_ids_as_prepare_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--task-id`` builds only those tasks' images (a file of SWE-bench's records holds hundreds); an id the
    source does not hold fails before any image is built; without ``--tasks`` it is refused."""
    import gym_swe.sandbox.images
    import gym_swe.tasks.images
    from gym_swe.cli import main

    built: list[str] = []
    monkeypatch.setattr(gym_swe.sandbox.images, "build_base_image", lambda **_: None)
    monkeypatch.setattr(
        gym_swe.tasks.images, "build_task_image", lambda task, *_, **__: built.append(task.task_id)
    )
    ids = ["gymswe__semverkit-3", "gymswe__inikit-3"]
    assert main(["images", "build", "--tasks", "bundled", *(f"--task-id={task_id}" for task_id in ids)]) == 0
    assert built == ids
    built.clear()
    assert main(["images", "build", "--tasks", "bundled"]) == 0
    assert len(built) > len(ids)
    built.clear()
    assert main(["images", "build", "--tasks", "bundled", "--task-id", "gymswe__nothing-1"]) == 2
    assert main(["images", "build", "--task-id", "gymswe__semverkit-3"]) == 2
    assert built == []
