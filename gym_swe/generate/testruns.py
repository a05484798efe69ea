"""The repository's tests run in gym_swe's local sandbox (bubblewrap) on the task environment that episodes
get: a tree (a commit, with patches applied) in, each test's outcome and the run's output out. These runs
find candidates' FAIL_TO_PASS and PASS_TO_PASS; the tasks kept are then validated by the grader itself."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gym_swe.errors import GymSweError, TaskError
from gym_swe.sandbox.local import LocalSandbox
from gym_swe.tasks.environments import PreparedEnvironment, prepare_environment
from gym_swe.tasks.repos import safe_name
from gym_swe.tasks.swe import Environment, SWETask

if TYPE_CHECKING:
    from gym_swe.generate.repository import SourceRepository

WORKDIR = "/testbed"
PYTEST = "python -m pytest -rA --tb=short -q -p no:cacheprovider -p no:randomly"
MAX_OUTPUT = 8_000_000
# pytest's -rA summary: "PASSED tests/test_a.py::test_x", "FAILED tests/test_a.py::test_y - message". An id
# is its first word, as SWE-bench's records and the grader write them (a parameter with a space is cut there).
SUMMARY_LINE = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS) (\S+)", re.MULTILINE)
FINAL_LINE = re.compile(
    r"^(?:=+ )?(?:.*\b(?:passed|failed|errors?|skipped)\b.*|no tests ran) in [\d.]+s", re.M
)
OUTCOMES = {"PASSED": "passed", "XPASS": "passed", "FAILED": "failed", "ERROR": "error", "XFAIL": "skipped"}


@dataclass(frozen=True)
class TestRun:
    outcomes: dict[str, str]
    """Each test's outcome: passed, failed, error, skipped (an id pytest reports twice, as a parametrized
    test cut at a space can be, keeps its worst)."""
    output: str
    ok: bool
    """The run reached pytest's summary (no timeout, no crash before it)."""

    @property
    def passed(self) -> set[str]:
        return {name for name, outcome in self.outcomes.items() if outcome == "passed"}

    @property
    def failing(self) -> set[str]:
        return {name for name, outcome in self.outcomes.items() if outcome in ("failed", "error")}


def base_task(repo: SourceRepository, commit: str) -> SWETask:
    """A task record's worth of ``repo`` at ``commit``, for preparing the environment its tests run in: the
    same environment key as the generated tasks', so one venv serves them all."""
    return SWETask(
        instance_id=f"{safe_name(repo.name.replace('/', '__'))}-generate-{commit[:12]}",
        repo=repo.name,
        base_commit=commit,
        problem_statement="",
        test_patch="",
        fail_to_pass=("-",),
        pass_to_pass=(),
        environment=Environment.from_value(repo.environment, f"{repo.name} environment"),
        environment_setup_commit=repo.commit,
        repo_mirror=str(repo.mirror),
    )


def environment_of(repo: SourceRepository, commit: str) -> PreparedEnvironment:
    return prepare_environment(base_task(repo, commit))


def run_tests(
    repo: SourceRepository, commit: str, patches: tuple[str, ...] = (), timeout: float = 600.0
) -> TestRun:
    """The whole test suite of ``repo`` at ``commit`` with ``patches`` applied (each a git diff), in a fresh
    sandbox."""
    prepared = environment_of(repo, commit)
    try:
        with LocalSandbox(workdir=WORKDIR, **prepared.sandbox_options()) as box:
            for number, patch in enumerate(patches):
                if not patch:
                    continue
                path = f"/tmp/gym-swe-generate-{number}.diff"
                box.write_file(path, patch)
                applied = box.exec(f"git apply --whitespace=nowarn {shlex.quote(path)}", timeout=120)
                if not applied.ok:
                    raise TaskError(
                        f"a patch does not apply at {commit[:12]}: {applied.output.strip()[-500:]}"
                    )
            result = box.exec(PYTEST, timeout=timeout, max_output=MAX_OUTPUT)
    except GymSweError:
        raise
    return parse_run(result.output, ok=not result.timed_out)


def parse_run(output: str, ok: bool = True) -> TestRun:
    rank = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
    outcomes: dict[str, str] = {}
    for status, name in SUMMARY_LINE.findall(output):
        outcome = OUTCOMES[status]
        if rank[outcome] >= rank.get(outcomes.get(name, "passed"), 0):
            outcomes[name] = outcome
    finished = ok and bool(FINAL_LINE.search(output))
    return TestRun(outcomes=outcomes, output=output, ok=finished)
