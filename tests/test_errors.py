"""gym_swe.errors: install hints have one wording (`missing_dependency`), and each names an extra that
pyproject.toml declares and that really installs the missing module."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from gym_swe.errors import GymSweError, MissingDependencyError, missing_dependency
from tests.conftest import REPO_ROOT

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

CODE_DIRS = ("gym_swe", "trainers", "bench", "examples")
TEXT = ("README.md", "docs", *CODE_DIRS)


def extras() -> dict[str, list[str]]:
    with open(REPO_ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)["project"]["optional-dependencies"]


def _normal(name: str) -> str:
    return re.sub(r"[-_.]", "", name).lower()


def distributions(extra: str) -> set[str]:
    """The normalised names of the distributions ``pip install "gym-swe[extra]"`` asks for, through the
    extras it names in turn (``"gym-swe[proxy]"``)."""
    names: set[str] = set()
    for requirement in extras()[extra]:
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?", requirement)
        assert match is not None, requirement
        if _normal(match[1]) == "gymswe":
            for inner in (match[2] or "").split(","):
                names |= distributions(inner.strip())
        else:
            names.add(_normal(match[1]))
    return names


def python_files() -> Iterator[Path]:
    for folder in CODE_DIRS:
        yield from sorted((REPO_ROOT / folder).rglob("*.py"))


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the docstring nodes of a module and of its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def calls_and_hints() -> tuple[list[tuple[str, ast.Call]], list[tuple[str, str]]]:
    """Every call of missing_dependency, and every string (not a docstring) that writes an install hint of
    its own, by file relative to the repository."""
    calls, hints = [], []
    for path in python_files():
        where = str(path.relative_to(REPO_ROOT))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name == "missing_dependency":
                    calls.append((where, node))
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and "gym-swe[" in node.value
                and id(node) not in docstrings
                and where != "gym_swe/errors.py"
            ):
                hints.append((where, node.value))
    return calls, hints


def test_missing_dependency_says_what_needs_what_and_how_to_install_it() -> None:
    error = missing_dependency("ray", "ray", feature="The Ray env pool")
    assert isinstance(error, MissingDependencyError)
    assert isinstance(error, ImportError) and isinstance(error, GymSweError)
    assert str(error) == (
        "The Ray env pool needs the Python package 'ray', which is not installed. "
        'Install it with: pip install "gym-swe[ray]"'
    )
    assert str(missing_dependency("docker", "docker")).startswith("This feature needs the Python package")


def test_every_missing_dependency_names_an_extra_that_installs_the_module() -> None:
    calls, _ = calls_and_hints()
    assert len(calls) >= 8, calls  # the walk found them (docker, datasets, transformers, vllm, trl, ...)
    declared = extras()
    problems = []
    for where, call in calls:
        arguments = dict(zip(("module", "extra", "feature"), call.args))
        arguments.update({keyword.arg: keyword.value for keyword in call.keywords if keyword.arg})
        module, extra = arguments.get("module"), arguments.get("extra")
        if not (isinstance(module, ast.Constant) and isinstance(extra, ast.Constant)):
            problems.append(f"{where}:{call.lineno}: give the module and the extra as literal strings")
        elif extra.value not in declared:
            problems.append(f"{where}:{call.lineno}: extra {extra.value!r} is not in pyproject.toml's extras")
        elif _normal(module.value.split(".")[0]) not in distributions(extra.value):
            problems.append(
                f"{where}:{call.lineno}: gym-swe[{extra.value}] does not install {module.value!r}"
            )
    assert not problems, "\n".join(problems)


def test_install_hints_are_written_by_missing_dependency_only() -> None:
    _, hints = calls_and_hints()
    written = sorted(set(hints))
    assert not written, (
        "raise missing_dependency(module, extra, feature=...) instead of writing:\n"
        + "\n".join(f"{where}: {text!r}" for where, text in written)
    )


def test_every_extra_the_text_names_is_declared() -> None:
    declared = set(extras())
    named: dict[str, set[str]] = {}
    for entry in TEXT:
        path = REPO_ROOT / entry
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix in (".py", ".md"))
        for file in files:
            for found in re.findall(r"gym-swe\[([^\]{}]*)\]", file.read_text(encoding="utf-8")):
                for extra in found.split(","):
                    named.setdefault(extra.strip(), set()).add(str(file.relative_to(REPO_ROOT)))
    assert "ray" in named  # the walk read the README and the code
    unknown = {extra: sorted(files) for extra, files in named.items() if extra not in declared}
    assert not unknown, f"extras pyproject.toml does not declare: {unknown}"
