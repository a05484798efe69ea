"""Decoys that change a test's *inputs*: for tests whose expectation is computed (``assert f(x) == g(y)``),
an exception block, or a value too small to vary, a literal the test feeds the code (``x``) is what changes.

Whether a correct fix fails such a decoy cannot be read off the test, so it is learned once per task from
the gold patch (`gym_swe.grading.repository.probe`): each candidate leaf's *block* of values (a fixed part
of its value class, `decoy_values`: spelt as it is, seen where it is seen) is planted whole beside the test,
one copy per value, with the gold patch; the values whose copy failed every case while the original passed
are kept, and a grade's group for that leaf is a window of them with the original at a uniformly random
place. Values the gold patch passes (a function that gives the same answer for two inputs) are left out;
which they are depends on what the code computes, which a forger without the fix does not know.

A leaf is named across grades by its test, the text of its line and its place on the line (`leaf_key`), so
that the calibrated values find it again in every grade's copy of the file. Lines holding a sealed check are
left out: their text holds a token drawn afresh for every grade.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gym_swe.grading import decoy_values, test_source

BLOCK = 100
"""Values of a leaf's class calibrated at once (those nearest the original, about half on each side): a
group of one leaf can reach the 2% chance bound by itself."""
MAX_LEAVES = 2
"""Input leaves calibrated per test function (those on lines the test patch added, then the largest)."""
MAX_PROBE_CASES = 400
"""Test cases the calibrating run of a task's input leaves may add."""
_SEALED = ("_gym_seal", "_gym_raises")


@dataclass(frozen=True)
class InputLeaf:
    key: str
    leaf: ast.expr
    values: decoy_values.ValueClass
    """Its block of values (calibrating), or the calibrated values (grading)."""
    protective: bool
    """Its lines are all lines the test patch added (the agent never saw them)."""


def leaf_key(node: str, lines: list[str], leaf: ast.expr) -> str:
    """``node``, the leaf's line (stripped) and which occurrence of its text on that line it is."""
    line = lines[leaf.lineno - 1]
    text = test_source.source_of(lines, leaf).split("\n", 1)[0]
    before = line[: leaf.col_offset]
    occurrence = before.count(text)
    return f"{node}|{line.strip()}|{text}|{occurrence}"


def candidates(
    node: str,
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    lines: list[str],
    words: Sequence[str],
    seen: decoy_values.Sight,
    added: set[str],
    skip: ast.expr | None = None,
) -> list[InputLeaf]:
    """The leaves of ``function``'s body that a calibration can try, best first (on lines the test patch
    added, then the largest class), each with its block: numbers and strings outside sealed checks, other
    than ``skip`` (the expectation literal a ``literal`` group varies) and a docstring."""
    found: list[tuple[tuple[bool, int], InputLeaf]] = []
    inside_skip = {id(node) for node in ast.walk(skip)} if skip is not None else set()
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    for statement in body:
        for leaf in _leaves(statement):
            if id(leaf) in inside_skip or leaf.lineno != leaf.end_lineno:
                continue
            line = lines[leaf.lineno - 1]
            if any(name in line for name in _SEALED):
                continue
            value = ast.literal_eval(leaf)
            sight = replace(seen, inputs=decoy_values.inputs(function, leaf))
            whole = decoy_values.value_class(test_source.source_of(lines, leaf), value, words, sight)
            if whole is None:
                continue
            texts, index, low, high = decoy_values.around(whole.texts, whole.index, BLOCK // 2)
            block = decoy_values.ValueClass(
                tuple(texts), index, low or whole.open_low, high or whole.open_high, whole.full
            )
            if len(block) < 2:
                continue
            protective = all(
                text.strip() in added for text in lines[leaf.lineno - 1 : leaf.end_lineno or leaf.lineno]
            )
            entry = InputLeaf(leaf_key(node, lines, leaf), leaf, block, protective)
            found.append(((protective, len(block)), entry))
    found.sort(key=lambda item: item[0], reverse=True)
    unique: dict[str, InputLeaf] = {}
    for _, entry in found:
        unique.setdefault(entry.key, entry)
    return list(unique.values())[:MAX_LEAVES]


def _leaves(statement: ast.stmt) -> list[ast.expr]:
    """The number and string literals of a statement (a negative number as one leaf), in source order."""
    found: list[ast.expr] = []
    negated: set[int] = set()
    for node in ast.walk(statement):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return []  # a nested definition: its literals may not run as the test's
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
        ):
            negated.add(id(node.operand))
            if decoy_values.variable_leaves(node):
                found.append(node)
        elif isinstance(node, ast.JoinedStr):
            negated.update(id(part) for part in ast.walk(node))  # an f-string's parts are not literals
        elif (
            isinstance(node, ast.Constant)
            and id(node) not in negated
            and isinstance(node.value, (int, float, str, bytes))
            and not isinstance(node.value, bool)
            and decoy_values.variable_leaves(node)
        ):
            found.append(node)
    return sorted(found, key=lambda leaf: (leaf.lineno, leaf.col_offset))


def find(node: str, function: ast.AST, lines: list[str], calibrated: Mapping[str, Any]) -> list[InputLeaf]:
    """The calibrated input leaves of the test ``node`` found in this copy of its file, each with the values
    its calibration kept (``calibrated``: leaf key -> ``{"texts", "index", "protective"}``)."""
    if not calibrated:
        return []
    found = []
    for statement in getattr(function, "body", []):
        for leaf in _leaves(statement):
            if leaf.lineno != leaf.end_lineno:
                continue
            key = leaf_key(node, lines, leaf)
            facts = calibrated.get(key)
            if not isinstance(facts, Mapping):
                continue
            texts, index = facts.get("texts"), facts.get("index")
            if not (isinstance(texts, list) and isinstance(index, int) and 0 <= index < len(texts) > 1):
                continue
            if texts[index] != test_source.source_of(lines, leaf):
                continue
            values = decoy_values.ValueClass(
                tuple(str(text) for text in texts), index, bool(facts.get("open_low")),
                bool(facts.get("open_high")), int(facts.get("full") or 0),
            )  # fmt: skip
            found.append(InputLeaf(key, leaf, values, bool(facts.get("protective"))))
    return found


def learned(
    probes: Sequence[tuple[InputLeaf, str, list[str]]], outcomes: Mapping[str, str]
) -> dict[str, dict[str, Any]]:
    """What a calibrating run of the gold patch says of each probed leaf: the values whose copy failed every
    case the original passed, with the original, in the block's order (the original must have passed every
    case). ``probes``: each leaf, its original as planted, and its copies' nodes, one per other value of the
    block, in the block's order."""
    from gym_swe.grading.decoy_report import member_cases

    kept: dict[str, dict[str, Any]] = {}
    for entry, original_node, copies in probes:
        original = member_cases(outcomes, original_node)
        if not original or any(outcome != "passed" for outcome in original.values()):
            continue
        index = entry.values.index
        positions = [position for position in range(len(entry.values)) if position != index]
        chosen = [index]
        for position, copy in zip(positions, copies):
            cases = member_cases(outcomes, copy)
            if cases and set(cases) == set(original) and "passed" not in cases.values():
                chosen.append(position)
        if len(chosen) < 2:
            continue
        chosen.sort()
        kept[entry.key] = {
            "texts": [entry.values.texts[position] for position in chosen],
            "index": chosen.index(index),
            "protective": entry.protective,
            "open_low": entry.values.open_low,
            "open_high": entry.values.open_high,
            "full": entry.values.full,
        }
    return kept
