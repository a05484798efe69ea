"""The sandbox and toolbox the tool tests share: one bubblewrap jail per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gym_swe.sandbox import make_sandbox
from gym_swe.sandbox.base import Sandbox
from gym_swe.tools import ToolBox, make_toolbox
from tests.conftest import require_bwrap


@pytest.fixture(scope="module")
def box() -> Iterator[Sandbox]:
    require_bwrap()
    with make_sandbox("local") as sandbox:
        yield sandbox


@pytest.fixture
def tools() -> ToolBox:
    return make_toolbox()
