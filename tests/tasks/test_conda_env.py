"""A conda environment file as pip requirements (`gym_swe.tasks.conda_env`): the script that the install
commands of repositories SWE-bench sets up with conda (xarray) run in the prepare jail, with the task's python."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gym_swe.tasks.conda_env import pip_requirement, pip_requirements

SCRIPT = Path(__file__).resolve().parents[2] / "gym_swe" / "tasks" / "conda_env.py"
# xarray's ci/requirements/environment.yml at the environment_setup_commit of SWE-bench's 2022.09 tasks
# (087ebbb7), shortened; its comments and indentation as they are.
XARRAY = """name: xarray-tests
channels:
  - conda-forge
  - nodefaults
dependencies:
  - aiobotocore
  - cdms2
  - dask-core
  - fsspec!=2021.7.0
  - hdf5
  - iris
  - lxml  # Optional dep of pydap
  - matplotlib-base
  - numpy<1.24
  # - pynio: not compatible with netCDF4>1.5.3; only tested in py37-bare-minimum
  - pip
  - typing_extensions
  - pip:
      - numbagg
      - git+https://github.com/pydata/sparse#egg=sparse
"""


@pytest.mark.parametrize(("spec", "requirement"), [
    ("numpy", "numpy"),
    ("numpy<1.24", "numpy<1.24"),
    ("fsspec!=2021.7.0", "fsspec!=2021.7.0"),
    ("pandas>=1.3,<2", "pandas>=1.3,<2"),
    ("scipy=1.7", "scipy==1.7"),
    ("scipy=1.7.*", "scipy==1.7.*"),
    ("scipy==1.7.3", "scipy==1.7.3"),
    ("scipy 1.7.3", "scipy==1.7.3"),
    ("scipy=1.7.3=py39h5f9f6a6_0", "scipy==1.7.3"),
    ("conda-forge::cftime", "cftime"),
    ("matplotlib-base>=3.4", "matplotlib>=3.4"),
    ("dask-core", "dask"),
    ("iris", "scitools-iris"),
    ("python=3.10", None),
    ("pip", None),
    ("hdf5", None),
    ("cdms2", None),
    ("gtk3", None),  # matplotlib 3.5-3.6's environment.yml: the C library, not on PyPI (3.7: gtk4)
    ("gtk4", None),
])  # fmt: skip
def test_a_conda_match_spec_becomes_a_pip_requirement(spec: str, requirement: str | None) -> None:
    assert pip_requirement(spec) == requirement


def test_an_environment_file_gives_its_dependencies_and_pip_list_in_order() -> None:
    requirements, left_out = pip_requirements(XARRAY)
    assert requirements == [
        "aiobotocore", "dask", "fsspec!=2021.7.0", "scitools-iris", "lxml", "matplotlib", "numpy<1.24",
        "typing_extensions", "numbagg", "git+https://github.com/pydata/sparse#egg=sparse",
    ]  # fmt: skip
    assert left_out == ["cdms2", "hdf5", "pip"]
    # channels are not dependencies; a file without dependencies gives nothing
    assert pip_requirements("name: x\nchannels:\n  - conda-forge\n") == ([], [])


def test_the_script_reads_the_first_file_that_exists(tmp_path: Path) -> None:
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "environment.yml").write_text(XARRAY)
    run = lambda *paths: subprocess.run(  # noqa: E731
        [sys.executable, str(SCRIPT), *paths], cwd=tmp_path, capture_output=True, text=True
    )
    done = run("ci/requirements/environment.yml", "ci/environment.yml", "environment.yml")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:3] == ["aiobotocore", "dask", "fsspec!=2021.7.0"]
    assert "left out of ci/environment.yml (not pip packages): cdms2, hdf5, pip" in done.stderr
    missing = run("ci/requirements/environment.yml", "environment.yml")
    assert missing.returncode == 1 and missing.stdout == ""
    assert "no conda environment file at ci/requirements/environment.yml, environment.yml" in missing.stderr


def test_the_script_runs_on_the_oldest_python_a_task_can_have(tmp_path: Path) -> None:
    """It runs with the task's python, which may be as old as 3.6 (standard library only, no new syntax)."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    oldest = sorted(pyenv.glob("3.6*/bin/python3.6"))
    if not oldest:
        pytest.skip(f"no Python 3.6 in {pyenv}")
    (tmp_path / "environment.yml").write_text(XARRAY)
    done = subprocess.run([str(oldest[0]), str(SCRIPT), "environment.yml"], cwd=tmp_path,
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == pip_requirements(XARRAY)[0]
