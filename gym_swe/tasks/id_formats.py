"""Which runner a task's test ids are written for, and whether they are in its format.

A record's FAIL_TO_PASS / PASS_TO_PASS ids are in the format of the runner its dataset ran them with:
pytest node ids, Django's ``test_x (module.Class)`` (or a docstring's first line), sympy's bare function
names. That format is the task's own (it is read where tasks load, to refuse a record whose ids no runner
of its reads); how those tests are selected, run and read is the grader's, one module per runner under
`gym_swe.grading.runners`, named as here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gym_swe.tasks.test_ids import unsupported as unsupported_pytest_ids

BY_REPOSITORY = {"django/django": "django", "sympy/sympy": "sympy"}
"""A SWE-bench repository (``owner/name``) -> the runner its tests take; pytest runs every other."""


def _django(ids: Sequence[str]) -> list[str]:
    """Django's ids are free text (a docstring's first line is one): only blank or multi-line ones are not."""
    return [test_id for test_id in ids if test_id != test_id.strip() or not test_id or "\n" in test_id]


def is_sympy_test_name(name: str) -> bool:
    """Whether ``name`` is a test function's name as sympy's runner collects it (``test_`` + identifier)."""
    return name.startswith("test_") and name.isidentifier()


def _sympy(ids: Sequence[str]) -> list[str]:
    return [test_id for test_id in ids if not is_sympy_test_name(test_id)]


FORMATS: dict[str, Callable[[Sequence[str]], list[str]]] = {
    "pytest": unsupported_pytest_ids,
    "django": _django,
    "sympy": _sympy,
}
"""Runner name -> the ids of a list that are not in its format (cheap, textual)."""


def runner_name(repo: str, named: str = "") -> str:
    """The runner a task of ``repo`` takes (``named``: the record's own choice, when it makes one); a
    ValueError names the runners there are."""
    if named and named not in FORMATS:
        raise ValueError(f"unknown test runner {named!r}; choose one of {', '.join(FORMATS)}")
    return named or BY_REPOSITORY.get(repo.lower(), "pytest")


def unreadable(runner: str, ids: Sequence[str]) -> list[str]:
    """The ``ids`` that are not in ``runner``'s format."""
    return FORMATS[runner](ids)
