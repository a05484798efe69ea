"""Bugs made by program transformations of the repository's functions (mutation operators, as SWE-smith's
procedural bugs and mutation testing make them): a comparison or arithmetic operator changed, ``and`` for
``or``, a constant off by one, a condition negated, a guard clause removed, two arguments swapped. Each edits
the source text at one node, so the fix is that one place as it was. Only functions the tests name are
mutated (a cheap stand-in for coverage); a mutation becomes a task only when some passing test then fails,
which the pipeline checks by running them."""

from __future__ import annotations

import ast
import hashlib
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from gym_swe.generate.drafts import Baseline, Draft, injected
from gym_swe.generate.repository import SourceRepository

OPERATORS = (
    "compare",
    "arithmetic",
    "boolean",
    "off_by_one",
    "negate_condition",
    "remove_guard",
    "swap_arguments",
)
COMPARE_SWAPS = {
    "<": "<=",
    "<=": "<",
    ">": ">=",
    ">=": ">",
    "==": "!=",
    "!=": "==",
    "is not": "is",
    "is": "is not",
    "not in": "in",
    "in": "not in",
}
COMPARE_TOKEN = re.compile(r"not\s+in\b|is\s+not\b|<=|>=|==|!=|<|>|\bin\b|\bis\b")
ARITHMETIC_SWAPS = {
    ast.Add: ("+", "-"),
    ast.Sub: ("-", "+"),
    ast.Mult: ("*", "/"),
    ast.Div: ("/", "*"),
    ast.FloorDiv: ("//", "/"),
}
GUARD_ENDS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


@dataclass(frozen=True)
class Mutation:
    """One edit of one file: the text from ``start`` to ``end`` (character offsets) becomes
    ``replacement``."""

    path: str
    function: str
    operator: str
    line: int
    start: int
    end: int
    original: str
    replacement: str

    @property
    def key(self) -> str:
        """Stable across runs: the file, the place and the new text."""
        text = f"{self.path}\0{self.start}\0{self.end}\0{self.replacement}"
        return hashlib.sha256(text.encode()).hexdigest()[:10]

    def apply(self, source: str) -> str:
        return source[: self.start] + self.replacement + source[self.end :]

    def provenance(self) -> dict[str, object]:
        return {
            "file": self.path,
            "function": self.function,
            "operator": self.operator,
            "line": self.line,
            "original": self.original,
            "mutated": self.replacement,
        }


def is_test_file(path: str) -> bool:
    """A file of the tests (or their configuration), never mutated and the ones a task may hide."""
    name = path.rsplit("/", 1)[-1]
    parts = path.split("/")[:-1]
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or any(part in ("test", "tests", "testing") for part in parts)
    )


def is_library_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    skipped = ("docs/", "doc/", "examples/", "benchmarks/", "scripts/", "tools/")
    return (
        path.endswith(".py")
        and not is_test_file(path)
        and name not in ("setup.py", "noxfile.py", "conftest.py", "__main__.py")
        and not path.startswith(skipped)
    )


class Offsets:
    """AST positions (line, column in UTF-8 bytes) as character offsets into the text."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def at(self, line: int, column: int) -> int:
        text = self.lines[line - 1] if line - 1 < len(self.lines) else ""
        return self.starts[line - 1] + len(text.encode()[:column].decode(errors="replace"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        where: Any = node  # expressions and statements have positions; ast.AST does not say so
        return self.at(where.lineno, where.col_offset), self.at(where.end_lineno, where.end_col_offset)


def mutations(path: str, source: str, tested_names: set[str]) -> Iterator[Mutation]:
    """Every mutation of the functions in ``source`` (the file at ``path``) that still compiles, where the
    function's name, its class's or its module's is in ``tested_names`` (what the tests mention)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    offsets = Offsets(source)
    seen: set[tuple[int, int, str]] = set()
    module = {part.removesuffix(".py") for part in path.split("/")} - {"__init__", "src"}
    for qualname, function in functions_of(tree):
        if not ({*qualname.split("."), *module} & tested_names):
            continue
        for node in ast.walk(function):
            for operator, start, end, replacement in _edits(node, source, offsets):
                if (start, end, replacement) in seen or source[start:end] == replacement:
                    continue
                seen.add((start, end, replacement))
                mutation = Mutation(
                    path,
                    qualname,
                    operator,
                    source.count("\n", 0, start) + 1,
                    start,
                    end,
                    source[start:end],
                    replacement,
                )
                try:
                    compile(mutation.apply(source), path, "exec")
                except (SyntaxError, ValueError):
                    continue
                yield mutation


def functions_of(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.AST]]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node
        elif isinstance(node, ast.ClassDef):
            yield from functions_of(node, prefix + node.name + ".")


def _edits(node: ast.AST, source: str, offsets: Offsets) -> Iterator[tuple[str, int, int, str]]:
    """(operator, start, end, replacement) for each mutation ``node`` admits."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        yield from _token_swap(
            "compare",
            node.left,
            node.comparators[0],
            source,
            offsets,
            COMPARE_TOKEN,
            lambda token: COMPARE_SWAPS[" ".join(token.split())],
        )
    elif isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC_SWAPS and not _is_text(node):
        old, new = ARITHMETIC_SWAPS[type(node.op)]
        pattern = re.compile(re.escape(old) + ("(?!/)" if old == "/" else ""))
        yield from _token_swap("arithmetic", node.left, node.right, source, offsets, pattern, lambda _: new)
    elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
        new = "or" if isinstance(node.op, ast.And) else "and"
        yield from _token_swap(
            "boolean",
            node.values[0],
            node.values[1],
            source,
            offsets,
            re.compile(r"\b(and|or)\b"),
            lambda _: new,
        )
    elif isinstance(node, ast.Constant) and type(node.value) is int and 0 <= node.value < 1000:
        start, end = offsets.span(node)
        if source[start:end].isdigit():
            yield "off_by_one", start, end, str(node.value + 1)
            if node.value > 0:
                yield "off_by_one", start, end, str(node.value - 1)
    if isinstance(node, (ast.If, ast.While)) and not isinstance(node.test, ast.UnaryOp):
        start, end = offsets.span(node.test)
        if "\n" not in source[start:end]:
            yield "negate_condition", start, end, f"not ({source[start:end]})"
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.For, ast.While, ast.If, ast.With)):
        yield from _guards(node, source, offsets)
    if (
        isinstance(node, ast.Call)
        and len(node.args) >= 2
        and not any(isinstance(arg, ast.Starred) for arg in node.args[:2])
    ):
        (a_start, a_end), (b_start, b_end) = offsets.span(node.args[0]), offsets.span(node.args[1])
        first, second = source[a_start:a_end], source[b_start:b_end]
        if first != second:
            yield "swap_arguments", a_start, b_end, second + source[a_end:b_start] + first


def _token_swap(
    operator: str,
    left: ast.AST,
    right: ast.AST,
    source: str,
    offsets: Offsets,
    pattern: re.Pattern[str],
    new_token: Callable[[str], str],
) -> Iterator[tuple[str, int, int, str]]:
    """Replace the operator token between ``left`` and ``right`` (the text between them holds it, with
    spaces, brackets or a line break)."""
    gap_start, gap_end = offsets.span(left)[1], offsets.span(right)[0]
    gap = source[gap_start:gap_end]
    found = pattern.search(gap.split("#", 1)[0])
    if found:
        start, end = gap_start + found.start(), gap_start + found.end()
        yield operator, start, end, new_token(found.group(0))


def _is_text(node: ast.BinOp) -> bool:
    """String building (``"a" + b``, ``"%s" % x``): swapping its operator gives a TypeError, not a bug."""
    return any(
        isinstance(side, (ast.JoinedStr, ast.List, ast.Tuple))
        or (isinstance(side, ast.Constant) and isinstance(side.value, (str, bytes)))
        for side in (node.left, node.right)
    )


def _guards(parent: ast.AST, source: str, offsets: Offsets) -> Iterator[tuple[str, int, int, str]]:
    """A guard clause (``if ...: return/raise/continue/break`` with no else) removed, whole lines, where
    the block keeps another statement."""
    body = getattr(parent, "body", [])
    if len(body) < 2:
        return
    for statement in body:
        if (
            isinstance(statement, ast.If)
            and not statement.orelse
            and len(statement.body) == 1
            and isinstance(statement.body[0], GUARD_ENDS)
        ):
            start = offsets.starts[statement.lineno - 1]
            end = offsets.starts[min(statement.end_lineno or statement.lineno, len(offsets.lines))]
            if source[start:end].strip().startswith("if "):
                yield "remove_guard", start, end, ""


def tested_names(test_sources: dict[str, str]) -> set[str]:
    """Every identifier the test files use: the functions and classes a test may exercise by name."""
    names: set[str] = set()
    for text in test_sources.values():
        names.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    return names


def candidates(repo: SourceRepository, per_function: int = 2, seed: int = 0) -> list[Mutation]:
    """Mutations of the repository at its commit: at most ``per_function`` of each function (so that tasks
    spread over the code), in an order ``seed`` fixes."""
    files = repo.files()
    tests = {path: repo.read(path) for path in files if path.endswith(".py") and is_test_file(path)}
    names = tested_names(tests)
    rng = random.Random(seed)
    chosen: list[Mutation] = []
    for path in files:
        if not is_library_file(path):
            continue
        by_function: dict[str, list[Mutation]] = {}
        for mutation in mutations(path, repo.read(path), names):
            by_function.setdefault(mutation.function, []).append(mutation)
        for found in by_function.values():
            chosen += rng.sample(found, min(per_function, len(found)))
    rng.shuffle(chosen)
    return chosen


def package_of(path: str) -> str:
    parts = path.split("/")
    parts = parts[1:] if parts[0] == "src" and len(parts) > 1 else parts
    return parts[0].removesuffix(".py")


def draft(repo: SourceRepository, mutation: Mutation, base: Baseline, timeout: float) -> Draft:
    """The task of ``mutation``, or `Rejected` when no passing test fails with it."""
    mutated = mutation.apply(repo.read(mutation.path))
    return injected(
        repo,
        f"mutate-{mutation.key}",
        {mutation.path: mutated},
        base,
        timeout,
        f"Wrong results from `{package_of(mutation.path)}`",
        {"method": "mutate", **mutation.provenance()},
    )
