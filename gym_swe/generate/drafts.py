"""A task before it is validated (`Draft`), and the way every injected bug (a mutation, a model's rewrite)
becomes one: the bug is committed as a commit with no parent, whose tree is the repository's with the bug in
it and without the test files of the tests it breaks (those come back as the test patch, so they are hidden
and protected), and the tests are run on the bug to find what it breaks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gym_swe.errors import GymSweError, TaskError
from gym_swe.generate.repository import SourceRepository
from gym_swe.generate.testruns import run_tests


class Rejected(GymSweError):
    """A candidate that makes no task, and why."""


@dataclass(frozen=True)
class Baseline:
    """The repository's tests at its commit, run twice: ``stable`` are those that passed both times."""

    stable: frozenset[str]
    total: int

    @property
    def share(self) -> float:
        return len(self.stable) / self.total if self.total else 0.0


def baseline(repo: SourceRepository, timeout: float) -> Baseline:
    first = run_tests(repo, repo.commit, timeout=timeout)
    second = run_tests(repo, repo.commit, timeout=timeout)
    if not (first.ok and second.ok):
        raise TaskError(
            f"the tests of {repo.name} at {repo.commit[:12]} did not finish (timed out, or pytest could not "
            f"start); the log ends:\n{first.output[-1500:]}\nWhat to do: give the environment the tests need "
            "(--environment), or more time (--test-timeout)"
        )
    return Baseline(frozenset(first.passed & second.passed), len(first.outcomes))


@dataclass(frozen=True)
class Draft:
    suffix: str
    """The task id after the repository's part: ``mutate-<key>``, ``history-<sha>``."""
    base_commit: str
    patch: str
    test_patch: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    failing_output: str
    """What the tests printed without the fix: the problem statement is written from it."""
    hidden_files: tuple[str, ...]
    title: str
    created_at: str = ""
    provenance: dict[str, Any] = field(default_factory=dict)


def test_files(ids: set[str] | frozenset[str]) -> tuple[str, ...]:
    return tuple(sorted({test_id.split("::", 1)[0] for test_id in ids}))


def injected(
    repo: SourceRepository,
    suffix: str,
    changed: dict[str, str],
    base: Baseline,
    timeout: float,
    title: str,
    provenance: dict[str, Any],
) -> Draft:
    """The task of the bug that ``changed`` (path: text) puts into the repository, or `Rejected` when no
    test that passes on the repository fails with it."""
    buggy = repo.commit_with(changed, f"{repo.name} with a bug")
    bug = repo.diff(repo.commit, buggy, tuple(changed))
    try:
        run = run_tests(repo, repo.commit, (bug,), timeout=timeout)
    except TaskError as error:
        raise Rejected(str(error)) from None
    if not run.ok:
        raise Rejected("the test run with the bug did not finish (it hangs, or breaks pytest)")
    fail_to_pass = base.stable & run.failing
    if not fail_to_pass:
        raise Rejected("no passing test fails with it")
    hidden = test_files(fail_to_pass)
    start = repo.commit_with({**changed, **dict.fromkeys(hidden)}, "The repository")
    return Draft(
        suffix=suffix,
        base_commit=start,
        patch=repo.diff(start, repo.commit, tuple(changed)),
        test_patch=repo.diff(start, repo.commit, hidden),
        fail_to_pass=tuple(sorted(fail_to_pass)),
        pass_to_pass=tuple(sorted(base.stable & run.passed)),
        failing_output=run.output,
        hidden_files=hidden,
        title=title,
        provenance={**provenance, "source_commit": repo.commit},
    )
