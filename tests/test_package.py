"""The package surface: a light import, one exception tree."""

from __future__ import annotations

import re
import subprocess
import sys

import gym_swe
from gym_swe import errors
from tests.conftest import REPO_ROOT


def test_import_pulls_in_no_heavy_dependency() -> None:
    code = (
        "import sys, gym_swe, gym_swe.sandbox, gym_swe.tools\n"
        "heavy = sorted(m for m in ('torch', 'docker', 'datasets', 'transformers', 'vllm', 'ray')"
        " if m in sys.modules)\n"
        "print(','.join(heavy))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_every_error_is_a_gym_swe_error() -> None:
    for name in dir(errors):
        value = getattr(errors, name)
        if isinstance(value, type) and issubclass(value, Exception) and value.__module__ == errors.__name__:
            assert issubclass(value, gym_swe.GymSweError), name


def test_config_errors_are_value_errors_and_name_the_nearest() -> None:
    assert issubclass(errors.ConfigError, ValueError)
    message = errors.unknown_name("env", "SWEGym-v9", ["SWEGym-v0", "CodeDebug-v0"])
    assert message == "Unknown env 'SWEGym-v9'. Did you mean 'SWEGym-v0'? Known: 'CodeDebug-v0', 'SWEGym-v0'."


def test_missing_dependency_names_the_extra() -> None:
    error = errors.missing_dependency("docker", "docker")
    assert isinstance(error, ImportError)
    assert 'pip install "gym-swe[docker]"' in str(error)


def test_the_version_is_the_one_pyproject_declares() -> None:
    """pyproject.toml is the one place the version is written; the package reports it from there."""
    pyproject = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    declared = re.search(r'^version = "([^"]+)"$', pyproject, re.M)
    assert declared and gym_swe.__version__ == declared.group(1)
