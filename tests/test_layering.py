"""The layering is one-way: every import in gym_swe/ goes down (or stays inside its own package).

Read with `ast`, so imports inside functions and under ``if TYPE_CHECKING:`` count as much as those at the
top of a module. Each top-level module and package of gym_swe has its place in `LAYERS`; a new one fails
here until it is given one. Imports by string (the envs' entry points, the sandbox and generator name maps)
are not read: they name their targets at run time, from tables that list them.

The layers, lowest first, as DESIGN.md draws them (sandbox <- tools <- tasks/grading <- envs <- rollout <-
integrations, cli, trainers) with the places that drawing leaves open decided:

- ``tasks`` sits below ``grading``: a grader judges a task, so it reads task records (`SWETask`,
  `FunctionTask`) and their test ids (`gym_swe.tasks.test_ids`); a task never knows how it is graded.
- ``errors`` is the bottom: every layer raises its exceptions, and it imports nothing of gym_swe.
- ``registration`` names the envs by string and counts the tasks of each source: beside ``envs``.
- ``gym_swe`` itself (its ``__init__``) re-exports the errors and registers the envs, so it sits just above
  ``registration``: ``import gym_swe`` ("registers the envs") is fine from rollout up, and a lower layer takes
  its errors from ``gym_swe.errors``.
- ``validate`` (``gym-swe validate``) grades tasks through the envs: beside ``rollout``.
- ``generate`` (``gym-swe tasks generate``) makes tasks and validates them as ``validate`` does, with a
  ``rollout`` generator where a model writes: above both.
- ``serve`` (envs as a service) sits above ``rollout``, whose episode-env contract its client implements, and
  below ``integrations``, which may drive remote envs; ``cli`` is the top of the package, as it runs all of
  them. ``trainers/``, ``tests/``, ``bench/``, ``examples/`` and ``scripts/`` are above the package: nothing
  in gym_swe imports them.

This agrees with the project's standing check (a grep for top-level ``from gym_swe.<upper>`` lines, which
lets tasks and grading import each other) and is stricter: it reads every import, and tasks may not import
grading.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "gym_swe"
FACADE = "gym_swe"
"""The name `LAYERS` gives the package's own ``__init__``."""

LAYERS: list[tuple[str, ...]] = [
    ("errors",),
    ("sandbox",),
    ("tools",),
    ("tasks",),
    ("grading",),
    ("envs", "registration"),
    (FACADE,),
    ("rollout", "validate"),
    ("generate",),
    ("serve",),
    ("integrations",),
    ("cli",),
]
"""Lowest first. A module may import from a lower layer, and from its own top-level module or package;
names that share a layer are side by side and import neither each other."""

OUTSIDE = frozenset({"trainers", "tests", "bench", "examples", "scripts"})
"""The repository's other top-level packages: all of them sit above gym_swe."""

RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def unit_of(dotted: str) -> str | None:
    """The `LAYERS` name of a module of gym_swe (``gym_swe.grading.test_ids`` -> ``grading``), ``"gym_swe"``
    for the package itself, the top-level name for OUTSIDE packages, None for anything else."""
    parts = dotted.split(".")
    if parts[0] in OUTSIDE:
        return parts[0]
    if parts[0] != "gym_swe":
        return None
    return parts[1] if len(parts) > 1 else FACADE


def imported(tree: ast.Module, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of everything ``module``'s source imports, wherever the import stands.
    ``from gym_swe import x`` gives ``gym_swe.x`` where x is a module or package of gym_swe, else
    ``gym_swe`` (a name of the package's ``__init__``)."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            if source == "gym_swe":
                for alias in node.names:
                    child = PACKAGE / alias.name
                    is_module = child.is_dir() or child.with_suffix(".py").is_file()
                    yield node.lineno, f"gym_swe.{alias.name}" if is_module else "gym_swe"
            else:
                yield node.lineno, source


def violations(module: str, source: str, is_package: bool = False) -> list[str]:
    """Each import of ``module`` (its ``source``) that goes up or sideways, as a sentence naming it."""
    unit = unit_of(module)
    assert unit is not None and unit in RANK, (
        f"{module} is in no layer: give {unit!r} its place in tests/test_layering.py's LAYERS"
    )
    found = []
    for line, target in imported(ast.parse(source), module, is_package):
        other = unit_of(target)
        if other is None or other == unit:
            continue
        where = f"{module.replace('.', '/')}{'/__init__' if is_package else ''}.py:{line} imports {target}"
        if other in OUTSIDE:
            found.append(f"{where}: {other}/ is outside the package, above all of gym_swe")
        elif other not in RANK:
            found.append(f"{where}: {other!r} is in no layer of LAYERS")
        elif RANK[other] > RANK[unit]:
            found.append(f"{where}: {unit} (layer {RANK[unit]}) may not import {other} (layer {RANK[other]})")
        elif RANK[other] == RANK[unit]:
            found.append(
                f"{where}: {unit} and {other} are side by side (layer {RANK[unit]}): neither imports the other"
            )
    return found


def package_modules() -> list[tuple[str, Path, bool]]:
    """(dotted name, path, is a package's __init__) of every module of gym_swe."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(REPO_ROOT).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        found.append((".".join(parts[:-1] if is_package else parts), path, is_package))
    return found


def test_every_import_in_gym_swe_goes_down() -> None:
    modules = package_modules()
    assert len(modules) > 50  # the walk found the package
    found = [
        problem
        for module, path, is_package in modules
        for problem in violations(module, path.read_text(encoding="utf-8"), is_package)
    ]
    assert not found, "Imports against the layering (see LAYERS in tests/test_layering.py):\n" + "\n".join(
        found
    )


def test_every_top_level_module_has_a_layer() -> None:
    units = {unit_of(module) for module, _, _ in package_modules()}
    assert {"errors", "sandbox", "tools", "tasks", "grading", "envs", "rollout", FACADE} <= units
    assert sorted(str(unit) for unit in units - set(RANK)) == [], "give these their place in LAYERS"


@pytest.mark.parametrize(
    ("module", "source", "is_package", "expected"),
    [
        # upward, at the top of a module
        ("gym_swe.sandbox.local", "from gym_swe.tools.bash import Bash\n", False,
         "gym_swe/sandbox/local.py:1 imports gym_swe.tools.bash: sandbox (layer 1) may not import tools"),
        # tasks under grading: the import this test was written for
        ("gym_swe.tasks.swe", "from gym_swe.grading.test_ids import is_log_fragment\n", False,
         "tasks (layer 3) may not import grading (layer 4)"),
        # inside a function, and relative
        ("gym_swe.envs.base", "def f():\n    from ..rollout import collector\n", False,
         "gym_swe/envs/base.py:2 imports gym_swe.rollout: envs (layer 5) may not import rollout"),
        # a package's __init__, relative to itself
        ("gym_swe.tools", "from .parsing import parse\nfrom ..envs import base\n", True,
         "gym_swe/tools/__init__.py:2 imports gym_swe.envs: tools (layer 2) may not import envs"),
        # sideways
        ("gym_swe.registration", "import gym_swe.envs.codedebug\n", False,
         "registration and envs are side by side"),
        # the package's names, from below it
        ("gym_swe.tools.bash", "from gym_swe import ConfigError\n", False,
         "tools (layer 2) may not import gym_swe (layer 6)"),
        # outside the package
        ("gym_swe.rollout.tiny", "from trainers.grpo import main\n", False,
         "trainers/ is outside the package"),
        # under TYPE_CHECKING
        ("gym_swe.grading.base", "if TYPE_CHECKING:\n    from gym_swe.envs.swegym import SWEGymEnv\n", False,
         "grading (layer 4) may not import envs"),
    ],
)  # fmt: skip
def test_the_check_names_each_import_against_the_layering(
    module: str, source: str, is_package: bool, expected: str
) -> None:
    found = violations(module, source, is_package)
    assert len(found) == 1 and expected in found[0], found


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("gym_swe.grading.repository", "from gym_swe.tasks.swe import SWETask\n"),
        ("gym_swe.rollout.run_eval", "import gym_swe\n"),
        ("gym_swe.tools.bash", "from gym_swe import errors\nfrom gym_swe.errors import ToolError\n"),
        ("gym_swe.cli", "from gym_swe.integrations.trl import x\nimport json\n"),
        ("gym_swe.envs.swegym", "from . import base\nfrom .rewards import reward\n"),
    ],
)
def test_the_check_lets_imports_that_go_down_pass(module: str, source: str) -> None:
    assert violations(module, source) == []


def test_a_module_in_no_layer_is_named() -> None:
    with pytest.raises(AssertionError, match="give 'newthing' its place"):
        violations("gym_swe.newthing.mod", "import json\n")
