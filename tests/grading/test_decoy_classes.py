"""The values of decoy groups tell nothing of which member is the original (issue 32): every member is spelt
as the original is and seen where it is seen, and the original sits at a uniformly random place, whatever its
value (negative, tiny, a float spelt ``.5``). Checked two ways: by the form of every member, and by a
battery of the heuristics a forger who has read gym_swe would try (the smallest, the largest, the middle, the
roundest, the shortest, the one the file or the issue shows most), each of which must win no more than
chance. Then the input leaves (`decoy_inputs`): found, probed, learned and planted again."""

from __future__ import annotations

import ast
import random
import textwrap
from collections import Counter
from collections.abc import Callable

import pytest

from gym_swe.grading import decoy_inputs, decoy_text, decoy_values
from gym_swe.grading.decoys import plant, probe
from gym_swe.grading.test_ids import parse_test_id

NO_SIGHT = decoy_values.Sight()


def _class(source: str, sight: decoy_values.Sight = NO_SIGHT, words: tuple[str, ...] = ()) -> list[str]:
    found = decoy_values.value_class(source, ast.literal_eval(source), words, sight)
    return list(found.texts) if found is not None else []


def _shape(text: str) -> tuple[object, ...]:
    """What a forger sees of a number's spelling besides its digits: its sign, its digits on each side of the
    point (and whether there is one), its leading and trailing zeros."""
    sign, body = text.startswith("-"), text.lstrip("-")
    head, point, tail = body.partition(".")
    digits = head + tail
    return (sign, len(head), point, len(tail), len(digits) - len(digits.lstrip("0")),
            len(digits) - len(digits.rstrip("0")))  # fmt: skip


@pytest.mark.parametrize(
    "source",
    ["1", "5", "37", "100", "-3", "4700", "123456", ".5", "1.", "2.50", "0.25", "-6.5", "0.025", "-0.75"],
)
def test_a_number_class_keeps_the_spelling(source: str) -> None:
    members = _class(source)
    assert source in members and len(members) == len(set(members)) >= 9
    value = ast.literal_eval(source)
    for member in members:
        assert _shape(member) == _shape(source), (source, member)  # digits each side, zeros, sign, point
        assert (ast.literal_eval(member) < 0) == (value < 0)


def test_zero_and_values_the_agent_reads_have_no_class() -> None:
    assert _class("0") == [] and _class("0.0") == []
    issue = decoy_values.Sight(public=decoy_values.Sight.tokens("it returns 37 instead of 42"))
    assert _class("42", issue) == [] and "37" not in _class("41", issue)
    inputs = decoy_values.Sight(inputs=decoy_values.Sight.tokens("'x' * 42"))
    assert _class("42", inputs) == []


def test_a_member_is_seen_before_the_test_patch_exactly_where_the_original_is() -> None:
    pristine = decoy_values.Sight(pristine=decoy_values.Sight.tokens("assert size(a) == 37 and b == 58"))
    assert set(_class("37", pristine)) == {"37", "58"}  # only what the agent saw, like the original
    unseen = _class("41", pristine)
    assert "37" not in unseen and "58" not in unseen and len(unseen) > 50


def test_a_word_is_replaced_by_words_of_its_length_and_case() -> None:
    words = ("green", "house", "table", "tiger", "red", "bicycle", "plant")
    members = _class("'Green light'", words=words)
    assert set(members) == {f"'{word.title()} light'" for word in words if len(word) == 5}


FIVE_LETTER_WORDS = (
    "alpha bravo delta gamma kilos lemon mango nylon opera piano radar salsa tango ultra vodka whale apple "
    "beach cabin daisy eagle fable giant honey ivory jelly karma lunar medal noble ocean pearl quilt raven "
    "solar tiger umbra vivid wheat yacht zebra"
)
WORDS_FILE = "\n".join(
    f"def test_w{i}():\n    use({w!r})\n" for i, w in enumerate(FIVE_LETTER_WORDS.split(" "))
)


def calibrated(sources: dict[str, str], names: list[str], added: bool = True) -> dict[str, dict[str, object]]:
    """What a calibration would keep if the gold patch and the bug failed every copy: each candidate leaf of
    the tests ``names`` (``file::test``) with its whole block (``added``: every line is the test patch's)."""
    facts: dict[str, dict[str, object]] = {}
    for name in names:
        file, _, test = name.partition("::")
        tree = ast.parse(sources[file])
        lines = sources[file].splitlines(keepends=True)
        function = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == test)
        new = {line.strip() for line in lines} if added else set()
        for entry in decoy_inputs.candidates(
            name, function, lines, decoy_text.file_words(tree), NO_SIGHT, new
        ):
            values = entry.values
            facts[entry.key] = {"texts": list(values.texts), "index": values.index, "protective": entry.protective,
                                "open_low": values.open_low, "open_high": values.open_high, "full": values.full}  # fmt: skip
    return facts


def _members(text: str, name: str, seed: int, decoys: int) -> tuple[list[str], int, float, str] | None:
    """The changed values of the calibrated group planted for ``name`` in the file's order, the original's
    place among them, the group's chance bound and the planted file; None when no such group was planted."""
    inputs = calibrated({"t.py": text}, [f"t.py::{name}"])
    planting = plant({"t.py": text}, [parse_test_id(f"t.py::{name}")], random.Random(seed), decoys=decoys,
                     added_lines={"t.py": {line.strip() for line in text.splitlines()}}, inputs=inputs)  # fmt: skip
    if not planting.groups or planting.groups[0].kind != "input":
        return None
    (group,) = planting.groups
    source = planting.sources["t.py"]
    tree = ast.parse(source)
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    values = []
    for member in group.members:
        compare = functions[member].body[-1].test  # type: ignore[attr-defined]
        values.append(ast.get_source_segment(source, compare.comparators[0]) or "")
    return values, group.original_index, group.chance, source


def _value(text: str) -> tuple[float, str]:
    """A member's value in the natural order a forger would sort by (numbers by value, words alphabetically)."""
    value = ast.literal_eval(text)
    return (float(value), "") if isinstance(value, (int, float)) else (0.0, str(value).lower())


FORGERS: dict[str, Callable[[list[str], str], int]] = {
    "the smallest": lambda values, _: min(range(len(values)), key=lambda i: _value(values[i])),
    "the largest": lambda values, _: max(range(len(values)), key=lambda i: _value(values[i])),
    "the second smallest": lambda values, _: sorted(range(len(values)), key=lambda i: _value(values[i]))[1],
    "the first": lambda values, _: 0,
    "the roundest": lambda values, _: max(
        range(len(values)), key=lambda i: len(values[i]) - len(values[i].rstrip("0.'"))
    ),
    "the one the file shows most": lambda values, source: max(
        range(len(values)), key=lambda i: source.count(values[i])
    ),
    "the smallest non-negative": lambda values, _: min(
        range(len(values)), key=lambda i: (_value(values[i])[0] < 0, abs(_value(values[i])[0]))
    ),
    "the shortest": lambda values, _: min(range(len(values)), key=lambda i: len(values[i])),
}
GROUPED = ["37", "250", "-42", "0.53", ".45", "2.50", "-6.5", "'mango'", "4700", "35."]
"""Expected values a group of 4 can hide (a run of 4 fits well inside their class)."""
EDGE = ["1", "11", "0", "-1", "0.1", "'alpha'"]
"""Expected values at an end of their class: no run holds them without giving them away (no group, or one
whose chance bound is 1)."""


@pytest.mark.parametrize("expected", GROUPED + EDGE)
def test_no_heuristic_finds_the_original_more_often_than_the_bound_says(expected: str) -> None:
    """The issue's attacks: for expected values 0-4 the original was always the smallest member; a float kept
    its own spelling; a value also among the inputs showed twice. Over 300 grades of one task, no heuristic
    that reads the members' order, spelling, place or where they are written wins more than the group's own
    chance bound says (1/4 for a value inside its class, with room for sampling noise); a value at an end of
    its class gets no group that counts. (A heuristic that happens to prefer this one value, "the word with
    the earliest letters", is a guess: over tasks it wins 1/4, and on this one it is the answer.)"""
    text = f"def test_it():\n    assert compute(data) == {expected}\n\n\n{WORDS_FILE}"
    draws, decoys = 300, 3
    wins: Counter[str] = Counter()
    places: Counter[int] = Counter()
    bounds = set()
    for seed in range(draws):
        found = _members(text, "test_it", seed, decoys)
        if expected in EDGE:
            assert found is None or found[2] == 1.0, found
            continue
        assert found is not None, expected
        values, original, chance, source = found
        assert len(values) == decoys + 1 and values[original] == expected
        places[original] += 1
        bounds.add(chance)
        for name, forger in FORGERS.items():
            wins[name] += forger(values, source) == original
    if expected in EDGE:
        return
    (bound,) = bounds
    assert bound == pytest.approx(1 / (decoys + 1)) and len(places) == decoys + 1, (bound, places)
    assert all(count > draws * bound * 0.7 for count in places.values()), places
    limit = draws * bound + 4 * (draws * bound * (1 - bound)) ** 0.5
    assert all(count <= limit for count in wins.values()), (expected, wins)


def test_near_an_end_of_its_class_the_bound_says_what_a_forger_gains() -> None:
    """15 among the two-digit numbers: a run of 4 fits, but a forger who knows the rule rules out the members
    too near the end to have had a run (11-13): the best such forger (the k-th smallest member that could be
    the original) wins about as often as the group's chance bound says, and more than 1/4."""
    text = f"def test_it():\n    assert compute(data) == 15\n\n\n{WORDS_FILE}"
    draws = 300
    wins: Counter[int] = Counter()
    bounds = set()
    for seed in range(draws):
        found = _members(text, "test_it", seed, 3)
        assert found is not None
        values, original, chance, _ = found
        bounds.add(chance)
        possible = []
        for index, value in enumerate(values):
            own = decoy_values.value_class(value, ast.literal_eval(value), (), NO_SIGHT)
            if own is not None and own.fits(len(values)):
                possible.append(index)
        ranked = sorted(possible, key=lambda i: ast.literal_eval(values[i]))
        for k, index in enumerate(ranked):
            wins[k] += index == original
    (bound,) = bounds
    assert bound == pytest.approx(3 / 4)
    best = max(wins.values()) / draws
    assert abs(best - bound) < 0.08, (best, wins)


def test_a_value_the_issue_states_is_never_the_one_a_group_varies() -> None:
    text = "def test_it():\n    assert total([10, 27]) == 37\n    assert count('x') == 41\n"
    for seed in range(50):
        planting = plant({"t.py": text}, [parse_test_id("t.py::test_it")], random.Random(seed), decoys=3,
                         public="total([10, 27]) gives 36, it should be 37")  # fmt: skip
        source = planting.sources["t.py"]
        assert source.count("== 37") == len(planting.groups[0].members)  # the quoted check never varies
        assert "36" not in source


def test_the_chance_bound_is_reached_by_groups_grown_evenly() -> None:
    text = "def test_it():\n    assert compute(a) == 37\n\n\ndef test_other():\n    assert compute(b) == 52\n"
    names = ["t.py::test_it", "t.py::test_other"]
    targets = [parse_test_id(name) for name in names]
    added = {"t.py": {"assert compute(a) == 37", "assert compute(b) == 52"}}
    inputs = calibrated({"t.py": text}, names)
    planting = plant({"t.py": text}, targets, random.Random(0), added, inputs=inputs)
    assert [group.protective for group in planting.groups] == [True, True]
    assert sorted(len(group.members) for group in planting.groups) == [7, 8]
    assert planting.chance == pytest.approx(1 / 56)
    unseen = calibrated({"t.py": text}, names, added=False)  # the agent saw those lines: nothing protects
    seen = plant({"t.py": text}, targets, random.Random(0), inputs=unseen)
    assert not any(group.protective for group in seen.groups) and seen.chance == 1.0
    uncalibrated = plant({"t.py": text}, targets, random.Random(0), added)  # decoys that catch answer keys
    assert uncalibrated.groups and not any(group.protective for group in uncalibrated.groups)


# -- input leaves ---------------------------------------------------------------------------------------------

COMPUTED = textwrap.dedent(
    '''
    def test_render():
        """Docstrings are no input."""
        expected = layout(width=80)
        assert f"{name}" != "x"
        assert render("north", 37) == expected
    '''
)


def test_leaves_are_the_literals_of_the_tests_last_statement() -> None:
    """What the last statement feeds the code and compares with: a decoy that changes only it runs as the
    original up to there with any code, so where the bug fails the original earlier, the decoy fails alike."""
    tree = ast.parse(COMPUTED)
    function = tree.body[0]
    lines = COMPUTED.splitlines(keepends=True)
    added = {line.strip() for line in lines}
    found = decoy_inputs.candidates("t.py::test_render", function, lines, ("south", "birch", "table"),
                                    NO_SIGHT, added)  # type: ignore[arg-type]  # fmt: skip
    texts = {test_source_text(lines, entry.leaf) for entry in found}
    assert texts == {'"north"', "37"} and all(entry.protective for entry in found)


def test_source_text(lines: list[str], node: ast.expr) -> str:  # not a test: a helper pytest ignores
    return ast.get_source_segment("".join(lines), node) or ""


test_source_text.__test__ = False  # type: ignore[attr-defined]


def test_probes_are_learned_and_planted_again() -> None:
    """A copy that the gold patch and the bug both failed gives its value to the leaf's class; one either of
    them got right does not, nor does any value beyond it (a gap in a group would show where the original
    is: such values are often near it); the class is found again in a later copy of the file and planted as
    an ``input`` group."""
    text = "def test_it():\n    assert compute(37) == compute_expected()\n"
    targets = [parse_test_id("t.py::test_it")]
    added = {"t.py": {"assert compute(37) == compute_expected()"}}
    probing = probe({"t.py": text}, targets, random.Random(1), added)
    ((entry, original, copies),) = probing.probes
    assert len(copies) == len(entry.values) - 1 and len(copies) >= 40
    ast.parse(probing.sources["t.py"])
    index, texts = entry.values.index, entry.values.texts
    assert texts[index] == "37"
    place = {text: copy for text, copy in zip([t for i, t in enumerate(texts) if i != index], copies)}
    gold = {original: "passed", **dict.fromkeys(copies, "failed")}
    gold[place[texts[index - 3]]] = "passed"  # the fix gets 34 right: the class ends above it
    bug = {original: "failed", **dict.fromkeys(copies, "failed")}
    bug[place[texts[index + 5]]] = "passed"  # the bug gets 42 right: the class ends below it
    calibrated = decoy_inputs.both(
        decoy_inputs.learned(probing.probes, gold), decoy_inputs.learned(probing.probes, bug, fixed=False)
    )
    (facts,) = calibrated.values()
    assert facts["texts"] == list(texts[index - 2 : index + 5]) and facts["texts"][facts["index"]] == "37"
    assert not facts["open_low"] and not facts["open_high"]
    planting = plant({"t.py": text}, targets, random.Random(2), added, inputs=calibrated, decoys=2)
    (group,) = planting.groups
    assert group.kind == "input" and group.protective and len(group.members) == 3
    planted = planting.sources["t.py"]
    grown = plant({"t.py": text}, targets, random.Random(2), added, inputs=calibrated)
    (group,) = (
        grown.groups
    )  # the run the bound asks for does not fit in 7 values: a catcher, counting for nothing
    assert not group.protective and grown.chance == 1.0
    assert f"compute({texts[index - 3]})" not in planted and f"compute({texts[index + 5]})" not in planted
