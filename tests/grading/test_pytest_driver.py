"""The grader's pytest driver in a real sandbox: pytest and its plugins come from the environment whatever the
workspace holds. Each case first shows the attack working on a plain ``python -m pytest`` (so the test can
fail), then that the driver is not fooled."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from gym_swe.grading.environment import DRIVER_SOURCE, GRADER_DIR, probe_environment
from gym_swe.sandbox import make_sandbox
from tests.conftest import REPO_ROOT, require_bwrap

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


def test_the_probe_writes_no_bytecode_into_the_tree(workspace) -> None:  # type: ignore[no-untyped-def]
    """The probe precedes the pristine tree's manifest: in pytest's own repository it imports pytest from
    the tree, and on docker (whose sandbox, unlike the local one, leaves bytecode on) it wrote
    src/_pytest/__pycache__ there, which no later grading sandbox of the task had, so the gold patch
    "changed" them and was rejected (pytest-dev__pytest-10051 on docker)."""
    calls: list[dict] = []

    class Watched:
        def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
            return getattr(workspace, name)

        def exec(self, command: str, **options):  # type: ignore[no-untyped-def]
            calls.append(options.get("env") or {})
            return workspace.exec(command, **options)

    probe_environment(Watched(), "/testbed")  # type: ignore[arg-type]
    assert calls and all(env.get("PYTHONDONTWRITEBYTECODE") == "1" for env in calls)


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


# -- the configuration is the pristine tree's -------------------------------------------------------------
PRISTINE_CONFIG = "[tool:pytest]\npython_functions = check_*\n"
CHECK_FILE = "def check_truth():\n    assert 1 + 1 == 3\n"
ATTACK_PLUGIN = "def pytest_configure(config):\n    print('ATTACK CONFIG READ')\n"
# Files pytest reads as its configuration, nearer the tests than the pristine setup.cfg or before it in
# pytest's order: each names a workspace plugin, which prints when loaded.
CONFIG_ATTACKS = {
    "pytest.toml": '[pytest]\naddopts = ["-p", "gym_attack"]\n',
    ".pytest.toml": '[pytest]\naddopts = ["-p", "gym_attack"]\n',
    "tests/pytest.ini": "[pytest]\naddopts = -p gym_attack\n",
    "tests/tox.ini": "[pytest]\naddopts = -p gym_attack\n",
    "pytest.ini": "[pytest]\naddopts = -p gym_attack\n",
}


@pytest.fixture(scope="session")
def pytest9_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pytest 9 (which also reads pytest.toml and .pytest.toml) and its dependencies, unpacked from PyPI's
    wheels into one directory for PYTHONPATH (cached under .tmp/)."""
    site = REPO_ROOT / ".tmp" / "pytest9-site"
    if not (site / "_pytest").is_dir():
        wheels = tmp_path_factory.mktemp("wheels")
        download = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary", ":all:", "--dest",
             str(wheels), "pytest>=9,<10"], capture_output=True, text=True,
        )  # fmt: skip
        if download.returncode != 0:
            pytest.skip(f"pytest 9 could not be downloaded from PyPI: {download.stderr[-500:]}")
        staging = tmp_path_factory.mktemp("site")
        for wheel in wheels.glob("*.whl"):
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(staging)
        shutil.rmtree(site, ignore_errors=True)
        site.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), site)
    return site


@pytest.mark.parametrize("attack", list(CONFIG_ATTACKS))
def test_no_configuration_file_the_workspace_adds_is_read(workspace, pytest9_site: Path, attack: str) -> None:  # type: ignore[no-untyped-def]
    """With pytest 9: a plain run reads the workspace's file; the grader's run reads the pristine setup.cfg
    only (its python_functions still apply), as the probe found it before anything was added."""
    workspace.upload(pytest9_site, "/tmp/pytest9")
    workspace.write_file("/testbed/setup.cfg", PRISTINE_CONFIG)
    workspace.write_file("/testbed/tests/test_check.py", CHECK_FILE)
    prefix = "cd /testbed && PYTHONPATH=/tmp/pytest9"
    with_pytest9 = workspace.exec(
        f"{prefix} python -c 'import pytest; print(pytest.__version__)'", timeout=60
    )
    assert with_pytest9.stdout.startswith("9."), with_pytest9.output
    workspace.exec(f"{prefix} python {GRADER_DIR}/driver.py probe /testbed tests/test_check.py > /tmp/probe")
    probe = json.loads(workspace.read_file("/tmp/probe").decode().splitlines()[-1])
    assert probe["config"] == "/testbed/setup.cfg" and probe["rootdir"] == "/testbed", probe

    workspace.write_file("/testbed/gym_attack.py", ATTACK_PLUGIN)
    workspace.write_file(f"/testbed/{attack}", CONFIG_ATTACKS[attack])
    plain = workspace.exec(f"{prefix} python -m pytest -p no:cacheprovider tests/test_check.py", timeout=120)
    assert "ATTACK CONFIG READ" in plain.output  # the attack works on a plain run
    graded = workspace.exec(
        f"{prefix} PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python {GRADER_DIR}/driver.py run /testbed '' -- "
        f"-p no:cacheprovider -c {probe['config']} --rootdir={probe['rootdir']} tests/test_check.py",
        timeout=120,
    )
    assert "ATTACK CONFIG READ" not in graded.output and "1 failed" in graded.output, graded.output


def test_the_probe_names_no_configuration_file_where_the_tree_has_none(workspace) -> None:  # type: ignore[no-untyped-def]
    environment = probe_environment(workspace, "/testbed", ["tests/test_truth.py"])
    assert environment.config is None and environment.rootdir == "/testbed"
    assert environment.config_options() == ["-c", "/dev/null", "--rootdir=/testbed"]
    workspace.write_file("/testbed/tests/pytest.ini", "[pytest]\npython_functions = nothing_*\n")
    result = workspace.exec(
        f"cd /testbed && PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python {GRADER_DIR}/driver.py run /testbed '' -- "
        f"-p no:cacheprovider {' '.join(environment.config_options())} tests/test_truth.py",
        timeout=120,
    )
    assert "1 failed" in result.output, result.output


def test_a_repository_that_is_pytest_is_graded_with_its_own_runner(tmp_path: Path) -> None:
    """pytest's own repository: its editable install (a .pth naming /testbed/src) is the only pytest there
    is. The probe says so, and the run imports pytest from there, as a plain run would."""
    require_bwrap()
    import _pytest
    import iniconfig
    import packaging
    import pluggy
    import pygments

    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python3*/site-packages"))
    for module in (pluggy, iniconfig, packaging, pygments):  # what the runner needs, installed beside it
        package = Path(module.__file__).parent
        shutil.copytree(package, site / module.__name__)
        for metadata in package.parent.glob(f"{module.__name__}-*.dist-info"):
            shutil.copytree(metadata, site / metadata.name)
    (site / "__editable__.pytest.pth").write_text("/testbed/src\n")  # as pip install -e leaves them
    (site / "pytest-0.dev0.dist-info").mkdir()
    (site / "pytest-0.dev0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: pytest\nVersion: 0.dev0\n"
    )
    repo = tmp_path / "repo"
    installed = Path(_pytest.__file__).parent.parent
    for name in ("_pytest", "pytest"):
        shutil.copytree(installed / name, repo / "src" / name)
    if (installed / "py.py").is_file():
        shutil.copy(installed / "py.py", repo / "src" / "py.py")
    (repo / "testing").mkdir()
    (repo / "testing" / "test_self.py").write_text(
        "import _pytest\n\n\ndef test_runner_is_the_repository():\n"
        "    assert _pytest.__file__.startswith('/testbed/src/')\n\n\ndef test_fails():\n    assert 1 == 2\n"
    )
    options = {"ro_binds": {str(venv): str(venv)},
               "env": {"PATH": f"{venv}/bin:/usr/bin:/bin", "VIRTUAL_ENV": str(venv)}}  # fmt: skip
    with make_sandbox("local", workdir="/testbed", source=repo, **options) as box:
        environment = probe_environment(box, "/testbed", ["testing/test_self.py"])
        assert environment.self_hosted and environment.pytest, environment
        command = (
            f"cd /testbed && PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python {GRADER_DIR}/driver.py run /testbed '' "
            f"{{mode}} -- -p no:cacheprovider {' '.join(environment.config_options())} testing/test_self.py"
        )
        graded = box.exec(command.format(mode="self-hosted"), timeout=120)
        assert "1 passed" in graded.output and "1 failed" in graded.output, graded.output
        assert "No module named 'pytest'" in box.exec(command.format(mode=""), timeout=120).output


def test_probed_plugins_load_under_filterwarnings_error(workspace) -> None:  # type: ignore[no-untyped-def]
    """pylint's configuration turns warnings into errors: a plugin imported before pytest starts must not
    make pytest warn that it cannot rewrite it (named with -p, it did, and the run wrote no report)."""
    workspace.write_file(
        "/tmp/site/marker_plugin.py", "def pytest_report_header(config):\n    return 'MARKER LOADED'\n"
    )
    workspace.write_file("/testbed/pytest.ini", "[pytest]\nfilterwarnings =\n    error\n")
    result = workspace.exec(
        f"cd /testbed && PYTHONPATH=/tmp/site PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python {GRADER_DIR}/driver.py run "
        "/testbed marker_plugin -- -p no:cacheprovider -c /testbed/pytest.ini tests/test_truth.py",
        timeout=120,
    )
    assert "MARKER LOADED" in result.output and "1 failed" in result.output, result.output
