"""gym_swe: software-engineering work as reinforcement-learning environments for language-model agents.

Importing the package registers the envs (``gymnasium.make("CodeDebug-v0")``) and stays light: no torch,
docker or datasets import happens here; each is imported where it is used. Without the import,
``gymnasium.make("gym_swe:CodeDebug-v0")`` imports it first.
"""

from importlib.metadata import PackageNotFoundError, version

from gym_swe.errors import (
    ConfigError,
    GradingError,
    GymSweError,
    SandboxCrashedError,
    SandboxError,
    SandboxUnavailableError,
    TaskError,
    ToolError,
)
from gym_swe.registration import register_envs

# The version is written once, in pyproject.toml; the installed package's metadata carries it here.
try:
    __version__ = version("gym-swe")
except PackageNotFoundError:  # imported from a source tree that was never installed (pip install -e .)
    __version__ = "0+unknown"

register_envs()

__all__ = [
    "ConfigError",
    "GradingError",
    "GymSweError",
    "SandboxCrashedError",
    "SandboxError",
    "SandboxUnavailableError",
    "TaskError",
    "ToolError",
    "__version__",
]
