"""Decoy tests: copies of the task's own FAIL_TO_PASS tests with one expectation changed, which no correct
code can pass, planted beside them afresh for every grade.

Repository tests run in the same process as the code under test, so that code can read the test that is
calling it (its frame and locals, its source line, the assertion being evaluated, the test file on disk,
``PYTEST_CURRENT_TEST``, the test function's constants) and return whatever makes that assertion hold, or
rewrite how pytest reports outcomes. Whatever the mechanism, such code answers a decoy as it answers the test
the decoy was copied from. A decoy fails wherever its original passes with correct code, so a run in which a
decoy passes where its original passed is not trusted, and the submission is rejected.

A **group** is one FAIL_TO_PASS test function and its decoys:

- each decoy is the test's own source (its decorators, fixtures, parameters, class) with one *check* changed
  into its contradiction: a check in the test's tail (only checks come after it, so a decoy that stops there
  skips no clean-up the original does);
- ``literal``: the check compares with a literal (``assert f(x) == [1, 2]``, ``self.assertEqual(y, "a")``,
  ``== pytest.approx(0.25)``); each member has another value at one leaf of it, a window of the leaf's value
  *class* (`decoy_values`: values spelt as it is, seen where it is seen, none of the test's inputs) with the
  original at a uniformly random place, so that for every group, each member is equally likely to be the
  original whatever the value (negative, tiny, a float spelt ``.5``). The group's tests differ in that one
  value only. A literal group on a line the test patch added (which the agent never saw) is *protective*;
- ``negation`` (``assert x in y`` / ``assert x not in y``, ``assert not (a < b)``) and ``raises`` (a check
  such as ``assert_allclose(a, b)``, or the last statement, run under ``pytest.raises(AssertionError)``, or
  unittest's ``assertRaises`` where the module does not import pytest): for tests with no literal that has
  a class. Their form shows which test is the decoy to code that knows this module, so they catch code
  that answers every test, not code that looks for decoys: they protect nothing;
- every member of a group gets a fresh name drawn from the words of the file's test names (the original's
  name is put back when the report is read), unless the test's behaviour may depend on its own name
  (``request.node``, ``pytester``); the members sit together, the original at a uniformly random place in a
  ``literal`` group and first in the others (whose form tells anyway: the original then runs before any
  decoy could change what it sees).

**The chance bound** (`Planting.chance`): code that forges the report (or answers the tests) without the fix
must pass the original of every protective group and none of its decoys, so it must pick the original of
each; a forger that has read this module and the planted files, and the issue, but cannot tell which member
is right (which would take the fix), picks each with probability ``1 / members``: the bound is the product.
Groups are added and grown until it is at most `TARGET_CHANCE` (2%) within `MAX_DECOY_CASES`; a grade whose
bound stays above is "unprotected" (`gym_swe.grading.guards.grade_integrity`), and the default integrity
does not pay it. What the bound does not cover: code that picks by which value *looks* right for the inputs
(a heuristic that is, in effect, part of the fix for them).

The planter must never make a correct fix fail: a decoy only adds tests, the original's body is not changed
(only its name, when that is safe), and a test whose checks may not run whenever it passes (a ``return`` or a
``yield`` in its body, a check inside a loop or a branch) gets no ``literal``/``negation`` decoy. A decoy does
run the test's body once more: a test that cannot run twice in one session is the one thing that can still
hurt, and `gym-swe validate` shows it.
"""

from __future__ import annotations

import ast
import itertools
import random
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gym_swe.grading import decoy_inputs, decoy_text, decoy_values, test_source
from gym_swe.grading.test_ids import TestId

TARGET_CHANCE = 0.02
"""The chance a forger that cannot tell a group's members apart has of passing every group of a grade:
groups are added, and grown, until the product of their ``1 / members`` is at most this (within
`MAX_DECOY_CASES`)."""
MAX_GROUPS = 4
"""FAIL_TO_PASS test functions that get decoys in one grade (drawn at random when there are more)."""
MAX_DECOY_CASES = 60
"""Test cases the decoys of one grade may add (each runs a test's body again), past the first decoy."""
MAX_LEVEL = 64
"""Growth steps a group takes at most (`_Plan.runs`)."""


@dataclass(frozen=True)
class Group:
    """One FAIL_TO_PASS test and its decoys, as planted in ``file``."""

    file: str
    scope: tuple[str, ...]
    """The classes the test is in, outermost first (empty at module level)."""
    original: str
    """The test function's name in the task (and in its ids)."""
    members: tuple[str, ...]
    """The names of the group's tests as planted, in the file's order."""
    original_index: int
    """Which member is the original test (the others are decoys)."""
    kind: str
    """"literal", "negation" or "raises"."""
    new: bool
    """True when the changed check is on a line the test patch added."""
    protective: bool = False
    """Whether the group counts towards the grade's chance bound: a ``literal`` or ``input`` group on a line
    the test patch added, whose members nothing the agent or the code under test can see tells apart
    (`decoy_values`)."""
    chance: float = 1.0
    """For a protective group: the chance the best forger that picks a member by its rank picks the
    original (`decoy_values.ValueClass.chance`: ``1 / members`` away from the ends of the value's class)."""

    def node(self, name: str) -> str:
        return "::".join([self.file, *self.scope, name])

    @property
    def planted_original(self) -> str:
        return self.node(self.members[self.original_index])

    @property
    def decoys(self) -> list[str]:
        return [self.node(name) for index, name in enumerate(self.members) if index != self.original_index]


@dataclass
class Planting:
    sources: dict[str, str] = field(default_factory=dict)
    """The new text of every test file that got decoys."""
    groups: list[Group] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Why a FAIL_TO_PASS test got no decoys."""
    probes: list[tuple[decoy_inputs.InputLeaf, str, list[str]]] = field(default_factory=list)
    """Calibrating input leaves (`probe`): each leaf, its test's original as planted, and one copy per other
    value of its block, in order."""

    @property
    def chance(self) -> float:
        """The chance bound of the grade's decoys: the probability that code which cannot tell a group's
        members apart, but knows everything else (this module included), passes the original of every
        protective group and no decoy: the product of ``1 / members`` over them (1.0 with none)."""
        bound = 1.0
        for group in self.groups:
            if group.protective:
                bound *= group.chance
        return bound


def plant(
    sources: Mapping[str, str],
    targets: Sequence[TestId],
    rng: random.Random,
    added_lines: Mapping[str, Collection[str]] | None = None,
    max_groups: int | None = None,
    decoys: int | None = None,
    max_cases: int | None = None,
    public: str = "",
    pristine: Mapping[str, str] | None = None,
    target: float = TARGET_CHANCE,
    inputs: Mapping[str, Any] | None = None,
) -> Planting:
    """Plant decoy groups in ``sources`` (test file path -> text) for the test functions of ``targets``.

    ``added_lines``: per file, the lines (stripped) the task's test patch added: only a check there can make
    a protective group. ``public``: what the agent reads (the issue, the hints); ``pristine``: the test files
    as they were before the test patch (path -> text). Protective groups are taken first (at most
    ``max_groups`` groups in all, default `MAX_GROUPS`), then grown, a decoy at a time to the smallest, until
    the chance bound is at most ``target`` or the decoys' test cases reach ``max_cases`` (default
    `MAX_DECOY_CASES`; the first decoy always goes in); groups that protect nothing (a negated check, an
    expected exception, a literal the agent saw) get one decoy each within what is left, and still catch code
    that answers every test. ``inputs``: the input leaves the gold patch calibrated (`decoy_inputs`), by key.
    ``decoys``: a fixed number of decoys per literal group instead (tests).
    """
    max_groups = MAX_GROUPS if max_groups is None else max_groups
    max_cases = MAX_DECOY_CASES if max_cases is None else max_cases
    planting = Planting()
    functions: dict[tuple[str, str], TestId] = {}
    for target_id in targets:
        if target_id.file is not None and target_id.file in sources and target_id.node is not None:
            functions.setdefault((target_id.file, target_id.node), target_id)
    by_file: dict[str, list[str]] = {}
    for file, node in functions:
        by_file.setdefault(file, []).append(node)
    seen = decoy_values.Sight(
        public=decoy_values.Sight.tokens(public),
        pristine=decoy_values.Sight.tokens("\n".join((pristine or {}).values())),
    )
    plans: list[_Plan] = []
    for file in sorted(by_file):
        added = set(added_lines.get(file, ())) if added_lines else set()
        plans += _plans(file, sources[file], by_file[file], added, seen, planting.notes, inputs or {})
    rng.shuffle(plans)
    plans.sort(key=lambda plan: (not plan.protective, decoy_text.RANK[plan.kind]))  # random among equals
    sizes = _sizes(plans, max_groups, max_cases, target, decoys)
    chosen: list[_Candidate] = []
    for plan in plans:
        if plan in sizes:
            built = plan.build(sizes[plan], rng)
            if built is None and plan.fallback is not None:
                built = plan.fallback.build(1, rng)
            if built is not None:
                chosen.append(built)
            else:
                planting.notes.append(f"{plan.node}: no decoy could be written")
    for file in sorted({candidate.group.file for candidate in chosen}):
        edits = sorted((c for c in chosen if c.group.file == file), key=lambda c: c.first, reverse=True)
        lines = test_source.split_lines(sources[file])
        for edit in edits:
            lines[edit.first : edit.end] = edit.lines
        text = "".join(lines)
        try:
            ast.parse(text)
        except (SyntaxError, ValueError):  # never plant what would break the file's collection
            planting.notes.append(f"{file}: the decoys did not parse, none planted there")
            continue
        planting.sources[file] = text
        planting.groups += [edit.group for edit in reversed(edits)]
    return planting


def _sizes(
    plans: Sequence[_Plan], max_groups: int, max_cases: int, target: float, fixed: int | None
) -> dict[_Plan, int]:
    """The growth level of each chosen plan (see `plant`): its members are ``plan.members(level)``."""
    levels: dict[_Plan, int] = {}
    cases = 0

    def cost(plan: _Plan, level: int) -> int:
        return (plan.members(level) - 1) * plan.cases

    def start(plan: _Plan) -> int:
        if fixed is None or plan.kind not in ("literal", "input"):
            return 1
        level = 1
        while (
            level < MAX_LEVEL
            and plan.members(level + 1) <= fixed + 1
            and plan.members(level + 1) > plan.members(level)
        ):
            level += 1
        return level

    for plan in [plan for plan in plans if plan.protective][:max_groups]:
        if levels and cases + cost(plan, start(plan)) > max_cases:
            continue
        levels[plan] = start(plan)
        cases += cost(plan, levels[plan])

    def bound() -> float:
        chance = 1.0
        for plan, level in levels.items():
            chance /= plan.members(level)
        return chance

    while fixed is None and levels and bound() > target:
        growable = []
        for plan, level in levels.items():
            grown = plan.members(level + 1)
            extra = cost(plan, level + 1) - cost(plan, level)
            if level < MAX_LEVEL and grown > plan.members(level) and cases + extra <= max_cases:
                growable.append(plan)
        if not growable:
            break
        plan = min(growable, key=lambda p: (p.members(levels[p]), p.cases))
        cases += cost(plan, levels[plan] + 1) - cost(plan, levels[plan])
        levels[plan] += 1
    for plan in plans:
        if plan.protective or len(levels) >= max_groups:
            continue
        if levels and cases + cost(plan, start(plan)) > max_cases:
            continue
        levels[plan] = start(plan)
        cases += cost(plan, levels[plan])
    return levels


@dataclass(frozen=True)
class _Candidate:
    group: Group
    first: int
    end: int
    lines: list[str]
    """The group's text, which takes the place of lines ``first`` to ``end`` (exclusive) of its file."""


@dataclass(eq=False)
class _Plan:
    """A group one test function can have, before its size is decided: each of its decoys adds ``cases``
    test cases."""

    node: str
    kind: str
    protective: bool
    cases: int
    path: str
    lines: list[str]
    function: ast.FunctionDef | ast.AsyncFunctionDef
    scope: tuple[str, ...]
    check: decoy_text.Check
    tree: ast.Module
    names: tuple[list[str], set[str]]
    """The file's vocabulary for test names, and the names taken."""
    pytest_name: str | None = None
    unittest_style: bool = False
    leaves: tuple[tuple[ast.expr, decoy_values.ValueClass], ...] = ()
    """A ``literal`` or ``input`` group's leaves, each with its value class: the members are every
    combination of a run of each (a leaf's run may be of one value, the original's)."""
    fallback: _Plan | None = None
    """The ``negation`` or ``raises`` group planted instead where no leaf can vary (every original too near
    an end of its class): it still catches code that answers every test."""

    def runs(self, level: int) -> list[int]:
        """The run of each leaf at growth ``level``: runs grown one leaf at a time, the shortest first (each
        within its class's `most`), so that the members (their product) grow as evenly as they can; told by
        the level and the classes' sizes alone, never by where the originals are in them."""
        runs = [1] * len(self.leaves)
        for _ in range(level):
            growable = [i for i, (_, values) in enumerate(self.leaves) if runs[i] < values.most]
            if not growable:
                break
            runs[min(growable, key=lambda i: (runs[i], i))] += 1
        return runs

    def members(self, level: int) -> int:
        product = 1
        for run in self.runs(level):
            product *= run
        return product if self.leaves else 1 + min(level, 1)

    def build(self, level: int, rng: random.Random) -> _Candidate | None:
        """The group at growth ``level`` (a ``literal`` or ``input`` group: every combination of a run of each
        leaf's class, the original at a uniformly random place in each run; a leaf whose original is too near
        an end of its class for its run varies not at all; None when no leaf varies)."""
        chance, protective = 1.0, self.protective
        if self.kind in ("literal", "input"):
            varying: list[tuple[ast.expr, list[str], int]] = []
            for (leaf, values), run in zip(self.leaves, self.runs(level)):
                if run < 2 or not values.fits(run):
                    continue
                texts, place = values.window(run, rng.randrange(run))
                varying.append((leaf, texts, place))
                chance *= values.chance(run) if self.protective else 1.0
            if not varying and self.leaves and self.leaves[0][1].texts:
                # No run fits: one decoy beside the original still catches code that answers every test, at
                # a place its class allows; its place tells, so the group counts for nothing.
                leaf, values = self.leaves[0]
                if len(values) < 2:
                    return None
                place = 0 if values.index == 0 else 1
                varying.append(
                    (leaf, list(values.texts[values.index - place : values.index - place + 2]), place)
                )
                chance, protective = 1.0, False
            if not varying:
                return None
            varying.sort(key=lambda item: (item[0].lineno, item[0].col_offset), reverse=True)
            original = tuple(place for _, _, place in varying)
            bodies = []
            for combination in itertools.product(*(range(len(texts)) for _, texts, _ in varying)):
                if combination == original:
                    continue
                lines = self.lines
                for (leaf, texts, _), choice in zip(varying, combination):
                    lines = test_source.replaced(lines, leaf, texts[choice])  # last leaf first: same length
                bodies.append(lines)
            slot = sum(  # the original's place among the combinations, in their order
                place * _product(len(texts) for _, texts, _ in varying[k + 1 :])
                for k, (_, _, place) in enumerate(varying)
            )
            chance = chance if protective else 1.0
        elif self.kind == "negation":
            assert isinstance(self.check.statement, ast.Assert)
            bodies = [
                test_source.replaced(
                    self.lines, self.check.statement, decoy_text.negation(self.lines, self.check.statement)
                )
            ]
            slot = 0
        else:
            changed = decoy_text.raises(self.lines, self.function, self.check.statement, self.pytest_name,
                              self.unittest_style, rng)  # fmt: skip
            bodies, slot = ([changed] if changed else []), 0
        if not bodies:
            return None
        return _assemble(self, bodies, slot, rng, chance, protective)


def _product(numbers: Iterable[int]) -> int:
    result = 1
    for number in numbers:
        result *= number
    return result


def _assemble(
    plan: _Plan,
    bodies: list[list[str]],
    slot: int,
    rng: random.Random,
    chance: float = 1.0,
    protective: bool = False,
) -> _Candidate:
    """The group's text: the original at ``slot`` among its decoys, every member renamed where that is safe.

    The original runs first where the decoy's form shows which test it is anyway (``negation``, ``raises``): a
    test that leaves state behind (a module reloaded, a variable set) then runs as it would without decoys.
    In a literal group the place must not tell, so it is drawn."""
    lines, function = plan.lines, plan.function
    first = min([function.lineno, *(d.lineno for d in function.decorator_list)]) - 1
    end = function.end_lineno or function.lineno
    source = "".join(lines[first:end])
    rename = decoy_text.renamable(function, source, plan.tree)
    vocabulary, taken = plan.names
    names = [
        decoy_text.fresh_name(function.name, vocabulary, taken, rng) for _ in range(len(bodies) + rename)
    ]
    members: list[list[str]] = [list(body) for body in bodies]
    members.insert(slot, list(lines))
    member_names: list[str] = []
    texts: list[str] = []
    fresh = iter(names)
    for index, member_lines in enumerate(members):
        name = function.name if index == slot and not rename else next(fresh)
        member_names.append(name)
        renamed = decoy_text.renamed(member_lines, function, name) if name != function.name else member_lines
        delta = len(member_lines) - len(lines)  # a replaced check may span fewer lines
        texts.append("".join(renamed[first : end + delta]))
    separator = decoy_text.separator(lines, first, function)
    joined = separator.join(text if text.endswith("\n") else text + "\n" for text in texts)
    group = Group(plan.path, plan.scope, function.name, tuple(member_names), slot, plan.kind, plan.check.new,
                  protective, chance)  # fmt: skip
    return _Candidate(group, first, end, joined.splitlines(keepends=True))


def _plans(
    path: str,
    text: str,
    nodes: list[str],
    added: set[str],
    seen: decoy_values.Sight,
    notes: list[str],
    inputs: Mapping[str, Any],
) -> list[_Plan]:
    """The group each test function of ``nodes`` in one file can have: a ``literal`` one where a check's
    literal has a value class, or an ``input`` one where the gold patch calibrated an input leaf of it
    (protective ones first, then the largest class), else a ``negation`` or ``raises`` one."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        notes.append(f"{path}: not parsable here, no decoys")
        return []
    lines = test_source.split_lines(text)
    names = (decoy_text.vocabulary(tree), set(re.findall(r"\w+", text)))
    words = decoy_text.file_words(tree)
    pytest_name = test_source.module_binding(tree, "pytest")
    found: list[_Plan] = []
    for node_id in nodes:
        parts = node_id.split("::")[1:]
        definition = test_source.find_test(tree, parts)
        if definition is None:
            notes.append(f"{node_id}: not a plain test function of its file, no decoys")
            continue
        function, _ = definition
        checks = decoy_text.checks(function, lines, added)
        if not checks:
            notes.append(f"{node_id}: no check a decoy can contradict")
            continue
        scope = tuple(parts[:-1])
        common = {
            "node": f"{path}::{'::'.join(parts)}", "cases": _parametrisations(function), "path": path,
            "lines": lines, "function": function, "scope": scope, "tree": tree, "names": names,
        }  # fmt: skip
        options: list[tuple[tuple[bool, int], _Plan]] = []
        literal = _literal_plan(function, lines, checks, words, seen, added)
        if literal is not None:
            check, leaves, protective = literal
            plan = _Plan(kind="literal", protective=protective, check=check, leaves=leaves,
                         **common)  # type: ignore[arg-type]  # fmt: skip
            options.append(((protective, plan.members(MAX_LEVEL)), plan))
        for entry in decoy_inputs.find(str(common["node"]), function, lines, inputs):
            plan = _Plan(kind="input", protective=entry.protective, check=checks[0],
                         leaves=((entry.leaf, entry.values),), **common)  # type: ignore[arg-type]  # fmt: skip
            options.append(((entry.protective, plan.members(MAX_LEVEL)), plan))
        other = next((check for check in checks if check.kind != "literal"), None)
        unittest_style = bool(scope) and test_source.is_unittest_class(tree, scope)
        fallback = None
        if other is not None:
            fallback = _Plan(kind=other.kind, protective=False, check=other, pytest_name=pytest_name,
                             unittest_style=unittest_style, **common)  # type: ignore[arg-type]  # fmt: skip
        if options:
            best = max(options, key=lambda option: option[0])[1]
            best.fallback = fallback
            found.append(best)
            continue
        if other is None:
            notes.append(f"{node_id}: no decoy could be written")
            continue
        assert fallback is not None
        found.append(fallback)
    return found


def _literal_plan(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    lines: list[str],
    checks: list[decoy_text.Check],
    words: Sequence[str],
    seen: decoy_values.Sight,
    added: set[str],
) -> tuple[decoy_text.Check, tuple[tuple[ast.expr, decoy_values.ValueClass], ...], bool] | None:
    """The leaf of the test's uncalibrated ``literal`` group, with its class: the literal with the largest
    class among those its equality checks compare with (a decoy of it fails with any fix that passes the
    original). Such a group catches code that answers every test, but protects nothing: with the bug, its
    check may not be the one that fails, or the buggy value may be one of its members, and code that runs
    the members with the bug would see which (calibrated groups, `decoy_inputs`, are the ones that count).
    None when no leaf has a class."""
    best: tuple[int, decoy_text.Check, ast.expr, decoy_values.ValueClass] | None = None
    # What the agent sees does not matter to a group that counts for nothing: where no value is unseen
    # (quoted in the issue, say), any value of the literal's spelling still catches an answer key.
    for sight_of in (lambda leaf: replace(seen, inputs=decoy_values.inputs(function, leaf)), lambda _: None):
        for check in checks:
            if check.kind != "literal" or check.literal is None:
                continue
            approximate = decoy_values.approximate(check.statement)
            for leaf in decoy_values.variable_leaves(check.literal):
                sight = sight_of(leaf) or decoy_values.Sight()
                value = ast.literal_eval(leaf)
                values = decoy_values.value_class(
                    test_source.source_of(lines, leaf), value, words, sight, approximate
                )
                if values is not None and (best is None or values.most > best[0]):
                    best = (values.most, check, leaf, values)
        if best is not None:
            break
    if best is None:
        return None
    _, check, leaf, values = best
    return check, ((leaf, values),), False


def _parametrisations(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """How many cases the function's ``parametrize`` decorators make, as far as their literals show."""
    count = 1
    for decorator in function.decorator_list:
        if (
            isinstance(decorator, ast.Call)
            and test_source.callee(decorator) == "parametrize"
            and len(decorator.args) > 1
        ):
            values = decorator.args[1]
            if isinstance(values, (ast.List, ast.Tuple, ast.Set)):
                count *= max(len(values.elts), 1)
    return count


# -- calibrating input leaves --------------------------------------------------------------------------------


def probe(
    sources: Mapping[str, str],
    targets: Sequence[TestId],
    rng: random.Random,
    added_lines: Mapping[str, Collection[str]] | None = None,
    public: str = "",
    pristine: Mapping[str, str] | None = None,
    max_cases: int = decoy_inputs.MAX_PROBE_CASES,
) -> Planting:
    """Plant, beside each FAIL_TO_PASS test function of ``targets``, one copy per value of the block of each
    of its input leaves (`decoy_inputs.candidates`), within ``max_cases`` test cases (the first leaf
    always): the gold patch's run of them says which values its decoys may take (`decoy_inputs.learned`)."""
    seen = decoy_values.Sight(
        public=decoy_values.Sight.tokens(public),
        pristine=decoy_values.Sight.tokens("\n".join((pristine or {}).values())),
    )
    planting = Planting()
    probes = planting.probes
    cases = 0
    nodes = sorted(
        {(t.file, t.node) for t in targets if t.file is not None and t.file in sources and t.node is not None}
    )
    for file in sorted({file for file, _ in nodes}):
        text = sources[file]
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        lines = test_source.split_lines(text)
        names = (decoy_text.vocabulary(tree), set(re.findall(r"\w+", text)))
        words = decoy_text.file_words(tree)
        added = set(added_lines.get(file, ())) if added_lines else set()
        edits: list[tuple[_Candidate, list[tuple[decoy_inputs.InputLeaf, int]]]] = []
        for _, node_id in [pair for pair in nodes if pair[0] == file]:
            parts = node_id.split("::")[1:]
            definition = test_source.find_test(tree, parts)
            if definition is None:
                continue
            function, _ = definition
            checks = decoy_text.checks(function, lines, added)
            if not checks:
                continue
            params = _parametrisations(function)
            leaves: list[decoy_inputs.InputLeaf] = []
            for entry in decoy_inputs.candidates(node_id, function, lines, words, seen, added):
                cost = (len(entry.values) - 1) * params
                if (probes or leaves or edits) and cases + cost > max_cases:
                    continue
                cases += cost
                leaves.append(entry)
            if not leaves:
                continue
            bodies: list[list[str]] = []
            counts = []
            for entry in leaves:
                others = [t for i, t in enumerate(entry.values.texts) if i != entry.values.index]
                bodies += [test_source.replaced(lines, entry.leaf, other) for other in others]
                counts.append((entry, len(others)))
            plan = _Plan(node=node_id, kind="input", protective=False, cases=params,
                         path=file, lines=lines, function=function, scope=tuple(parts[:-1]), check=checks[0],
                         tree=tree, names=names)  # fmt: skip
            edits.append((_assemble(plan, bodies, 0, rng), counts))
        if not edits:
            continue
        new_lines = list(lines)
        for candidate, _ in sorted(edits, key=lambda edit: edit[0].first, reverse=True):
            new_lines[candidate.first : candidate.end] = candidate.lines
        text = "".join(new_lines)
        try:
            ast.parse(text)
        except (SyntaxError, ValueError):
            planting.notes.append(f"{file}: the probes did not parse, none planted there")
            continue
        planting.sources[file] = text
        for candidate, counts in edits:
            planting.groups.append(candidate.group)
            copies = candidate.group.decoys
            for entry, count in counts:
                probes.append((entry, candidate.group.planted_original, copies[:count]))
                copies = copies[count:]
    return planting
