"""sympy's own test runner: ``bin/test``, which runs ``sympy.testing.runtests`` (``sympy.utilities.runtests``
before sympy 1.6).

Used for sympy/sympy. SWE-bench runs ``PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C
--verbose FILES`` (FILES: the test patch's files) with Python 3.9 for every sympy version it holds (1.0-1.13);
this runner runs the same through its shim, ``sympy_driver.py``, which hooks the runner's reporter.

Ids: sympy's runner names a test by its function's name alone (``test_issue_12345``), and SWE-bench's log
parser keys outcomes that way. `node_ids` finds each name among the test files' module-level functions
(a ``def`` at the top level, or under a top-level ``if``/``try``/``with``: sympy's runner collects the
module's globals) and gives ``FILE::name``. A name defined in two of the files maps to the first of them in
the order of ``sources`` (the order of `test_files`): a bare id cannot tell them apart. (SWE-bench's log
parser keeps the status of the one sympy runs last, its files in path order; 5 of SWE-bench Lite's and
Verified's sympy tasks have such ids.)

Outcomes: passed exactly where SWE-bench's parser reads PASSED (sympy's verbose ``ok``); an ``@XFAIL`` test
that fails is skipped (``f``), one that passes failed (``X``); ``skip()``, ``@SKIP`` and ``@slow`` are
skipped; an exception other than an assertion's is an error; a test file that does not import, or whose
module code raises, is one error line for the file.

What it cannot see: doctests (not run, as SWE-bench does not run them); a test file sympy's runner does
not select (one not named ``test_*.py`` under ``sympy/``); the cases of a generator test (each a
``<lambda>``, named ``FILE::<lambda>``, ``FILE::<lambda>[2]``...), which no dataset id names.
"""

from __future__ import annotations

import ast
import shlex
from collections.abc import Iterator, Mapping, Sequence
from fnmatch import fnmatch
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from gym_swe.grading.diffs import split_diff
from gym_swe.grading.runners.base import TestRunner
from gym_swe.tasks.id_formats import is_sympy_test_name, unreadable

if TYPE_CHECKING:
    from gym_swe.grading.environment import Environment

BIN_TEST_OPTIONS = ("-C", "--verbose")
"""bin/test's options as SWE-bench passes them: no cache (``-C``), a line per test (``--verbose``)."""
WARNINGS = "ignore::UserWarning,ignore::SyntaxWarning"
"""SWE-bench's PYTHONWARNINGS for sympy."""


class SympyRunner(TestRunner):
    """sympy's ``bin/test``, hooked by ``sympy_driver.py``."""

    name = "sympy"
    driver = "sympy_driver.py"
    # bin/test is the runner the shim runs; sympy/utilities/pytest.py (before 1.6: sympy/testing/ after,
    # protected as a test directory) holds raises, XFAIL, SKIP and slow. runtests.py is protected by name.
    protected = ("bin/test", "sympy/utilities/pytest.py")

    def unsupported(self, ids: Sequence[str]) -> list[str]:
        """Ids that are not a test function's name as sympy's runner collects it (``test_`` + identifier)."""
        return unreadable(self.name, ids)

    def test_files(self, ids: Sequence[str], test_patch: str) -> list[str]:
        """The test patch's files that sympy's runner selects (``test_*.py`` under ``sympy/``), in the
        patch's order; the ids (bare names) say nothing of files."""
        files: list[str] = []
        for part in split_diff(test_patch):
            path = part.new_path
            if path is not None and is_test_file(path) and path not in files:
                files.append(path)
        return files

    def node_ids(self, ids: Sequence[str], sources: Mapping[str, str]) -> dict[str, str]:
        """Each id -> ``FILE::id`` for the file of ``sources`` that defines it at module level; where two
        do, the last by path, the one sympy's runner runs last (it runs its files in path order), whose
        outcome SWE-bench's log parser kept (5 instances, 49 ids). A file that does not parse defines
        nothing (its tests cannot run)."""
        defined: dict[str, str] = {}
        for file, text in sorted(sources.items()):
            try:
                tree = ast.parse(text, filename=file)
            except (SyntaxError, ValueError):
                continue
            for function in module_functions(tree.body):
                defined[function] = f"{file}::{function}"
        return {test_id: defined[test_id] for test_id in ids if test_id in defined}

    def command(
        self,
        workdir: str,
        driver: str,
        files: Sequence[str],
        environment: Environment | None = None,
        options: Sequence[str] = (),
    ) -> str:
        arguments = " ".join(shlex.quote(argument) for argument in (*BIN_TEST_OPTIONS, *files))
        quoted = shlex.quote(workdir)
        return f"cd {quoted} && python {shlex.quote(driver)} run {quoted} -- {arguments}"

    def environment(self) -> dict[str, str]:
        return {"PYTHONWARNINGS": WARNINGS}


def is_test_file(path: str) -> bool:
    """Whether sympy's runner selects ``path`` (relative, ``/``-separated): ``test_*.py`` under ``sympy/``."""
    pure = PurePosixPath(path)
    return len(pure.parts) > 1 and pure.parts[0] == "sympy" and fnmatch(pure.name, "test_*.py")


def module_functions(body: Sequence[ast.stmt]) -> Iterator[str]:
    """The names of the test functions a module's code defines as globals, in source order: ``def``s at the
    top level and in the blocks of top-level ``if``/``try``/``with``/``for``/``while`` statements."""
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if is_sympy_test_name(statement.name):
                yield statement.name
        elif isinstance(statement, (ast.If, ast.For, ast.While, ast.With, ast.AsyncFor, ast.AsyncWith)):
            yield from module_functions(statement.body)
            yield from module_functions(getattr(statement, "orelse", []))
        elif isinstance(statement, ast.Try) or type(statement).__name__ == "TryStar":
            yield from module_functions(statement.body)  # type: ignore[attr-defined]
            for handler in statement.handlers:  # type: ignore[attr-defined]
                yield from module_functions(handler.body)
            yield from module_functions(statement.orelse)  # type: ignore[attr-defined]
            yield from module_functions(statement.finalbody)  # type: ignore[attr-defined]
