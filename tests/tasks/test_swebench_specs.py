"""Environments from the swebench package's own per-repository tables (read without importing swebench)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gym_swe.tasks import swebench_specs
from gym_swe.tasks.conda_env import JAIL_PATH as CONDA_ENV_JAIL_PATH
from gym_swe.tasks.conda_env import SETUP_COMMIT_TREE
from gym_swe.tasks.swe import load_swe_tasks
from gym_swe.tasks.swebench_specs import environment_from_spec, later_release_pins

SWEBENCH = "swebench==4.1.0"  # the last series that ships MAP_REPO_VERSION_TO_SPECS


@pytest.mark.parametrize(("spec", "expected"), [
    ({"python": "3.9", "install": "python -m pip install -e .", "pip_packages": ["pluggy==0.13.1"]},
     {"python": "3.9", "packages": ["pluggy==0.13.1"], "install": ["python -m pip install -e ."], "env": {}}),
    ({"python": "3.9", "packages": "mpmath flake8", "pip_packages": ["mpmath==1.3.0"],
      "pre_install": ["apt-get install -y locales", "sed -i 's/a/b/' tox.ini"],
      "eval_commands": ["export LANG=en_US.UTF-8", "locale-gen"]},
     {"python": "3.9", "packages": ["flake8", "mpmath==1.3.0"], "install": ["sed -i 's/a/b/' tox.ini"],
      "env": {"LANG": "en_US.UTF-8"}}),
    # scikit-learn 0.20-0.22: conda's names, then pip_packages over them; one pip run takes each name once
    # (Python 3.6's pip refuses `numpy ... numpy==1.19.2`: "Double requirement given")
    ({"python": "3.6", "packages": "numpy scipy cython pytest pandas matplotlib",
      "pip_packages": ["cython", "numpy==1.19.2", "setuptools", "scipy==1.5.2"]},
     {"python": "3.6", "packages": ["cython", "pytest", "pandas", "matplotlib", "numpy==1.19.2", "setuptools",
                                    "scipy==1.5.2"], "install": [], "env": {}}),
    # matplotlib 3.5-3.7: pre_install sets variables that its next commands read, as one script does
    ({"python": "3.11", "install": "python -m pip install -e .",
      "pre_install": ["apt-get -y update", 'QHULL_URL="http://x/qhull.tgz"', 'QHULL_TAR="/tmp/qhull.tgz"',
                      'wget -O "$QHULL_TAR" "$QHULL_URL"']},
     {"python": "3.11", "packages": [], "env": {}, "install": [
         'QHULL_URL="http://x/qhull.tgz" && QHULL_TAR="/tmp/qhull.tgz" && wget -O "$QHULL_TAR" "$QHULL_URL"',
         "python -m pip install -e ."]}),
    # scikit-learn 1.3: the list is shell words, quoted; pip_packages that only name a package keep conda's pin
    ({"python": "3.9", "packages": "'numpy==1.19.2' 'scipy==1.5.2' 'cython==3.0.10' pytest 'pandas<2.0.0' "
                                   "'matplotlib<3.9.0' setuptools pytest joblib threadpoolctl",
      "pip_packages": ["Cython", "setuptools", "numpy", "scipy"]},
     {"python": "3.9", "packages": ["numpy==1.19.2", "scipy==1.5.2", "cython==3.0.10", "pytest", "pandas<2.0.0",
                                    "matplotlib<3.9.0", "setuptools", "joblib", "threadpoolctl"],
      "install": [], "env": {}}),
    ({"python": "3.11", "packages": "requirements.txt", "pip_packages": ["Werkzeug==2.3.7"],
      "install": "python -m pip install -e ."},
     {"python": "3.11", "packages": [], "env": {}, "install": [
         'for f in requirements/dev.txt; do if [ -f "$f" ]; then python -m pip install -r "$f" || exit $?; break; '
         'fi; done',
         "python -m pip install Werkzeug==2.3.7", "python -m pip install -e ."]}),
])  # fmt: skip
def test_a_swebench_spec_becomes_an_environment(spec: dict, expected: dict) -> None:
    assert environment_from_spec(spec, ["requirements/dev.txt"], "x") == expected


def test_a_requirements_file_that_fails_to_install_fails_the_install_command(tmp_path: Path) -> None:
    """The loop that finds the repository's requirements file ends with ``break``, whose status is 0: pip's
    failure must still be the command's (Django 3.x under Python 3.6: bcrypt's build failed, and the venv
    was left half-installed and called ready)."""
    spec = {"python": "3.6", "packages": "requirements.txt", "install": "python -m pip install -e ."}
    command = environment_from_spec(spec, ["missing.txt", "tests/requirements/py3.txt"], "x")["install"][0]
    (tmp_path / "tests/requirements").mkdir(parents=True)
    (tmp_path / "tests/requirements/py3.txt").write_text("bcrypt\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for status in (1, 0):  # a python whose pip fails, then one whose pip installs
        (bin_dir / "python").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/calls\nexit {status}\n')
        (bin_dir / "python").chmod(0o755)
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
        assert done.returncode == status
    assert (tmp_path / "calls").read_text().splitlines() == [
        "-m pip install -r tests/requirements/py3.txt"
    ] * 2


def test_a_conda_environment_file_becomes_pip_requirements_installed_with_the_pins() -> None:
    """SWE-bench's xarray setup (a conda env from the repository's environment.yml, then pip_packages):
    the file is read by `conda_env` in the prepare jail and installed in one pip run with the pins."""
    spec = {"python": "3.10", "packages": "environment.yml", "install": "python -m pip install -e .",
            "pip_packages": ["numpy==1.23.0", "pytest==7.4.0"], "no_use_env": True}  # fmt: skip
    environment = environment_from_spec(spec, (), "pydata/xarray 0.12", ["ci/requirements/environment.yml",
                                                                        "environment.yml"])  # fmt: skip
    assert environment == {
        "python": "3.10",
        "packages": ["numpy==1.23.0", "pytest==7.4.0"],
        "install": [
            f"python {CONDA_ENV_JAIL_PATH} {SETUP_COMMIT_TREE}/ci/requirements/environment.yml "
            f"{SETUP_COMMIT_TREE}/environment.yml ci/requirements/environment.yml environment.yml "
            "> /tmp/conda-requirements.txt && python -m pip install -r /tmp/conda-requirements.txt "
            "numpy==1.23.0 pytest==7.4.0",
            "python -m pip install -e .",
        ],
        "env": {},
    }


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
    xarray = tasks.get("pydata__xarray-4094").environment  # set up by SWE-bench from a conda file
    assert xarray.python == "3.10" and "numpy==1.23.0" in xarray.packages
    assert xarray.install[0].startswith(f"python {CONDA_ENV_JAIL_PATH} {SETUP_COMMIT_TREE}/ci/requirements/")
    assert xarray.install[-1] == "python -m pip install -e ."
    assert not flask.rebuild and not xarray.rebuild
    # The compiled ones build again in place before their tests when a fix changes a compiled source.
    for task_id in (
        "astropy__astropy-12907",
        "scikit-learn__scikit-learn-13142",
        "matplotlib__matplotlib-23314",
    ):
        assert tasks.get(task_id).environment.rebuild == ("python setup.py build_ext --inplace",)
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


@pytest.mark.parametrize(("repo", "version", "pins"), [
    ("sphinx-doc/sphinx", "3.5", ["docutils<0.22"]),
    ("sphinx-doc/sphinx", "1.6", ["docutils<0.22"]),
    ("sphinx-doc/sphinx", "4.0", []),
    ("sphinx-doc/sphinx", "7.2", []),
    ("pallets/flask", "2.0", []),
    ("scikit-learn/scikit-learn", "0.20", ["cython<3"]),
    ("scikit-learn/scikit-learn", "0.22", ["cython<3"]),
    ("scikit-learn/scikit-learn", "1.3", []),
    ("sphinx-doc/sphinx", "not-a-version", []),
])  # fmt: skip
def test_later_releases_that_break_old_versions_are_pinned_out(repo: str, version: str, pins: list) -> None:
    assert later_release_pins(repo, version) == pins
