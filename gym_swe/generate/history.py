"""Tasks from the repository's history (as SWE-bench and R2E-Gym mine them): a commit that changes both the
code and its tests. The task starts at the commit's parent, so its code change is the fix (the gold patch)
and its test change the hidden tests (the test patch); the tests that fail at the parent with the new tests
and pass with the fix are FAIL_TO_PASS, those that pass both ways PASS_TO_PASS. The commit and everything
after it stay out of the task's workspace: a checkout holds the history up to its base commit only
(`gym_swe.tasks.repos.checkout`)."""

from __future__ import annotations

from dataclasses import dataclass

from gym_swe.errors import TaskError
from gym_swe.generate.drafts import Draft, Rejected
from gym_swe.generate.mutate import is_test_file
from gym_swe.generate.repository import SourceRepository
from gym_swe.generate.testruns import run_tests

MAX_FIX_LINES = 400
"""A commit whose code change is larger is a feature, not a bug fix a task can be made of."""


@dataclass(frozen=True)
class Commit:
    sha: str
    parent: str
    subject: str
    date: str
    code: tuple[str, ...]
    tests: tuple[str, ...]

    @property
    def task_suffix(self) -> str:
        return f"history-{self.sha[:10]}"


def candidates(repo: SourceRepository, max_commits: int = 500) -> list[Commit]:
    """The commits of the repository's first-parent line (newest first) whose change holds both Python code
    and tests, and only text. A merge counts as its change to its first parent (a pull request's whole
    change, where projects merge them), titled by its message's body (GitHub's pull request title)."""
    log = repo.git(
        "log",
        "--first-parent",
        "--diff-merges=first-parent",
        f"--max-count={max_commits}",
        "--format=%x00%H %P%x01%cI%x01%s",
        "--numstat",
        repo.commit,
    )
    found = []
    for entry in log.split("\0")[1:]:
        head, _, stats = entry.partition("\n")
        shas, date, subject = head.split("\x01", 2)
        sha, *parents = shas.split()
        if not parents:
            continue  # a root commit has no state before it
        paths = []
        binary = False
        for line in stats.splitlines():
            parts = line.split("\t")
            if len(parts) == 3:
                binary |= parts[0] == "-"
                paths.append(parts[2])
        tests = tuple(path for path in paths if is_test_file(path))
        code = tuple(path for path in paths if not is_test_file(path))
        if binary or not tests or not any(path.endswith(".py") for path in code):
            continue
        if len(parents) > 1:
            body = [line.strip() for line in repo.git("log", "-1", "--format=%b", sha).splitlines()]
            subject = next((line for line in body if line), subject)
        found.append(Commit(sha, parents[0], subject.strip(), date, code, tests))
    return found


def draft(repo: SourceRepository, commit: Commit, timeout: float) -> Draft:
    """The task of ``commit``, or `Rejected` with why not."""
    patch = repo.diff(commit.parent, commit.sha, commit.code)
    test_patch = repo.diff(commit.parent, commit.sha, commit.tests)
    changed = sum(1 for line in patch.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---"))
    if changed > MAX_FIX_LINES:
        raise Rejected(f"the code change is {changed} lines (over {MAX_FIX_LINES}): a feature, not a fix")
    try:
        before = run_tests(repo, commit.parent, (test_patch,), timeout=timeout)
        after = run_tests(repo, commit.parent, (test_patch, patch), timeout=timeout)
    except TaskError as error:
        raise Rejected(str(error)) from None
    if not (before.ok and after.ok):
        raise Rejected("a test run did not finish (timed out, or pytest could not start)")
    fail_to_pass = sorted(after.passed & before.failing)
    if not fail_to_pass:
        raise Rejected("no test goes from failing to passing with the commit's code change")
    return Draft(
        suffix=commit.task_suffix,
        base_commit=commit.parent,
        patch=patch,
        test_patch=test_patch,
        fail_to_pass=tuple(fail_to_pass),
        pass_to_pass=tuple(sorted(after.passed & before.passed)),
        failing_output=before.output,
        hidden_files=commit.tests,
        title=commit.subject,
        created_at=commit.date,
        provenance={
            "method": "history",
            "commit": commit.sha,
            "parent": commit.parent,
            "subject": commit.subject,
        },
    )
