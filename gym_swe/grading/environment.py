"""The grading sandbox as the grader's driver (`pytest_driver`, written at `GRADER_DIR`) finds it outside a
test run: the environment its python holds (`probe_environment`: pytest, the pytest11 plugins installed, the
module names a new file must not shadow, the configuration file and rootdir pytest takes), probed on the
pristine tree before anything of the agent's is applied; and which of some strings its text files hold
(`scan`)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gym_swe.errors import GradingError
from gym_swe.sandbox.base import Sandbox

GRADER_DIR = "/tmp/gym_swe_grader"
DRIVER_SOURCE = Path(__file__).with_name("pytest_driver.py").read_bytes()
NO_CONFIG = "/dev/null"
"""What pytest is given as its configuration file where the pristine tree has none (pytest reads nothing)."""


@dataclass(frozen=True)
class Environment:
    """What the pristine grading sandbox's python holds (from `pytest_driver` probe)."""

    python: str
    pytest: str
    plugins: tuple[str, ...]
    """Modules of the pytest11 plugins installed, loaded explicitly with -p."""
    shadowable: frozenset[str]
    """Top-level module names a new file in the repository must not take."""
    editable: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """The repository's directories an editable install puts on ``sys.path`` (``src``), relative to its root,
    each with the top-level modules it holds: a new module at the root must not take those names."""
    config: str | None = None
    """The configuration file pytest takes for the task's test files in the pristine tree (None: none)."""
    rootdir: str | None = None
    """pytest's rootdir for them (None when the probe could not ask pytest)."""
    self_hosted: bool = False
    """The repository is pytest itself: the runner is the workspace's own (its editable install)."""

    def config_options(self) -> list[str]:
        """pytest options that fix its configuration to the pristine tree's, whatever the workspace adds."""
        if self.rootdir is None:
            return []
        return ["-c", self.config or NO_CONFIG, f"--rootdir={self.rootdir}"]


def probe_environment(
    sandbox: Sandbox, workdir: str, files: Sequence[str] = (), needs_pytest: bool = True
) -> Environment:
    """Probe the task's python in ``sandbox``, which must be pristine (nothing of the agent's applied);
    ``files``: the test files the grade will run (they decide pytest's configuration file and rootdir);
    ``needs_pytest``: whether the task's runner is pytest (another runner's environment need not hold it)."""
    sandbox.write_file(f"{GRADER_DIR}/driver.py", DRIVER_SOURCE)
    arguments = " ".join(shlex.quote(path) for path in [workdir, *files])
    # No bytecode: the tree's manifest is taken next, and a pytest imported from the tree (pytest's own
    # repository) would leave src/_pytest/__pycache__ in it that no later sandbox of the task has (a docker
    # sandbox writes bytecode; a local one does not).
    run = sandbox.exec(
        f"cd {shlex.quote(workdir)} && python {GRADER_DIR}/driver.py probe {arguments}",
        timeout=300,
        max_output=16 * 1024 * 1024,
        env={"PYTHONDONTWRITEBYTECODE": "1"},
    )
    try:
        report = json.loads(run.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise GradingError(
            f"could not probe the task's python (exit {run.exit_code}): {run.output.strip()[-1500:]}"
        ) from None
    if needs_pytest and not report.get("pytest"):
        raise GradingError(f"the task's environment has no usable pytest: {report.get('error')}")
    return Environment(
        python=str(report["python"]),
        pytest=str(report.get("pytest") or ""),
        plugins=tuple(module for _, module in report["plugins"]),
        shadowable=frozenset(report["shadowable"]),
        editable={str(path): frozenset(names) for path, names in report.get("editable", {}).items()},
        config=report.get("config") or None,
        rootdir=report.get("rootdir") or None,
        self_hosted=bool(report.get("self_hosted")),
    )


def scan(sandbox: Sandbox, workdir: str, strings: Sequence[str]) -> set[str]:
    """The ``strings`` some text file of the (pristine) tree at ``workdir`` holds."""
    if not strings:
        return set()
    sandbox.exec(f"mkdir -p {GRADER_DIR}", timeout=60)
    sandbox.write_file(f"{GRADER_DIR}/driver.py", DRIVER_SOURCE)
    sandbox.write_file(f"{GRADER_DIR}/needles.json", json.dumps(list(strings)).encode())
    run = sandbox.exec(
        f"python {GRADER_DIR}/driver.py scan {shlex.quote(workdir)} {GRADER_DIR}/needles.json",
        timeout=600,
        max_output=64 * 1024 * 1024,
    )
    try:
        found = json.loads(run.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise GradingError(
            f"could not scan the repository (exit {run.exit_code}): {run.output[-1500:]}"
        ) from None
    return {str(item) for item in found}
