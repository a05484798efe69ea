"""Generation from candidates to validated records, in parallel, resumable.

Every candidate (a commit, a mutation, a rewrite) has an id that does not change between runs. Each is made
into a draft (its tests run), given a problem statement, and validated exactly as `gym-swe validate` does it
(`gym_swe.validate.validate`: the fix resolves it, no change does not; the pass-to-pass tests passed in the
draft's runs and pass again in the grader's); a task is kept only when its grade is also protected as the
default ``integrity="protected"`` pays it (sealed, or decoys). A kept task is appended to the task file, a
rejected one (with why) to ``<file>.rejected.jsonl``, one line each, written whole and flushed to disk as
it is made: a re-run skips every id in either, and a crash or Ctrl-C loses at most the tasks in flight.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_swe.errors import GymSweError, TaskError
from gym_swe.generate.drafts import Baseline, Draft, Rejected, baseline
from gym_swe.generate.repository import SourceRepository
from gym_swe.generate.statements import templated, written_by_model
from gym_swe.grading.seals.store import forget as forget_calibrations
from gym_swe.tasks.repos import remove_checkout, safe_name

logger = logging.getLogger("gym_swe")
METHODS = ("history", "mutate", "rewrite")
PROTECTED = ("sealed", "decoys")
"""The grades the default integrity pays (`gym_swe.validate.protection_summary`)."""
MIN_BASE_SHARE = 0.5
"""Below this share of the tests passing at the repository's commit, its environment is taken to be wrong."""


@dataclass(frozen=True)
class Candidate:
    task_id: str
    method: str
    make: Callable[[], Draft]


def paths_for(out: Path) -> dict[str, Path]:
    """What generation writes beside the task file ``out``: the rejected candidates, the repositories'
    mirrors, scratch files."""
    stem = out.name.removesuffix(".jsonl")
    return {
        "rejected": out.with_name(stem + ".rejected.jsonl"),
        "repos": out.with_name(stem + ".repos"),
        "work": out.with_name(stem + ".work"),
    }


def task_id_of(repo: SourceRepository, suffix: str) -> str:
    return f"{repo.name.replace('/', '__')}-{suffix}"


def done_ids(*files: Path) -> set[str]:
    """The ids already in ``files`` (a line cut short by a crash is dropped from its file first)."""
    done = set()
    for path in files:
        if not path.exists():
            continue
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            with open(path, "r+b") as handle:
                handle.truncate(data.rfind(b"\n") + 1)
            data = data[: data.rfind(b"\n") + 1]
        for line in data.decode().splitlines():
            if line.strip():
                done.add(json.loads(line).get("instance_id") or json.loads(line)["task_id"])
    return done


class Appender:
    """One JSON line at a time, whole, flushed to disk before the next (worker threads share it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def add(self, row: dict[str, Any]) -> None:
        line = json.dumps(row, ensure_ascii=False) + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())


def record(repo: SourceRepository, draft: Draft, statement: str, mirror: str) -> dict[str, Any]:
    """The SWEGym-v0 record of a draft, with its provenance and difficulty."""
    fix_lines = sum(
        1 for line in draft.patch.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")
    )
    return {
        "repo": repo.name,
        "instance_id": task_id_of(repo, draft.suffix),
        "base_commit": draft.base_commit,
        "patch": draft.patch,
        "test_patch": draft.test_patch,
        "problem_statement": statement,
        "hints_text": "",
        "created_at": draft.created_at,
        "version": "",
        "FAIL_TO_PASS": list(draft.fail_to_pass),
        "PASS_TO_PASS": list(draft.pass_to_pass),
        "environment_setup_commit": repo.commit,
        "environment": repo.environment,
        "repo_mirror": mirror,
        "provenance": draft.provenance,
        "difficulty": {
            "fix_lines": fix_lines,
            "fix_files": draft.patch.count("\ndiff --git ") + 1,
            "fail_to_pass": len(draft.fail_to_pass),
        },
    }


def validated(row: dict[str, Any], work: Path) -> dict[str, Any]:
    """``row`` graded by `gym_swe.validate.validate` from a task file of its own: the report's row."""
    from gym_swe.validate import validate

    work.mkdir(parents=True, exist_ok=True)
    path = work / f"{safe_name(row['instance_id'])}-{time.monotonic_ns()}.jsonl"  # the loader caches by path
    path.write_text(json.dumps(row) + "\n")
    try:
        return validate("SWEGym-v0", tasks=str(path), workers=1)[0]
    except (GymSweError, KeyboardInterrupt):
        raise
    except Exception as error:
        # The grader crashed on this task (gym_swe's bug, not the candidate's): the task cannot be
        # validated, so it is not kept; the others go on, and the traceback is shown for the report.
        logger.warning("%s: the grader crashed", row["instance_id"], exc_info=True)
        raise Rejected(
            f"the grader crashed validating it (a gym_swe bug): {type(error).__name__}: {error}"
        ) from None
    finally:
        path.unlink(missing_ok=True)


def verdict(report: dict[str, Any]) -> str | None:
    """Why a validated row is not kept; None when it is."""
    if not report["ok"]:
        return f"not valid: {report.get('problem') or report.get('error')}"
    if report.get("integrity") not in PROTECTED:
        return (
            f"valid but its grade is not protected ({report.get('integrity')}, chance "
            f"{report.get('chance')}): the default integrity would not pay it"
        )
    return None


class Generation:
    """One run of `gym-swe tasks generate` over one repository into one task file."""

    def __init__(
        self,
        repo: SourceRepository,
        out: Path,
        workers: int = 2,
        max_tasks: int | None = None,
        max_candidates: int | None = None,
        timeout: float = 600.0,
        generator: Any = None,
        progress: Any = None,
    ) -> None:
        self.repo = repo
        self.out = out
        self.paths = paths_for(out)
        self.workers = workers
        self.max_tasks = max_tasks
        self.max_candidates = max_candidates
        self.timeout = timeout
        self.generator = generator
        self.progress = progress
        self.mirror = os.path.relpath(repo.mirror, out.parent)
        self.kept = Appender(out)
        self.rejected = Appender(self.paths["rejected"])
        self.counts = {"kept": 0, "new": 0, "rejected": 0, "skipped": 0}

    def baseline(self) -> Baseline:
        """The tests at the repository's commit, twice; an error when most of them do not pass there."""
        base = baseline(self.repo, self.timeout)
        logger.info(
            "%s at %s: %d of %d tests pass, twice (%.0f%%), in the environment %s",
            self.repo.name,
            self.repo.commit[:12],
            len(base.stable),
            base.total,
            100 * base.share,
            json.dumps(self.repo.environment),
        )
        if base.share < 1:
            logger.warning(
                "%d test(s) do not pass at %s (or not twice): no task counts on them",
                base.total - len(base.stable),
                self.repo.commit[:12],
            )
        if base.share < MIN_BASE_SHARE:
            raise TaskError(
                f"only {len(base.stable)} of the {base.total} tests of {self.repo.name} pass at "
                f"{self.repo.commit[:12]} ({base.share:.0%}): its environment is not the one its tests need. "
                "What to do: give it with --environment (python, packages, install, env)"
            )
        return base

    def statement(self, draft: Draft) -> str:
        if self.generator is not None:
            return written_by_model(
                self.generator, draft.failing_output, draft.fail_to_pass, draft.hidden_files, draft.patch
            )
        return templated(
            draft.title, draft.failing_output, draft.fail_to_pass, draft.hidden_files, draft.patch
        )

    def run(self, candidates: Iterable[Candidate]) -> dict[str, int]:
        """Every candidate not done yet (the first ``max_candidates`` of them), ``workers`` at a time, until
        ``max_tasks`` are kept; the candidates in flight then are finished and written too."""
        self.out.parent.mkdir(parents=True, exist_ok=True)
        kept_before = done_ids(self.out)
        done = kept_before | done_ids(self.paths["rejected"])
        todo = [candidate for candidate in candidates if candidate.task_id not in done]
        todo = todo[: self.max_candidates] if self.max_candidates is not None else todo
        self.counts = {"kept": len(kept_before), "new": 0, "rejected": 0, "skipped": len(done)}
        if self.max_tasks is not None and self.counts["kept"] >= self.max_tasks:
            return self.counts
        jobs: queue.Queue[Candidate | None] = queue.Queue()
        for candidate in todo:
            jobs.put(candidate)
        results: queue.Queue[tuple[Candidate, dict[str, Any] | None, str, BaseException | None]] = (
            queue.Queue()
        )
        stop = threading.Event()

        def work() -> None:
            while not stop.is_set():
                try:
                    candidate = jobs.get_nowait()
                except queue.Empty:
                    return
                if candidate is None or stop.is_set():
                    return
                try:
                    row, why = self.made(candidate)
                    results.put((candidate, row, why, None))
                except BaseException as error:  # a bug: the main thread raises it
                    results.put((candidate, None, "", error))
                    return

        if self.progress:
            self.progress.start(len(todo))
        # daemon threads: on Ctrl-C the main thread returns at once, and what is in flight is lost
        threads = [threading.Thread(target=work, daemon=True) for _ in range(max(1, self.workers))]
        for thread in threads:
            thread.start()
        try:
            landed = 0
            while landed < len(todo):
                self._land(*results.get())
                landed += 1
                if self.max_tasks is not None and self.counts["kept"] >= self.max_tasks:
                    break
            stop.set()  # enough: the tasks in flight are finished and written, none is started
            for thread in threads:
                thread.join()
            while landed < len(todo) and not results.empty():
                self._land(*results.get())
                landed += 1
        finally:
            stop.set()  # on Ctrl-C or an error, what is in flight is left (the CLI exits at once)
            if self.progress:
                self.progress.close()
            with contextlib.suppress(OSError):  # its scratch files go as each task ends; it goes if empty
                self.paths["work"].rmdir()
        return self.counts

    def _land(
        self, candidate: Candidate, row: dict[str, Any] | None, why: str, error: BaseException | None
    ) -> None:
        """Write what a worker made of ``candidate``: the task, or why there is none."""
        if error is not None:
            raise error
        if row is not None:
            self.kept.add(row)
            self.counts["kept"] += 1
            self.counts["new"] += 1
        else:
            self.rejected.add({"task_id": candidate.task_id, "method": candidate.method, "reason": why})
            self.counts["rejected"] += 1
        if self.progress:
            self.progress.done(
                {"task_id": candidate.task_id, "ok": row is not None, "problem": why, "seconds": 0}
            )

    def forget(self, row: dict[str, Any]) -> None:
        """What validating a task that is not kept left behind: its checkout and calibrations in the gym_swe
        cache and its commit's ref in the mirror (otherwise hundreds of each stay after a run)."""
        remove_checkout(row["instance_id"], row["base_commit"])
        forget_calibrations(row["instance_id"])
        self.repo.drop(row["instance_id"])

    def made(self, candidate: Candidate) -> tuple[dict[str, Any] | None, str]:
        """The kept record of ``candidate``, or None and why not."""
        phase = self.progress.phase if self.progress else (lambda task_id, what: None)
        row: dict[str, Any] | None = None
        try:
            phase(candidate.task_id, "running its tests")
            draft = candidate.make()
            row = record(self.repo, draft, self.statement(draft), self.mirror)
            if draft.provenance.get("method") != "history":  # a commit of ours: the mirror keeps it
                self.repo.keep(row["instance_id"], draft.base_commit)
            phase(candidate.task_id, "validating")
            report = validated({**row, "repo_mirror": str(self.repo.mirror)}, self.paths["work"])
            why = verdict(report)
        except Rejected as rejected:
            why = str(rejected)
        except GymSweError as error:
            why = f"{type(error).__name__}: {error}"
        if why is not None:
            if row is not None:
                self.forget(row)
            return None, why
        assert row is not None
        row["validation"] = {
            key: report.get(key) for key in ("integrity", "chance", "fix_passed", "no_fix_passed")
        }
        return row, ""


def candidates_for(
    repo: SourceRepository,
    methods: Iterable[str],
    base: Baseline,
    timeout: float,
    per_function: int = 2,
    seed: int = 0,
    max_commits: int = 500,
    generator: Any = None,
) -> list[Candidate]:
    """Every method's candidates, taken in turn (one of each method, then the next of each), so that a run
    stopped early by ``max_tasks`` holds some of each."""
    from gym_swe.generate import history, mutate, rewrite

    lists: list[list[Candidate]] = []
    for method in methods:
        if method == "history":
            lists.append(
                [
                    Candidate(
                        task_id_of(repo, commit.task_suffix),
                        method,
                        functools.partial(history.draft, repo, commit, timeout),
                    )
                    for commit in history.candidates(repo, max_commits)
                ]
            )
        elif method == "mutate":
            lists.append(
                [
                    Candidate(
                        task_id_of(repo, f"mutate-{mutation.key}"),
                        method,
                        functools.partial(mutate.draft, repo, mutation, base, timeout),
                    )
                    for mutation in mutate.candidates(repo, per_function, seed)
                ]
            )
        elif method == "rewrite":
            lists.append(
                [
                    Candidate(
                        task_id_of(repo, f"rewrite-{target.key}"),
                        method,
                        functools.partial(rewrite.draft, repo, target, base, timeout, generator),
                    )
                    for target in rewrite.candidates(repo, seed)
                ]
            )
    return [candidate for group in itertools.zip_longest(*lists) for candidate in group if candidate]
