"""Decoys that change a test's *inputs*: for tests whose expectation is computed (``assert f(x) == g(y)``),
an exception block, or a value too small to vary, a literal the test feeds the code (``x``) is what changes.

Whether a correct fix fails such a decoy cannot be read off the test, so it is learned once per task from
the gold patch (`gym_swe.grading.calibration.probe_inputs`): each candidate leaf's *block* of values (a fixed
part of its value class, `decoy_values`: spelt as it is, seen where it is seen) is planted whole beside the
test, one copy per value, with the gold patch; the values whose copy failed every case while the original
passed are kept, and a grade's group for that leaf is a window of them with the original at a uniformly random
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
MAX_LEAVES = 3
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
) -> list[InputLeaf]:
    """The leaves a calibration can try, best first (on lines the test patch added, then the largest class),
    each with its block: the numbers and strings of the last statement of ``function`` that the run checks
    (`last_statement`), what it feeds the code and what it compares with alike."""
    found: list[tuple[tuple[bool, int], InputLeaf]] = []
    last = last_statement(function)
    for statement in [last] if last is not None else []:
        for leaf in _leaves(statement):
            if leaf.lineno != leaf.end_lineno:
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


def last_statement(function: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.stmt | None:
    """The test's last statement that runs in the run (a sealed check is held outside it, a ``pass`` or a
    docstring checks nothing). A decoy changes only this statement, so that with any code it runs exactly as
    the original up to there: where the original fails with the buggy code, earlier, so does the decoy, and
    code that runs every member with the bug to see where each fails learns nothing."""
    for statement in reversed(function.body):
        if test_source.is_inert(statement):
            continue
        if isinstance(statement, ast.Expr) and test_source.callee(statement.value) in _SEALED:
            continue
        if (
            isinstance(statement, ast.With)
            and statement.items
            and test_source.callee(statement.items[0].context_expr) in _SEALED
        ):
            continue
        return statement
    return None


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


def find(
    node: str,
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    lines: list[str],
    calibrated: Mapping[str, Any],
) -> list[InputLeaf]:
    """The calibrated leaves of the test ``node`` found in this copy of its file, each with the values its
    calibration kept (``calibrated``: leaf key -> ``{"texts", "index", "protective", ...}``)."""
    last = last_statement(function)
    if not calibrated or last is None:
        return []
    found = []
    for statement in [last]:
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
    probes: Sequence[tuple[InputLeaf, str, list[str]]], outcomes: Mapping[str, str], fixed: bool = True
) -> dict[str, dict[str, Any]]:
    """What a calibrating run says of each probed leaf: its block (``block``, the original at ``index``) and
    the places of the values whose copy failed every case (``kept``, the original's among them). With the
    gold patch (``fixed``) the original must have passed every case; with no fix, failed every one (else a
    copy failing tells it apart from the original, which the bug does not fail in the run). ``probes``: each
    leaf, its original as planted, and its copies' nodes, one per other value of the block, in order."""
    from gym_swe.grading.decoy_report import member_cases

    kept: dict[str, dict[str, Any]] = {}
    wanted = "passed" if fixed else "failed"
    for entry, original_node, copies in probes:
        original = member_cases(outcomes, original_node)
        if not original or any(outcome != wanted for outcome in original.values()):
            continue
        index = entry.values.index
        positions = [position for position in range(len(entry.values)) if position != index]
        chosen = [index]
        for position, copy in zip(positions, copies):
            cases = member_cases(outcomes, copy)
            if cases and set(cases) == set(original) and all(value == "failed" for value in cases.values()):
                chosen.append(position)
        values = entry.values
        kept[entry.key] = {
            "block": list(values.texts), "index": index, "kept": sorted(chosen),
            "protective": entry.protective,
            "open_low": values.open_low, "open_high": values.open_high, "full": values.full,
        }  # fmt: skip
    return kept


def both(fixed: Mapping[str, Any], unfixed: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The values decoys of each leaf may take: those both calibrating runs kept (a decoy fails with the fix,
    and with the bug fails as the original does), and of those only the unbroken stretch of the block around
    the original. A value either run did not keep is one whose copy the fix or the bug gets right, which is
    often a value *near* the original (an input the code maps to the same result): a group with a gap in it
    would show where the original is. So the class ends at the first such value on each side, and an end made
    so is a known end (`decoy_values.ValueClass.chance` counts what it tells)."""
    kept: dict[str, dict[str, Any]] = {}
    for key, facts in fixed.items():
        other = unfixed.get(key)
        if not isinstance(other, Mapping) or other.get("block") != facts.get("block"):
            continue
        block, index = facts["block"], facts["index"]
        good = set(facts["kept"]) & set(other["kept"])
        low = high = index
        while low - 1 >= 0 and low - 1 in good:
            low -= 1
        while high + 1 < len(block) and high + 1 in good:
            high += 1
        if high == low:
            continue
        kept[key] = {
            "texts": block[low : high + 1], "index": index - low, "protective": facts["protective"],
            "open_low": low == 0 and bool(facts["open_low"]),
            "open_high": high == len(block) - 1 and bool(facts["open_high"]),
            "full": facts["full"],
        }  # fmt: skip
    return kept
