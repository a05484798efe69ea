"""Values for the decoys of a ``literal`` group: the literal a check compares with, and others of the same
form among which the original sits at a uniformly random place.

A group is protection only as far as its members cannot be told apart, so the values are drawn so that no
property a forger can compute singles the original out: every member is a member of the original's *class*
(`value_class`), a finite set fixed by what the forger sees of the original, the same for every member of
it, and the group is a window of that class (in a fixed cyclic order) holding the original at a uniformly
random place. Then, whatever the class, each member of a group is equally likely to be the original: for a
group ``S`` and any member ``x`` of it, exactly one place of ``x`` in the window gives ``S``.

The class of a value keeps what a forger could tell it by:

- its spelling: the same quotes, prefixes, sign, number of digits (leading zeros and ``.5``/``1.``/``2.50``
  spellings kept), the same trailing zeros; a number changes in its last one or two significant digits, a
  word is replaced by another of the same length and case;
- where it is written: a value spelt in the issue or the hints (what the agent reads) has no class (its check
  gets no literal group); the others are left out of every class. A member is written in the pristine test
  files (what the agent saw before the test patch) exactly when the original is; and no member is spelt in
  the test's other literals (its inputs), which the original is not either (else no class).

What it does not keep: how *plausible* a value is for the code under test (a count of 13 where 3 looks
likelier): picking by that is, in effect, part of the fix for those inputs.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from gym_swe.grading import test_source

# Those among them that compare their two first arguments for equality.
_EQUALITY_CALLS = frozenset({
    "assertEqual", "assertEquals", "assertListEqual", "assertTupleEqual", "assertDictEqual",
    "assertSetEqual", "assertSequenceEqual", "assertMultiLineEqual", "assert_equal", "assert_equals",
    "assert_array_equal",
})  # fmt: skip
_TOKEN = re.compile(r"\d*\.\d+|\d+\.?|[A-Za-z]+")
"""How a text is read into tokens for where a value is written: numbers (with a decimal point), words."""
MAX_CLASS = 400
"""At most about this many values of a class are kept (a word class of a large file): those nearest the
original in its order."""
APPROX_RELATIVE = 1e-4
"""A number under ``approx`` changes by at least this share of itself (pytest's tolerance is 1e-6)."""


@dataclass(frozen=True)
class Sight:
    """What the agent and the code under test can see of a value: the tokens of the issue and the hints
    (``public``), of the test files before the test patch (``pristine``), and of the test's own literals
    other than the one that changes (``inputs``), all lower-case."""

    public: frozenset[str] = frozenset()
    pristine: frozenset[str] = frozenset()
    inputs: frozenset[str] = frozenset()

    @staticmethod
    def tokens(text: str) -> frozenset[str]:
        """Numbers as written (``0.25``, ``.5``), and the runs of letters and of digits, lower-case."""
        return frozenset(token.lower() for token in [*_TOKEN.findall(text), *_RUN.findall(text)])

    def allowed(self, original: str) -> bool:
        """Whether a value whose changing part is spelt ``original`` can be a group's (it is in neither what
        the agent reads nor the test's inputs)."""
        key = original.lower()
        return key not in self.public and key not in self.inputs

    def like(self, original: str, candidate: str) -> bool:
        """Whether ``candidate`` is seen where ``original`` is, and nowhere ``original`` is not."""
        key = candidate.lower()
        if key in self.public or key in self.inputs:
            return False
        return (key in self.pristine) == (original.lower() in self.pristine)


def literal_of(statement: ast.stmt) -> ast.expr | None:
    """The literal the check compares with, when there is one to vary."""
    candidates: list[ast.expr] = []
    if isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Compare):
        compare = statement.test
        if len(compare.ops) == 1 and isinstance(compare.ops[0], ast.Eq):
            candidates = [compare.comparators[0], compare.left]
        elif len(compare.ops) == 1 and isinstance(compare.ops[0], (ast.Is, ast.IsNot)):
            right = compare.comparators[0]
            if isinstance(right, ast.Constant) and isinstance(right.value, bool):
                return right
    elif isinstance(statement, ast.Expr) and test_source.callee(statement.value) in _EQUALITY_CALLS:
        call = statement.value
        assert isinstance(call, ast.Call)
        candidates = list(call.args[:2])
    for candidate in candidates:
        unwrapped = _unwrap_approx(candidate)
        if unwrapped is not None and variable_leaves(unwrapped):
            return unwrapped
    return None


def approximate(statement: ast.stmt) -> bool:
    """Whether the check's literal is compared under ``approx``."""
    return any(
        isinstance(node, ast.Call) and test_source.callee(node) == "approx" for node in ast.walk(statement)
    )


def _unwrap_approx(node: ast.expr) -> ast.expr | None:
    """``pytest.approx(L)`` / ``approx(L)`` without tolerances gives L; other calls give None."""
    if isinstance(node, ast.Call):
        if test_source.callee(node) == "approx" and len(node.args) == 1 and not node.keywords:
            return node.args[0]
        return None
    return node


def variable_leaves(node: ast.expr) -> list[ast.expr]:
    """The leaves of a literal whose value a decoy can change (numbers, strings, bytes, bools); [] when
    ``node`` is not a plain literal."""
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool):
            return [node]
        if isinstance(value, (int, float)) and value == value and abs(value) != float("inf"):
            return [node]
        if isinstance(value, (str, bytes)) and _RUN.search(test_source.as_text(value)):
            return [node]
        return []
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
    ):
        value = node.operand.value
        return [node] if isinstance(value, (int, float)) and not isinstance(value, bool) else []
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        parts = [
            variable_leaves(element) if test_source.is_literal(element) else None for element in node.elts
        ]
        if any(part is None for part in parts):
            return []
        return [leaf for part in parts if part for leaf in part]
    if isinstance(node, ast.Dict):
        if not all(key is not None and test_source.is_literal(key) for key in node.keys):
            return []
        values = [variable_leaves(value) if test_source.is_literal(value) else None for value in node.values]
        if any(part is None for part in values):
            return []
        return [leaf for part in values if part for leaf in part]
    return []


@dataclass(frozen=True)
class ValueClass:
    """The values a literal leaf's group is drawn from: ``texts`` (each the leaf's whole source as that member
    has it) in their natural order (numbers by value, words alphabetically), ``index`` the original's place.

    A group is a *run* of ``size`` consecutive values holding the original at a uniformly random place, so
    that the original's rank among the members is uniform whatever it is. The run never leaves the class, so
    a value within ``size - 1`` of an end of it has no group of that size (`fits`); and a forger who knows
    that can rule out the members too near an end. `chance` is what that gives the best forger that picks by
    rank. An end of ``texts`` that is not an end of the value's form (``open_low``/``open_high``: the class
    was cut around the original, where the forger does not know) rules nothing out."""

    texts: tuple[str, ...]
    index: int
    open_low: bool = False
    open_high: bool = False
    full: int = 0
    """How many values the whole class has (before any cut): a forger can count them from any member."""

    def __len__(self) -> int:
        return len(self.texts)

    def fits(self, size: int) -> bool:
        """Whether every run of ``size`` values holding the original stays within the class."""
        return size >= 2 and self.index >= size - 1 and len(self.texts) - 1 - self.index >= size - 1

    @property
    def most(self) -> int:
        """The largest run this class's groups may have: told by the size of the whole class alone (an eighth
        of it, so that for about half its values no member of a run is near an end), never by the original's
        place in it, which the size of its group must not give away."""
        return min(MAX_CLASS // 2, max(2, (self.full or len(self.texts)) // 8 + 1))

    def window(self, size: int, place: int) -> tuple[list[str], int]:
        """The run of ``size`` values with the original at ``place`` among them (``fits(size)`` must hold)."""
        start = self.index - place
        return list(self.texts[start : start + size]), place

    def chance(self, size: int) -> float:
        """The probability that the best forger who picks a member by its rank (among the members that could
        be the original: at least ``size - 1`` values from a known end of the class) picks the original: 1 /
        size away from the ends; more where the members on one side of the original are all ruled out."""
        unbounded = len(self.texts)
        below = unbounded if self.open_low else self.index - (size - 1)
        above = unbounded if self.open_high else len(self.texts) - 1 - self.index - (size - 1)
        return (size - min(size - 1, below, above)) / size


def value_class(
    source: str, value: object, words: Sequence[str], sight: Sight, approximate: bool = False
) -> ValueClass | None:
    """The class of a literal leaf written ``source`` (value ``value``); None when it has none (a value the
    agent reads, one of the test's inputs, a spelling this module does not vary)."""
    if isinstance(value, bool):
        return None  # two values: one end each, so neither has a run that would not give it away
    if isinstance(value, (int, float)):
        texts = _number_class(source, sight, approximate)
    elif isinstance(value, (str, bytes)):
        texts = _string_class(source, words, sight)
    else:
        return None
    if texts is None or len(texts) < 2:
        return None
    values = []
    for text in texts:
        try:
            values.append(ast.literal_eval(text.strip()))
        except (ValueError, SyntaxError):
            return None
    ordered = sorted(zip(values, texts), key=lambda pair: _order(pair[0]))
    texts = [text for _, text in ordered]
    index = texts.index(source)
    if any(other == value for other, text in ordered if text != source):
        return None
    cut, place, low, high = around(texts, index, MAX_CLASS // 2)
    return ValueClass(tuple(cut), place, low, high, len(texts))


def _order(value: object) -> tuple[int, object]:
    """A value's place in its class's natural order: numbers by value, text alphabetically (case aside)."""
    if isinstance(value, (int, float)):
        return (0, value)
    if isinstance(value, bytes):
        return (1, value.lower())
    return (1, str(value).lower())


_NUMBER = re.compile(r"(?P<sign>-?\s*)(?P<digits>\d*\.?\d*)")


def _number_class(source: str, sight: Sight, approximate: bool) -> list[str] | None:
    """Numbers spelt as ``source`` is (sign, digits on each side of the point, trailing zeros) that differ in
    its last one or two significant digits: a single significant digit ranges over 1-9, two over 10-99 with
    a last digit other than 0, keeping the first digit non-zero where the spelling starts with it."""
    match = _NUMBER.fullmatch(source)
    if match is None or not any(char.isdigit() for char in match.group("digits")):
        return None
    sign, digits = match.group("sign"), match.group("digits")
    positions = [index for index, char in enumerate(digits) if char.isdigit()]
    significant = [index for index in positions if digits[index] != "0"]
    if not significant:
        return None  # zero: nothing of its form but itself
    first, last = significant[0], significant[-1]
    varying = [index for index in positions if first <= index <= last][-2:]
    token = digits.lstrip("-")
    if not sight.allowed(token):
        return None
    fillings: list[str] = []
    if len(varying) == 1:
        fillings = [str(digit) for digit in range(1, 10)]
    else:
        low = 1 if varying[0] == first else 0
        fillings = [f"{a}{b}" for a in range(low, 10) for b in range(1, 10)]
    texts = []
    for filling in fillings:
        chars = list(digits)
        for index, char in zip(varying, filling):
            chars[index] = char
        spelt = "".join(chars)
        if spelt != digits and not sight.like(token, spelt):
            continue
        texts.append(sign + spelt)
    if approximate:  # the members must differ by more than approx's tolerance
        unit = 10.0 ** -(len(digits) - digits.index(".") - 1) if "." in digits else 1.0
        scale = abs(float(digits if digits != "." else "0"))
        if scale and unit / scale < APPROX_RELATIVE:
            return None
    return texts


def around(texts: Sequence[str], index: int, radius: int) -> tuple[list[str], int, bool, bool]:
    """The values within ``radius`` places of ``texts[index]`` (a class in its natural order), the original's
    place among them, and whether the class goes on below and above (the cut ends tell a forger nothing: they
    are where the original, which it does not know, puts them)."""
    start, end = max(0, index - radius), min(len(texts), index + radius + 1)
    return list(texts[start:end]), index - start, start > 0, end < len(texts)


_STRING = re.compile(
    r"(?P<prefix>[rRbBuU]{0,2})(?P<quote>\"\"\"|\'\'\'|\"|\')(?P<body>.*)(?P=quote)", re.DOTALL
)
_RUN = re.compile(r"[A-Za-z]+|\d+")


def _string_class(source: str, words: Sequence[str], sight: Sight) -> list[str] | None:
    """Spellings of a string literal that differ in one run of letters or of digits: the first run of the
    literal (in its source order) that has a class. A run of digits keeps its length (and a leading digit
    other than 0 when it has one) and changes in its last one or two digits; a word becomes another word of
    the file of its length, in its case (lower, Title or UPPER), seen where it is seen."""
    for start, token in _pieces(source):
        for run in _runs(token):
            original = run.group()
            head, tail = source[: start + run.start()], source[start + run.end() :]
            if original.isdigit():
                spellings = _digit_runs(original, sight)
            else:
                spellings = _word_runs(original, words, sight)
            if spellings is not None and len(spellings) >= 2:
                return [head + spelling + tail for spelling in spellings]
    return None


def _digit_runs(run: str, sight: Sight) -> list[str] | None:
    if not sight.allowed(run):
        return None
    varying = list(range(len(run)))[-2:]
    low = 1 if varying[0] == 0 and run[0] != "0" else 0
    if len(varying) == 1:
        fillings = [str(digit) for digit in range(low, 10)]
    else:
        fillings = [f"{a}{b}" for a in range(low, 10) for b in range(10)]
    texts = []
    for filling in fillings:
        spelt = run[: varying[0]] + filling
        if spelt == run or sight.like(run, spelt):
            texts.append(spelt)
    return texts


def _case(word: str) -> str:
    if word.isupper() and len(word) > 1:
        return "upper"
    if word[:1].isupper() and word[1:].islower():
        return "title"
    return "lower" if word.islower() else ""


def _word_runs(run: str, words: Sequence[str], sight: Sight) -> list[str] | None:
    case = _case(run)
    if not case or not sight.allowed(run):
        return None
    cased = {"upper": str.upper, "title": str.title, "lower": str.lower}[case]
    pool = sorted(
        {word.lower() for word in words if len(word) == len(run) and word.isalpha()} | {run.lower()}
    )
    texts = [cased(word) for word in pool if word == run.lower() or sight.like(run, word)]
    return texts if run in texts else None


def _pieces(source: str) -> list[tuple[int, str]]:
    """The string tokens of a literal's source, with their offsets in it."""
    wrapped = f"({source})"
    starts = [0]
    for line in wrapped.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(wrapped).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    return [
        (starts[token.start[0] - 1] + token.start[1] - 1, token.string)
        for token in tokens
        if token.type == tokenize.STRING
    ]


def _runs(token: str) -> list[re.Match[str]]:
    """The runs of letters or digits in a string token's body that a decoy may change: none in a token with
    escapes (unless raw), none touching its quotes or prefix."""
    match = _STRING.fullmatch(token)
    if match is None or ("\\" in match.group("body") and "r" not in match.group("prefix").lower()):
        return []
    offset = match.start("body")
    body = match.group("body")
    return [run for run in _RUN.finditer(token, offset, offset + len(body))]


def inputs(function: ast.AST, leaf: ast.expr, statement: Collection[ast.AST] = ()) -> frozenset[str]:
    """The tokens (lower-case words and numbers) of the test's literals other than ``leaf``: its inputs, and
    the other parts of the check's literal."""
    found: set[str] = set()
    inside = {id(node) for node in ast.walk(leaf)}
    for node in ast.walk(function):
        if id(node) in inside or not isinstance(node, ast.Constant) or isinstance(node.value, bool):
            continue
        if isinstance(node.value, (str, bytes)):
            found |= Sight.tokens(test_source.as_text(node.value))
        elif isinstance(node.value, (int, float)):
            found |= Sight.tokens(repr(abs(node.value)))
    return frozenset(found)
