"""The grader's pytest driver in a real sandbox: pytest and its plugins come from the environment whatever the
workspace holds. Each case first shows the attack working on a plain ``python -m pytest`` (so the test can
fail), then that the driver is not fooled."""

from __future__ import annotations

import pytest

from gym_swe.grading.repository import DRIVER_SOURCE, GRADER_DIR, probe_environment
from gym_swe.sandbox import make_sandbox

TEST_FILE = "def test_truth():\n    assert 1 + 1 == 3\n"
FAKE_PYTEST = "import sys\nprint('FAKE PYTEST')\nsys.exit(0)\n"
FORCING_PLUGIN = (
    "import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n    report = outcome.get_result()\n    report.outcome = 'passed'\n"
)


@pytest.fixture
def workspace(sandbox_backend: str):  # type: ignore[no-untyped-def]
    with make_sandbox(sandbox_backend, workdir="/testbed") as box:
        box.write_file("/testbed/tests/test_truth.py", TEST_FILE)
        box.write_file(f"{GRADER_DIR}/driver.py", DRIVER_SOURCE)
        yield box


def driver(box, plugins: str = "") -> str:  # type: ignore[no-untyped-def]
    result = box.exec(
        f"cd /testbed && PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python {GRADER_DIR}/driver.py run /testbed "
        f"'{plugins}' -- -p no:cacheprovider tests/test_truth.py",
        timeout=120,
    )
    return result.output


def test_the_probe_names_pytest_and_what_must_not_be_shadowed(workspace) -> None:  # type: ignore[no-untyped-def]
    environment = probe_environment(workspace, "/testbed")
    assert environment.pytest and environment.python
    assert {"pytest", "_pytest", "pluggy", "os", "json"} <= environment.shadowable


def test_a_workspace_pytest_module_is_not_the_runner(workspace) -> None:  # type: ignore[no-untyped-def]
    workspace.write_file("/testbed/pytest.py", FAKE_PYTEST)
    plain = workspace.exec("cd /testbed && python -m pytest tests/test_truth.py", timeout=120)
    assert "FAKE PYTEST" in plain.output and plain.exit_code == 0  # the attack works on a plain run
    output = driver(workspace)
    assert "FAKE PYTEST" not in output and "1 failed" in output


def test_a_workspace_plugin_is_not_autoloaded(workspace) -> None:  # type: ignore[no-untyped-def]
    workspace.write_file("/testbed/forcing.py", FORCING_PLUGIN)
    workspace.write_file(
        "/testbed/forcing-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: forcing\nVersion: 1.0\n"
    )
    workspace.write_file("/testbed/forcing-1.0.dist-info/entry_points.txt", "[pytest11]\nforcing = forcing\n")
    plain = workspace.exec(
        "cd /testbed && python -m pytest -p no:cacheprovider tests/test_truth.py", timeout=120
    )
    assert "1 passed" in plain.output  # autoloaded from the workspace on a plain run
    assert "1 failed" in driver(workspace)


def test_the_probed_plugins_are_loaded_explicitly(workspace) -> None:  # type: ignore[no-untyped-def]
    """A plugin the environment installs still works with autoloading off, named with -p (a stdlib-only
    stand-in here: the driver imports it from outside the workspace)."""
    workspace.write_file(
        "/tmp/site/marker_plugin.py", "def pytest_report_header(config):\n    return 'MARKER LOADED'\n"
    )
    result = workspace.exec(
        f"cd /testbed && PYTHONPATH=/tmp/site PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python {GRADER_DIR}/driver.py run "
        "/testbed marker_plugin -- -p no:cacheprovider tests/test_truth.py",
        timeout=120,
    )
    assert "MARKER LOADED" in result.output and "1 failed" in result.output
