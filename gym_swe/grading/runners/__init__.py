"""Test runners, one module each (`base` says what a runner is), and which one a task's tests take.

A record may name its runner (``test_runner``: one of `RUNNERS`); otherwise its repository decides
(`BY_REPOSITORY`: Django's and sympy's own runners, as SWE-bench's harness runs them), and pytest runs
everything else. Which runner a task takes, and the format of its ids, are the task's
(`gym_swe.tasks.id_formats`: read where tasks load); a new runner is a module here and its id format there.
"""

from __future__ import annotations

import importlib

from gym_swe.grading.runners.base import TestRunner
from gym_swe.tasks.id_formats import BY_REPOSITORY, runner_name  # noqa: F401 (the runner a task takes)

RUNNERS = {
    "pytest": "gym_swe.grading.runners.pytest:PytestRunner",
    "django": "gym_swe.grading.runners.django:DjangoRunner",
    "sympy": "gym_swe.grading.runners.sympy:SympyRunner",
}
"""Runner name -> ``module:class``, imported when a task first needs it."""


def runner_named(name: str) -> TestRunner:
    """The runner ``name`` (one of `RUNNERS`)."""
    if name not in RUNNERS:
        raise ValueError(f"unknown test runner {name!r}; choose one of {', '.join(RUNNERS)}")
    module, _, cls = RUNNERS[name].partition(":")
    runner: TestRunner = getattr(importlib.import_module(module), cls)()
    return runner
