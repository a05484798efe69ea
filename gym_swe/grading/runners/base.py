"""The test-runner seam: how a repository's own tests are selected, run and read, one kind of runner a module.

A SWE-bench record names its tests in its runner's words: pytest node ids (``tests/test_x.py::test_y[1]``),
Django's ``test_name (module.Class)`` (or the first line of the test's docstring), sympy's bare function
names. A `TestRunner` turns those ids into what the grader works with everywhere else, a *node id* of the
form ``FILE::Class::name`` (pytest's own form, which the sealed checks and the decoys already address), runs
the tests with the repository's own runner, and has a small shim of gym_swe's (the runner's ``driver``, a
script run inside the grading sandbox with the task's python, standard library only) stream one ``test`` line
per test as it ends, the sealed checks' records and an ``end`` line to the records descriptor, in the line
format `gym_swe.grading.outcome_stream` reads. Outcomes never come from stdout, and a test that did not run
fails.

Adding a runner: a module here with a `TestRunner` subclass and its driver script beside it, named in
`gym_swe.grading.runners.RUNNERS`; nothing else changes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from gym_swe.grading.environment import Environment


class TestRunner(ABC):
    """One repository test runner (pytest, Django's ``runtests.py``, sympy's ``bin/test`` ...)."""

    __test__ = False  # not a pytest test class, whatever its name

    name: ClassVar[str]
    """What records and the CLI call it (``pytest``, ``django``, ``sympy``)."""
    driver: ClassVar[str]
    """The file name, in this package's directory, of the shim the grading sandbox runs ("": the pytest
    driver itself, which the grader writes for every runner as ``driver.py``, so that a shim can import its
    stream and its sealed checks' recorder from beside it)."""
    protected: ClassVar[tuple[str, ...]] = ()
    """Files of the runner the repository holds (its script, its test helpers) that no fix needs: the
    agent's changes to them are dropped, as to the tests themselves (`gym_swe.grading.diffs`)."""
    needs_pytest: ClassVar[bool] = False
    """The environment must hold pytest (the probe says why not where it does not)."""
    junit: ClassVar[bool] = False
    """The run also writes pytest's JUnit report, which the grader cross-checks against the stream."""

    def driver_source(self) -> bytes:
        return Path(__file__).with_name(self.driver).read_bytes()

    @abstractmethod
    def unsupported(self, ids: Sequence[str]) -> list[str]:
        """The ``ids`` that are not in this runner's format (cheap, textual: used where tasks load)."""

    @abstractmethod
    def test_files(self, ids: Sequence[str], test_patch: str) -> list[str]:
        """The repository's files (relative paths) that hold the tests ``ids`` name, as far as the ids and
        the test patch tell, before anything runs: the files the run selects, seals and plants decoys in."""

    @abstractmethod
    def node_ids(self, ids: Sequence[str], sources: Mapping[str, str]) -> dict[str, str]:
        """Each id of ``ids`` that names a test found in ``sources`` (each test file's text, the test patch
        applied) -> its node id ``FILE::Class::name`` (``FILE::name`` for a function); an id left out is one
        no test of those files answers to (it fails)."""

    @abstractmethod
    def command(
        self,
        workdir: str,
        driver: str,
        files: Sequence[str],
        environment: Environment,
        options: Sequence[str],
    ) -> str:
        """The shell command that runs the tests of ``files`` (all of them, decoys included) in ``workdir``
        through the shim at ``driver`` with the task's ``python``, streaming to the records descriptor that
        ``GYM_SWE_RECORDS_FD`` names; ``environment``: what the probe found in the pristine sandbox;
        ``options``: the grader's options for the runner (pytest's: its JUnit report) and the user's."""

    def environment(self) -> dict[str, str]:
        """Variables the run needs beside the grader's own."""
        return {}
