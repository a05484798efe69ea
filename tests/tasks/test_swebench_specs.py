"""Environments from the swebench package's own per-repository tables (read without importing swebench)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gym_swe.tasks import swebench_specs
from gym_swe.tasks.swe import load_swe_tasks
from gym_swe.tasks.swebench_specs import environment_from_spec

SWEBENCH = "swebench==4.1.0"  # the last series that ships MAP_REPO_VERSION_TO_SPECS


@pytest.mark.parametrize(("spec", "expected"), [
    ({"python": "3.9", "install": "python -m pip install -e .", "pip_packages": ["pluggy==0.13.1"]},
     {"python": "3.9", "packages": ["pluggy==0.13.1"], "install": ["python -m pip install -e ."], "env": {}}),
    ({"python": "3.9", "packages": "mpmath flake8", "pip_packages": ["mpmath==1.3.0"],
      "pre_install": ["apt-get install -y locales", "sed -i 's/a/b/' tox.ini"],
      "eval_commands": ["export LANG=en_US.UTF-8", "locale-gen"]},
     {"python": "3.9", "packages": ["mpmath", "flake8", "mpmath==1.3.0"], "install": ["sed -i 's/a/b/' tox.ini"],
      "env": {"LANG": "en_US.UTF-8"}}),
    ({"python": "3.11", "packages": "requirements.txt", "pip_packages": ["Werkzeug==2.3.7"],
      "install": "python -m pip install -e ."},
     {"python": "3.11", "packages": [], "env": {}, "install": [
         'for f in requirements/dev.txt; do if [ -f "$f" ]; then python -m pip install -r "$f"; break; fi; done',
         "python -m pip install Werkzeug==2.3.7", "python -m pip install -e ."]}),
])  # fmt: skip
def test_a_swebench_spec_becomes_an_environment(spec: dict, expected: dict) -> None:
    assert environment_from_spec(spec, ["requirements/dev.txt"], "x") == expected


@pytest.fixture
def swebench_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real swebench package, installed without its (heavy) dependencies into a directory of its own."""
    target = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                           "--no-deps", "--target", str(target), SWEBENCH], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    monkeypatch.syspath_prepend(str(target))
    clear()
    yield
    clear()


def clear() -> None:
    swebench_specs.swebench_tables.cache_clear()
    swebench_specs._swebench_environment.cache_clear()
    load_swe_tasks.cache_clear()


def test_records_without_an_environment_take_swebenchs(swebench_installed, shared_data: Path) -> None:
    pytest.importorskip("pyarrow")
    assert "swebench" not in sys.modules  # read, not imported: importing it needs docker, modal, ...
    tasks = load_swe_tasks(str(shared_data / "swe-bench" / "SWE-bench_Lite-test.parquet"))
    flask = tasks.get("pallets__flask-4992").environment
    assert flask.python == "3.11" and flask.install[-1] == "python -m pip install -e ."
    assert flask.install[1].startswith("python -m pip install ") and "Werkzeug==2.3.7" in flask.install[1]
    pytest_task = tasks.get("pytest-dev__pytest-5227").environment
    assert pytest_task.python == "3.9" and "pluggy==0.13.1" in pytest_task.packages
    assert pytest_task.variables["SETUPTOOLS_SCM_PRETEND_VERSION"] == "4.4"
    assert "swebench" not in sys.modules


def test_without_swebench_records_keep_the_defaults(shared_data: Path, monkeypatch) -> None:
    pytest.importorskip("pyarrow")
    clear()
    with monkeypatch.context() as patch:  # as if swebench were not installed
        patch.setattr(swebench_specs, "swebench_tables", lambda: None)
        tasks = load_swe_tasks(str(shared_data / "swe-bench" / "SWE-bench_Lite-test.parquet"))
        task = tasks.get("pallets__flask-4992")
    clear()
    assert task.environment.python == "python3" and task.environment.install == ()
