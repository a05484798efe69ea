"""Test runners, one module each (`base` says what a runner is), and which one a task's tests take.

A record may name its runner (``test_runner``: one of `RUNNERS`); otherwise its repository decides
(`BY_REPOSITORY`: Django's and sympy's own runners, as SWE-bench's harness runs them), and pytest runs
everything else.
"""

from __future__ import annotations

import importlib

from gym_swe.grading.runners.base import TestRunner

RUNNERS = {
    "pytest": "gym_swe.grading.runners.pytest:PytestRunner",
    "django": "gym_swe.grading.runners.django:DjangoRunner",
    "sympy": "gym_swe.grading.runners.sympy:SympyRunner",
}
"""Runner name -> ``module:class``, imported when a task first needs it."""
BY_REPOSITORY = {"django/django": "django", "sympy/sympy": "sympy"}
"""A SWE-bench repository (``owner/name``) -> the runner its tests take."""


def runner_named(name: str) -> TestRunner:
    """The runner ``name`` (one of `RUNNERS`)."""
    if name not in RUNNERS:
        raise ValueError(f"unknown test runner {name!r}; choose one of {', '.join(RUNNERS)}")
    module, _, cls = RUNNERS[name].partition(":")
    runner: TestRunner = getattr(importlib.import_module(module), cls)()
    return runner


def runner_name(repo: str, named: str = "") -> str:
    """The runner a task of ``repo`` takes (``named``: the record's own choice, when it makes one); a
    ValueError names the runners there are."""
    if named and named not in RUNNERS:
        raise ValueError(f"unknown test runner {named!r}; choose one of {', '.join(RUNNERS)}")
    return named or BY_REPOSITORY.get(repo.lower(), "pytest")
