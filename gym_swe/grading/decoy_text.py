"""The text of decoys (`gym_swe.grading.decoys`): which checks of a test a decoy can change (`checks`), how a
check is contradicted where no literal of it can vary (`negation`, `raises`), and the names of a group's
members (fresh ones drawn from the words of the file's test names, where renaming is safe)."""

from __future__ import annotations

import ast
import keyword
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from gym_swe.grading import decoy_values, test_source

RANK = {"literal": 0, "input": 0, "negation": 1, "raises": 2}
"""The kinds of group, the exchangeable ones first."""

# What a decoy of a ``raises`` block expects instead: builtin exceptions that projects do not derive theirs
# from (a decoy must fail where its original passes, so it must not catch what the original expects).
UNRELATED_EXCEPTIONS = (
    "ZeroDivisionError", "UnboundLocalError", "RecursionError", "FloatingPointError", "UnicodeTranslateError",
    "BlockingIOError", "ChildProcessError",
)  # fmt: skip
# In a test's source, signs that its behaviour may depend on its own name (it is then not renamed).
NAME_DEPENDENT = re.compile(
    r"request\s*\.\s*(node|function|cls|module)|_testMethodName|\bself\s*\.\s*id\s*\(|pytester|testdir|"
    r"__name__|__qualname__|_getframe|\binspect\b|snapshot|regression"
)
WORD = re.compile(r"[A-Za-z][a-z]*|\d+")
FALLBACK_WORDS = ("value", "result", "case", "input", "output", "check", "basic", "simple", "default")


# -- finding the test and its checks -------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    statement: ast.stmt
    kind: str
    new: bool
    literal: ast.expr | None = None
    """For "literal": the node whose value changes."""


def checks(
    function: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str], added: set[str]
) -> list[Check]:
    """The checks a decoy of ``function`` can contradict, best first: those in the tail of its body (only
    checks come after them), and its last statement, which a decoy can always expect to raise. A sealed
    check (`gym_swe.grading.seals`: decided outside the run, it never fails in it) is a check of the tail
    but no decoy's: the last statement a decoy expects to raise is then the last one before the sealed
    checks."""
    body = [statement for statement in function.body if not sealed(statement)] or function.body[:0]
    if any(
        isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)) for node in test_source.own_nodes(function)
    ):
        return []  # the test can pass without reaching its checks, or is not a plain test
    if not body:
        return []  # every statement is a sealed check: nothing a decoy could contradict in the run
    tail: list[ast.stmt] = []
    for statement in reversed(function.body):
        if test_source.is_check_like(statement) or test_source.is_inert(statement) or sealed(statement):
            tail.append(statement)
        else:
            break
    tail.reverse()
    found: list[Check] = []
    for statement in tail:
        if test_source.is_inert(statement) or sealed(statement) or not test_source.is_check(statement):
            continue
        new = is_new(statement, lines, added)
        literal = decoy_values.literal_of(statement)
        if literal is not None:
            found.append(Check(statement, "literal", new, literal))
        found.append(Check(statement, "negation" if isinstance(statement, ast.Assert) else "raises", new))
    last = body[-1]
    if not any(check.statement is last for check in found) and not isinstance(
        last, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    ):
        # The test passes only if its last statement completes: a decoy expects it to raise (the statement
        # still runs in full, so nothing it cleans up is skipped).
        found.append(Check(last, "raises", is_new(last, lines, added)))
    return sorted(found, key=lambda check: (RANK[check.kind], not check.new))


def sealed(statement: ast.stmt) -> bool:
    """A check the grader sealed: ``_gym_seal(...)``, or a ``with _gym_raises(...)`` block."""
    if isinstance(statement, ast.Expr):
        return test_source.callee(statement.value) == "_gym_seal"
    if isinstance(statement, ast.With) and statement.items:
        return test_source.callee(statement.items[0].context_expr) == "_gym_raises"
    return False


def is_new(node: ast.stmt | ast.expr, lines: list[str], added: set[str], every: bool = False) -> bool:
    """Whether a line of ``node`` (``every`` line) is one the test patch added."""
    spanned = [line.strip() in added for line in lines[node.lineno - 1 : node.end_lineno]]
    return all(spanned) if every else any(spanned)


# -- writing a group -----------------------------------------------------------------------------------------


NEGATED = {
    ast.Eq: "!=",
    ast.NotEq: "==",
    ast.In: "not in",
    ast.NotIn: "in",
    ast.Is: "is not",
    ast.IsNot: "is",
}


def operand(lines: list[str], node: ast.expr) -> str:
    """An operand's source, in parentheses where it spans lines (they may have been the original's)."""
    source = test_source.source_of(lines, node)
    return f"({source})" if "\n" in source else source


def negation(lines: list[str], statement: ast.Assert) -> str:
    """The assert statement's contradiction: true exactly where the original test is false."""
    test = statement.test
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        condition = f"({test_source.source_of(lines, test.operand)})"
    elif isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in NEGATED:
        left, right = (operand(lines, node) for node in (test.left, test.comparators[0]))
        condition = f"{left} {NEGATED[type(test.ops[0])]} {right}"
    else:
        condition = f"not ({test_source.source_of(lines, test)})"
    message = f", {test_source.source_of(lines, statement.msg)}" if statement.msg is not None else ""
    return f"assert {condition}{message}"


def raises(
    lines: list[str],
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    statement: ast.stmt,
    pytest_name: str | None,
    unittest_style: bool,
    rng: random.Random,
) -> list[str] | None:
    """The statement made to fail where it succeeds: a ``raises`` block expecting an unrelated exception,
    or the statement under ``raises(AssertionError)`` (a simple one written on the same logical line and a
    ``with`` block given one more context manager, so that their text keeps its indentation and the text
    of its strings; another compound statement indented one level, where no string spans its lines).

    In a module that does not import pytest, the context is unittest's (the standard library's), whose
    failure is an ``AssertionError``, the failure of a test to every runner: pytest's ``Failed`` is a
    ``BaseException``, which sympy's runner (it catches ``Exception``) lets out of the whole run, so that
    the decoy's failure with a correct fix would end the run and reject the fix (sympy__sympy-13852)."""
    expected = test_source.expected_exception(statement)
    if expected is not None:
        return test_source.replaced(
            lines, expected, rng.choice(unrelated_to(test_source.source_of(lines, expected)))
        )
    imported = False
    if pytest_name:
        context = f"{pytest_name}.raises(AssertionError)"
    elif unittest_style:
        context = "self.assertRaises(AssertionError)"
    else:  # the module does not import pytest (sympy's never do): the decoy imports unittest
        context, imported = "unittest.TestCase().assertRaises(AssertionError)", True
    changed: list[str] | None
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        first = statement.items[0].context_expr
        changed = test_source.replaced(lines, first, f"{context}, {test_source.source_of(lines, first)}")
    elif not isinstance(statement, test_source.COMPOUND):
        changed = test_source.replaced(
            lines, statement, f"with {context}: {test_source.source_of(lines, statement)}"
        )
    else:
        changed = test_source.indented_under(lines, statement, f"with {context}:")
    if changed is not None and imported:
        start = function.body[0]
        indent = lines[start.lineno - 1][: start.col_offset]
        changed.insert(start.lineno - 1, f"{indent}import unittest\n")
    return changed


def unrelated_to(names: str) -> list[str]:
    """The unrelated exceptions that are none of ``names`` (builtin ones) nor one of their bases."""
    import builtins

    found = []
    for candidate in UNRELATED_EXCEPTIONS:
        base = getattr(builtins, candidate)
        related = False
        for name in re.findall(r"[A-Za-z_]\w*", names):
            own = getattr(builtins, name, None)
            if name == candidate or (isinstance(own, type) and issubclass(own, base)):
                related = True
        if not related:
            found.append(candidate)
    return found


def renamed(lines: list[str], function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> list[str]:
    out = list(lines)
    index = function.lineno - 1
    out[index] = re.sub(rf"(\bdef\s+){re.escape(function.name)}\b", rf"\g<1>{name}", out[index], count=1)
    return out


def separator(lines: list[str], first: int, function: ast.stmt) -> str:
    """The blank lines before the test (one or two), to put between the members of its group."""
    blank, index = 0, first - 1
    while index >= 0 and not lines[index].strip():
        blank, index = blank + 1, index - 1
    if index < 0 or blank == 0:
        return "\n" if function.col_offset else "\n\n"
    return "\n" * min(blank, 2)


def renamable(function: ast.FunctionDef | ast.AsyncFunctionDef, source: str, tree: ast.Module) -> bool:
    """Whether the test can take another name without changing what it does."""
    if not function.name.startswith("test") or NAME_DEPENDENT.search(source):
        return False
    uses = 0
    for node in ast.walk(tree):
        named = getattr(node, "id", None) or getattr(node, "attr", None)
        text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
        if named == function.name or function.name in text:
            uses += 1
    return uses == 0


# -- names ---------------------------------------------------------------------------------------------------


def vocabulary(tree: ast.Module) -> list[str]:
    """Lower-case words of the file's test names (and its other names when those are few)."""
    words: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            words.update(w.lower() for w in WORD.findall(node.name[4:]))
    if len(words) < 8:
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                words.update(w.lower() for w in WORD.findall(node.id))
    usable = sorted(w for w in words if len(w) > 1 and not w.isdigit() and not keyword.iskeyword(w))
    return usable if len(usable) >= 4 else sorted(set(usable) | set(FALLBACK_WORDS))


def file_words(tree: ast.Module) -> list[str]:
    """The lower-case words of the file's strings and names, for the words of decoy strings."""
    words: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            words.update(w.lower() for w in re.findall(r"[A-Za-z]{2,}", node.value))
        elif isinstance(node, ast.Name):
            words.update(w.lower() for w in re.findall(r"[A-Za-z]{2,}", node.id))
    return sorted(words)


def fresh_name(original: str, vocabulary: Sequence[str], taken: set[str], rng: random.Random) -> str:
    """A new test name in the style of ``original`` (its prefix, snake or camel case, about its length)."""
    camel = bool(re.match(r"^test[A-Z0-9]", original))
    underscored = re.match(r"^([A-Za-z]+_)", original)
    prefix = "test" if camel else underscored.group(1) if underscored else "test_"
    length = min(max(len(WORD.findall(original[len(prefix) :])), 2), 7)
    for attempt in range(12):
        count = max(2, length + rng.choice((-1, 0, 0, 1)) + attempt // 4)
        words = rng.sample(list(vocabulary), min(count, len(vocabulary)))
        name = prefix + ("".join(w.title() for w in words) if camel else "_".join(words))
        if name not in taken and name.isidentifier() and not keyword.iskeyword(name):
            taken.add(name)
            return name
    name = f"{prefix}{rng.choice(vocabulary)}{rng.randrange(10, 10_000)}"
    taken.add(name)
    return name
