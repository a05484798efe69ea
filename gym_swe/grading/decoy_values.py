"""Values for the decoys of a ``literal`` group: the literal a check compares with, and others spelt as it is
(quotes, prefixes, decimals) among which the original sits at a random place, made to look like it: the words
and digit runs of the test's own inputs first, the file's words next, numbers in an arithmetic run.
"""

from __future__ import annotations

import ast
import io
import random
import re
import tokenize
from collections.abc import Sequence

from gym_swe.grading import test_source

# Those among them that compare their two first arguments for equality.
_EQUALITY_CALLS = frozenset({
    "assertEqual", "assertEquals", "assertListEqual", "assertTupleEqual", "assertDictEqual",
    "assertSetEqual", "assertSequenceEqual", "assertMultiLineEqual", "assert_equal", "assert_equals",
    "assert_array_equal",
})  # fmt: skip


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


def alternatives(
    source: str,
    value: object,
    count: int,
    words: Sequence[str],
    rng: random.Random,
    local: Sequence[str] = (),
) -> tuple[list[str], int] | None:
    """``count + 1`` distinct source texts for a literal leaf written ``source`` (value ``value``), spelt as
    it is (quotes, prefixes, decimals), and the index of the original among them, uniformly random; None when
    there are not enough. For the runs of strings: ``local``, the words and digit runs of the test's own other
    literals (its inputs), first, then ``words``, the file's."""
    slot = rng.randrange(count + 1)
    if isinstance(value, bool):
        if count != 1:
            return None
        texts = [source, str(not value)] if slot == 0 else [str(not value), source]
    elif isinstance(value, int):
        if not re.fullmatch(r"-?\s*\d+", source):
            return None
        # An arithmetic run whose step is larger than the number of group members, so that a counter the
        # tests share, moved by the members that run before, cannot meet a decoy's value.
        step = rng.randint(count + 2, 4 * count + 4)
        if value >= 0:  # no negative decoy beside a count or a size: the original's place among the
            # members is drawn among those that keep every value non-negative
            slot = rng.choice([index for index in range(count + 1) if value - step * index >= 0])
        texts = [str(value + step * (index - slot)) for index in range(count + 1)]
        texts[slot] = source
    elif isinstance(value, float):
        decimals = re.fullmatch(r"-?\s*\d*\.(\d*)", source)
        if decimals is None:
            return None
        places = max(len(decimals.group(1)), 1)
        unit = 10.0**-places
        scale = max(abs(value) * rng.uniform(0.2, 0.6), rng.uniform(0.5, 2.0))
        float_step = max(round(scale / unit), count + 2) * unit
        texts = [f"{value + float_step * (index - slot):.{places}f}" for index in range(count + 1)]
        texts[slot] = source
    elif isinstance(value, (str, bytes)):
        spelt = _string_variants(source, count, slot, words, rng, local)
        if spelt is None:
            return None
        texts = spelt
    else:
        return None
    values = []
    for text in texts:
        try:
            values.append(ast.literal_eval(text.strip()))
        except (ValueError, SyntaxError):
            return None
    if len(set(texts)) != count + 1 or any(other == value for i, other in enumerate(values) if i != slot):
        return None
    return texts, slot


_STRING = re.compile(
    r"(?P<prefix>[rRbBuU]{0,2})(?P<quote>\"\"\"|\'\'\'|\"|\')(?P<body>.*)(?P=quote)", re.DOTALL
)


_RUN = re.compile(r"[A-Za-z]+|\d+")


def _string_variants(
    source: str, count: int, slot: int, words: Sequence[str], rng: random.Random, local: Sequence[str] = ()
) -> list[str] | None:
    """``count + 1`` spellings of a string literal that differ in one run of letters or of digits (the
    original at ``slot``). A run of digits becomes other digits; a word becomes another word of the file of
    about its length, in its case, those of the test's own inputs (``local``) and those of its length first:
    a bug's output is made of its inputs, so a decoy's value must look made of them too. Of a literal written
    in pieces (``"ab" "cd"``) one piece changes; None where no piece has a run outside escapes."""
    pieces = [piece for piece in _pieces(source) if _runs(piece[1])]
    if not pieces:
        return None
    start, token = rng.choice(pieces)
    run = rng.choice(_runs(token))
    original = run.group()
    seen = {original.lower()}
    if original.isdigit():
        near = [run for run in local if run.isdigit() and len(run) == len(original)]
        rng.shuffle(near)
        candidates = near + [_digits(original, rng) for _ in range(20 * count)]
    else:
        candidates = (
            _words_like(original, [word for word in local if word.isalpha()], rng, exact=True)
            + _words_like(original, words, rng, exact=True)
            + _words_like(original, words, rng)
            + [_letters(original, rng) for _ in range(20 * count)]
        )
    replacements: list[str] = []
    for candidate in candidates:
        if len(replacements) == count:
            break
        if candidate.lower() not in seen:
            seen.add(candidate.lower())
            replacements.append(candidate)
    if len(replacements) < count:
        return None
    replacements.insert(slot, original)
    head, tail = source[: start + run.start()], source[start + run.end() :]
    return [head + replacement + tail for replacement in replacements]


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


def _digits(run: str, rng: random.Random) -> str:
    first = "123456789" if len(run) > 1 and run[0] != "0" else "0123456789"
    return rng.choice(first) + "".join(rng.choice("0123456789") for _ in run[1:])


def _words_like(run: str, words: Sequence[str], rng: random.Random, exact: bool = False) -> list[str]:
    """Words of about ``run``'s length (of its length with ``exact``), in random order, cased as it is."""
    near = [word for word in words if abs(len(word) - len(run)) <= (0 if exact else 2) and word.isalpha()]
    rng.shuffle(near)
    if run.isupper() and len(run) > 1:
        return [word.upper() for word in near]
    if run[:1].isupper():
        return [word.title() for word in near]
    return near


def _letters(run: str, rng: random.Random) -> str:
    """A made-up word of ``run``'s shape (the last resort, when the file has too few words)."""
    letters = []
    for char in run:
        letter = rng.choice("aeiou" if char.lower() in "aeiou" else "bcdfghjklmnpqrstvwxz")
        letters.append(letter.upper() if char.isupper() else letter)
    return "".join(letters)


def occurrences(function: ast.AST, value: object) -> int:
    """How many literals of the test have ``value`` (of its type)."""
    return sum(
        1
        for node in ast.walk(function)
        if isinstance(node, ast.Constant) and type(node.value) is type(value) and node.value == value
    )


def inputs(function: ast.AST, leaf: ast.expr) -> list[str]:
    """The lower-case words and the digit runs of the test's literals other than ``leaf`` (its inputs)."""
    found: list[str] = []
    for node in ast.walk(function):
        if node is leaf or not isinstance(node, ast.Constant):
            continue
        if isinstance(node.value, (str, bytes)):
            found += [run.lower() for run in _RUN.findall(test_source.as_text(node.value))]
        elif isinstance(node.value, int) and not isinstance(node.value, bool):
            found.append(str(abs(node.value)))
    return list(dict.fromkeys(found))
