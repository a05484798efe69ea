"""Reading and editing a test file's source: where a test is, which of its statements are checks, and
the source-preserving edits the grader makes to it (decoys, sealed checks). Columns and lines come from the
``ast`` of the file as pytest will run it; an edit keeps every other byte of the file as it was.
"""

from __future__ import annotations

import ast
import io
import re
import textwrap
import tokenize
from collections.abc import Iterable, Iterator

COMPOUND = tuple(
    getattr(ast, name)
    for name in ("If", "For", "AsyncFor", "While", "Try", "TryStar", "Match")
    if hasattr(ast, name)
)


# Calls that check something and raise when it does not hold (the last name of the callee).
_CHECK_CALL = re.compile(r"^(assert|check|verify|expect)|^(fnmatch_lines|re_match_lines|no_fnmatch_line)$",
                         re.IGNORECASE)  # fmt: skip


RAISES_CALLS = frozenset({"raises", "assertRaises", "assertRaisesRegex", "assertRaisesRegexp"})


def split_lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return lines


def find_test(
    tree: ast.Module, parts: list[str]
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, list[ast.stmt]] | None:
    """The definition of ``Class::...::name`` in ``tree`` and the body it is in (None if it is not a plain
    definition there, or is defined twice)."""
    body: list[ast.stmt] = tree.body
    for name in parts[:-1]:
        classes = [node for node in body if isinstance(node, ast.ClassDef) and node.name == name]
        if len(classes) != 1:
            return None
        body = classes[0].body
    found = [
        n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == parts[-1]
    ]
    return (found[0], body) if len(found) == 1 else None


def own_nodes(function: ast.AST) -> Iterable[ast.AST]:
    """The nodes of a function's body, not those of functions or classes defined inside it."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def callee(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            return func.attr
        if isinstance(func, ast.Name):
            return func.id
    return ""


def expected_exception(statement: ast.stmt) -> ast.expr | None:
    """E of ``with pytest.raises(E):`` / ``with self.assertRaises(E):`` (a block that must raise E)."""
    if isinstance(statement, ast.With) and len(statement.items) == 1:
        call = statement.items[0].context_expr
        if isinstance(call, ast.Call) and callee(call) in RAISES_CALLS and call.args:
            return call.args[0]
    return None


def is_check(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Assert) or expected_exception(statement) is not None:
        return True
    return isinstance(statement, ast.Expr) and bool(_CHECK_CALL.search(callee(statement.value)))


def is_inert(statement: ast.stmt) -> bool:
    """A statement that does nothing (a docstring, ``pass``)."""
    return isinstance(statement, ast.Pass) or (
        isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
    )


def is_check_like(statement: ast.stmt) -> bool:
    """A check, or a loop or branch made of checks only (``for x in y: assert f(x)``): nothing after it in
    a test's body but such statements means a decoy stopping there skips no work of the original's."""
    if is_check(statement):
        return True
    if isinstance(statement, (ast.For, ast.If)):
        inner = [*statement.body, *statement.orelse]
        return bool(inner) and all(is_check_like(part) or is_inert(part) for part in inner)
    return False


def as_text(value: str | bytes) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


def is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def segment_of(lines: list[str], node: ast.AST) -> tuple[int, int, int, int]:
    """(first line index, first column, last line index, end column), columns as str indices."""
    first, last = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]
    start = len(lines[first].encode("utf-8")[: node.col_offset].decode("utf-8", "replace"))  # type: ignore[attr-defined]
    end = len(lines[last].encode("utf-8")[: node.end_col_offset].decode("utf-8", "replace"))  # type: ignore[attr-defined]
    return first, start, last, end


def replaced(lines: list[str], node: ast.AST, text: str) -> list[str]:
    """``lines`` with ``node``'s source replaced by ``text``."""
    first, start, last, end = segment_of(lines, node)
    out = list(lines)
    out[first : last + 1] = [lines[first][:start] + text + lines[last][end:]]
    return out


def source_of(lines: list[str], node: ast.AST) -> str:
    first, start, last, end = segment_of(lines, node)
    if first == last:
        return lines[first][start:end]
    return lines[first][start:] + "".join(lines[first + 1 : last]) + lines[last][:end]


def indented_under(lines: list[str], statement: ast.stmt, header: str) -> list[str] | None:
    """``lines`` with a compound ``statement`` moved into a block under ``header``, one level deeper; None
    when a string in it spans lines (indenting would change its value)."""
    first, last = statement.lineno - 1, (statement.end_lineno or statement.lineno) - 1
    block = lines[first : last + 1]
    indent = block[0][: len(block[0]) - len(block[0].lstrip())]
    if any(line.strip() and not line.startswith(indent) for line in block):
        return None  # a continuation line to the left of the statement
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(textwrap.dedent("".join(block))).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    if any(token.type == tokenize.STRING and token.start[0] != token.end[0] for token in tokens):
        return None
    moved = [indent + "    " + line[len(indent) :] if line.strip() else line for line in block]
    return [*lines[:first], f"{indent}{header}\n", *moved, *lines[last + 1 :]]


def module_binding(tree: ast.Module, module: str) -> str | None:
    """The name ``module`` is imported as at the top of the file (``import pytest``), if it is."""
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == module:
                    return alias.asname or module
    return None


def is_unittest_class(tree: ast.Module, scope: tuple[str, ...]) -> bool:
    """Whether the innermost class of ``scope`` derives from a class named ``TestCase``."""
    body: list[ast.stmt] = tree.body
    bases: list[ast.expr] = []
    for name in scope:
        matches = [n for n in body if isinstance(n, ast.ClassDef) and n.name == name]
        if not matches:
            return False
        bases, body = matches[0].bases, matches[0].body
    names = {base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "") for base in bases}
    return "TestCase" in names


def tail(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    """The checks at the end of a test's body, after which it does nothing but check (each runs whenever the
    test passes, and one that fails skips none of the test's work); empty for a test that can return before
    its checks or is a generator."""
    if any(isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)) for node in own_nodes(function)):
        return []
    found: list[ast.stmt] = []
    for statement in reversed(function.body):
        if not (is_check_like(statement) or is_inert(statement)):
            break
        if is_check(statement):
            found.append(statement)
    return found[::-1]


def checked_statements(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.stmt]:
    """The statements of a test that run whenever the test passes, once per case: its body's, and those in
    its ``with`` blocks, not in loops, branches or ``try``; none for a test that can return before its
    checks or is a generator."""
    if any(isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)) for node in own_nodes(function)):
        return
    stack = list(reversed(function.body))
    while stack:
        statement = stack.pop()
        yield statement
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            stack.extend(reversed(statement.body))
