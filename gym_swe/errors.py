"""One exception tree for gym_swe.

Every error gym_swe raises on purpose is a ``GymSweError``; callers that want to survive any of them catch
that one class. Messages say what was expected and what came, and where a name was wrong they list the
names that are allowed (with the nearest one first).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class GymSweError(Exception):
    """Base class of every error gym_swe raises on purpose."""


class ConfigError(GymSweError, ValueError):
    """A wrong argument, kwarg or name given by the user (fails at once, before any work)."""


class MissingDependencyError(GymSweError, ImportError):
    """An optional dependency is not installed; the message says which extra to install."""


class SandboxError(GymSweError):
    """A sandbox could not be created, used, or died."""


class SandboxUnavailableError(SandboxError):
    """The backend cannot run here (bubblewrap missing, Docker daemon unreachable, image missing)."""


class SandboxCrashedError(SandboxError):
    """The sandbox's executor or jail died or stopped answering; the sandbox is no longer usable."""


class SandboxExhaustedError(SandboxCrashedError):
    """The sandbox's executor was killed by the sandbox's own limit on ``resource`` ("memory": the kernel's
    OOM killer, inside the sandbox's own memory budget), which only what runs in the sandbox can use up. The
    agent's doing, so an env scores it as the agent's failure; never an infrastructure error."""

    def __init__(self, message: str, resource: str = "memory") -> None:
        super().__init__(message)
        self.resource = resource


class FileTooLargeError(SandboxError):
    """A file (or a set of files) in a sandbox is larger than the host agreed to read into its memory."""


class ToolError(GymSweError):
    """A tool was used wrongly. Tools turn these into text for the model rather than raising to the env."""


class TaskError(GymSweError):
    """A task source could not be loaded, or a task id does not exist."""


class TaskFormatError(TaskError):
    """A task record (a dataset row) is missing a field or has one of the wrong type."""


class TaskRefused(TaskError):
    """A well-formed record of a task gym_swe cannot grade (its test ids are none its runner reads, nothing is
    left of FAIL_TO_PASS once excluded): that task is refused where it is loaded, the others load."""


class GradingError(GymSweError):
    """The grader could not run the tests (never raised for tests that merely fail)."""


class HarnessError(GymSweError):
    """An agent harness could not be installed or set up (npm failed, no npm, an unsupported machine)."""


class HarnessNotInstalledError(HarnessError, ConfigError):
    """An agent harness (or the Node it runs on) is not installed; the message says the command that
    installs it. A refusal before any work, as a ConfigError is."""


class GeneratorError(GymSweError):
    """A generator's backend failed as a whole: a weight sync that failed or timed out, an engine that is
    asleep or broken. Never raised for one bad sample (that is a `Sample` with ``finish_reason="error"``)."""


def summary(message: str, limit: int = 200) -> str:
    """The first line of ``message``, at most ``limit`` characters, cut between words (marked "…").

    >>> summary("no mirror of 'acme/other' in /srv/mirrors; make one", 30)
    "no mirror of 'acme/other' in …"
    """
    line = message.strip().splitlines()[0] if message.strip() else ""
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    space = cut.rfind(" ")
    return (cut[: space + 1] if space > limit // 2 else cut) + "…"


def unknown_name(kind: str, name: object, known: Iterable[str]) -> str:
    """Message for a name that is not among ``known``: says what came, suggests the nearest, lists all.

    Examples:
        >>> unknown_name("sandbox backend", "dokcer", ["local", "docker"])
        "Unknown sandbox backend 'dokcer'. Did you mean 'docker'? Known: 'docker', 'local'."
    """
    known = sorted(known)
    message = f"Unknown {kind} {name!r}."
    close = difflib.get_close_matches(str(name), known, n=1) if isinstance(name, str) else []
    if close:
        message += f" Did you mean {close[0]!r}?"
    if len(known) <= 30:
        message += " Known: " + ", ".join(repr(k) for k in known) + "."
    else:
        message += f" ({len(known)} known, e.g. " + ", ".join(repr(k) for k in known[:5]) + ")."
    return message


def missing_dependency(module: str, extra: str, feature: str = "This feature") -> MissingDependencyError:
    """The error to raise when an optional dependency is missing, with the pip command that fixes it: the one
    way gym_swe words an install hint (``extra`` is one of pyproject.toml's extras, which a test checks).
    ``feature`` says what needs it (``"The Ray env pool"``), for a message read without its traceback; where
    a reason is wanted rather than an exception, ``str()`` of the error is that reason."""
    return MissingDependencyError(
        f"{feature} needs the Python package {module!r}, which is not installed. "
        f'Install it with: pip install "gym-swe[{extra}]"'
    )
