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
