"""What a dataset's test id is: the SWE-bench / SWE-Gym ``FAIL_TO_PASS`` / ``PASS_TO_PASS`` strings, parsed.

The datasets list tests as the strings SWE-bench's log parsers pulled out of ``pytest -rA`` (or Django's or
sympy's runner) output. A task record holds them (the loaders drop the ids that name no test at all), and the
grader runs their files and finds each one's outcome in pytest's report (`gym_swe.grading.test_ids`). What an
id says is part of the task, so it is read here, below both. The ids' real-world quirks:

1. **pytest node ids**: ``path/to/test_x.py::TestClass::test_name[param]``, ``path::test_name``, nested
   classes (``astropy/units/tests/test_quantity_ufuncs.py::TestUfuncReturnsNotImplemented::TestBinaryUfuncs::
   test_basic[duck_quantity0-quantity0-add]``).
2. **Ids cut at the first space.** SWE-bench splits each ``PASSED <id>`` line on whitespace, so pytest's
   ``tests/test_fmt.py::test_pad[hello world-10]`` is in the dataset as ``tests/test_fmt.py::test_pad[hello``
   (no closing ``]``). One cut id stands for every real test whose id is the cut id followed by whitespace:
   ``sphinx``'s ``tests/test_pycode_ast.py::test_unparse[a`` covers ``test_unparse[a + b]``,
   ``test_unparse[a and b]``, ... (407 of the 39,176 distinct ids in SWE-bench Lite + Verified are cut).
3. **Path parameters reduced to a file name.** For requests, pylint (and pydicom) SWE-bench's
   ``parse_log_pytest_options`` rewrites a parameter part that starts with ``/`` to ``/`` plus its last path
   component: pylint's ``tests/test_self.py::TestRunTC::test_stdin[/testbed/tests/mymodule.py-mymodule-
   /testbed/tests/mymodule.py]`` is in the dataset as ``...::test_stdin[/mymodule.py]``, requests'
   ``test_unzipped_paths_unchanged[<pytest.__file__>]`` as ``...[/__init__.py]``. Paths under ``tmp_path`` or
   the checkout also differ from machine to machine (``/tmp/pytest-of-root/pytest-0/...`` against
   ``/tmp/pytest-of-me/pytest-7/...``). `normalise` therefore reduces absolute paths inside the brackets to
   their base names, on both sides.
4. **Other parameter oddities**, all kept verbatim except as `normalise` says: pytest's escapes of non-ASCII
   text (``test_unicode[\\u212b-unit12]``, ``test_preparing_url[http://K\\xf6nigsg...]``; bytes params give
   ``\\xc3\\xb6``, a different test), quotes (``['b',``), ``-`` between the values of several parameters,
   nested brackets
   (``test_column_transformer_verbose[fit_transform-est6-\\\\[ColumnTransformer\\\\].*\\\\(1``),
   parameters hundreds of characters long, ``::`` inside a parameter (``test_ischildnode[foo/bar::TestBaz-
   foo/bar-False]``, ``test_errors[http://fe80::5054:ff:fe5a:fc0-InvalidURL]``).
5. **Ids pytest cannot run**: Django's runner ``test_name (module.ClassName)`` and, on newer Django,
   ``test_name (module.ClassName.test_name)``; first lines of docstrings, which Django prints instead of the
   name ("Named URLs should be reversible"); sympy's bare function names ``test_foo``; and stray log fragments
   (``[100%]``). `parse_test_id` classifies them; `unsupported` lists them; they always match "not_run".
   Log fragments name no test at all (`is_log_fragment`): task loaders drop them with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["STYLES", "TestId", "files_to_run", "is_log_fragment", "normalise", "parse_test_id", "unsupported"]

STYLES = ("pytest", "django", "sympy", "description")
"""The kinds of dataset ids. Only "pytest" ids can be run by our grader."""

# --- parsing -----------------------------------------------------------------------------------------------

# ``file.py::Name::name`` up to the first "[" (a file path holds no whitespace, "[" or "]"; the names between
# the "::" are identifiers, or dotted names for doctest items).
_PYTEST = re.compile(r"(?P<file>[^\s\[\]:]+\.py)(?P<names>(?:::[^\s\[\]:]+)+)(?:\[(?P<param>.*))?", re.DOTALL)
# ``test_name (module.Class)`` and newer Django's ``test_name (module.Class.test_name)``.
_DJANGO = re.compile(r"[^\W\d]\w* \([^\W\d]\w*(?:\.[^\W\d]\w*)+\)")
# sympy's runner prints bare function names.
_SYMPY = re.compile(r"test\w*")


@dataclass(frozen=True)
class TestId:
    """One dataset test id, parsed. Made by `parse_test_id`.

    >>> t = parse_test_id("tests/test_fmt.py::TestPad::test_pad[hello")
    >>> t.style, t.file, t.node, t.param, t.cut
    ('pytest', 'tests/test_fmt.py', 'tests/test_fmt.py::TestPad::test_pad', 'hello', True)
    """

    __test__ = False  # a class named Test* that pytest must not try to collect

    raw: str
    """The id exactly as in the dataset."""
    style: str
    """"pytest", "django", "sympy" or "description" (anything else: docstring lines, log fragments)."""
    file: str | None
    """pytest: the test file, ``"tests/test_x.py"``; otherwise None."""
    node: str | None
    """pytest: the node id without its parameter part, ``"tests/test_x.py::TestC::test_y"``; else None."""
    param: str | None
    """pytest: the text inside ``[...]`` as given (for a cut id: everything after the ``[``, no ``]``); None
    for an unparametrised test and for other styles."""
    cut: bool
    """True when the id was cut at a space by SWE-bench's log parser: it has a ``[`` but does not end in ``]``
    (pytest's ids always do). Such an id stands for every test whose id starts with it plus whitespace."""
    key: str
    """``normalise(raw)``: what the id is matched by when it is not found verbatim."""


def parse_test_id(raw: str) -> TestId:
    """Parse a dataset id; never raises. Unknown shapes are "description".

    >>> parse_test_id("xarray/tests/test_units.py::TestDataArray::test_isel[int64-single").cut
    True
    >>> parse_test_id("test_reverse (urlpatterns.tests.SimplifiedURLTests)").style
    'django'
    >>> parse_test_id("test_issue_22534").style
    'sympy'
    >>> parse_test_id("Named URLs should be reversible").style
    'description'
    """
    key = normalise(raw)
    match = _PYTEST.fullmatch(raw)
    if match is not None:
        file, param = match.group("file"), match.group("param")
        node = file + match.group("names")
        cut = param is not None and not param.endswith("]")
        if param is not None and not cut:
            param = param[:-1]
        return TestId(raw, "pytest", file, node, param, cut, key)
    if _DJANGO.fullmatch(raw):
        style = "django"
    elif _SYMPY.fullmatch(raw):
        style = "sympy"
    else:
        style = "description"
    return TestId(raw, style, None, None, None, False, key)


# --- normalisation -----------------------------------------------------------------------------------------

# pytest escapes non-ASCII text in ids the way ``str.encode("unicode_escape")`` does (``\xb5``, ``\u212b``,
# ``\U0001f600``), and a backslash itself as ``\\``. Escaped backslashes are matched (and kept) as a pair
# so that ``\\xb5`` (a backslash, then "xb5") is not mistaken for an escape.
_ESCAPE = re.compile(r"\\(?:(\\)|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8}))")
_ASCII_SPACE = re.compile(r"[ \t\n\r\f\v]+")
# What can stand right before the "/" that starts an absolute path inside a parameter: the start of the
# parameter (or of a space-separated word in it), pytest's "-" between parameter values, and punctuation.
_BEFORE_PATH = frozenset("-=,;(['\"")


def _decode_escape(match: re.Match[str]) -> str:
    if match.group(1):
        return match.group(0)
    code = int(match.group(2) or match.group(3) or match.group(4), 16)
    # Only escapes of non-ASCII characters are decoded: the result can then never form a new escape, which
    # keeps `normalise` idempotent. (``\x00``, ``\t``, ``\n`` stay as pytest writes them.)
    if code < 0x80 or code > 0x10FFFF:
        return match.group(0)
    return chr(code)


def _reduce_path_word(word: str) -> str:
    """Cut an absolute path in a space-free word of a parameter down to its base name.

    From the first "/" that starts a path (see ``_BEFORE_PATH``; "//" as in URLs does not) through the
    word's last "/" is removed, as SWE-bench's ``parse_log_pytest_options`` does to a parameter that starts
    with "/" (it keeps a leading "/", which we drop too so that a bare file name matches). Words with a "*"
    (globs) are left alone, as that parser does.
    """
    if "/" not in word or "*" in word:
        return word
    for index, char in enumerate(word):
        if (
            char == "/"
            and (index == 0 or word[index - 1] in _BEFORE_PATH)
            and not word.startswith("/", index + 1)
        ):
            return word[:index] + word[word.rfind("/") + 1 :]
    return word


def normalise(node_id: str) -> str:
    """The matching key of a test id: the same function for dataset ids and for ids from a report.

    - pytest's escapes of non-ASCII characters are decoded (``\\xb5g`` and ``µg`` give the same key; the
      bytes form ``\\xc2\\xb5g`` stays a different test), escaped backslashes ``\\\\`` are kept as they are;
    - runs of ASCII whitespace become one space, and the ends are stripped;
    - in the parameter part (from the first ``[``), each space-free word's absolute path is reduced to its
      base name, so SWE-bench's ``test_stdin[/mymodule.py]``, the real
      ``test_stdin[/testbed/tests/mymodule.py-mymodule-/testbed/tests/mymodule.py]`` and a plain
      ``test_stdin[mymodule.py]`` all give ``...::test_stdin[mymodule.py]``, and ``test_x[data.csv]`` matches
      ``test_x[/tmp/pytest-of-root/pytest-0/test_x0/data.csv]``. Relative paths (``subdir/images.html``) and
      URLs (``http://a/b``, ``//example.com/path``) are left alone.

    Idempotent: ``normalise(normalise(x)) == normalise(x)`` for every string.

    >>> normalise("t.py::test_stdin[/testbed/tests/mymodule.py-mymodule-/testbed/tests/mymodule.py]")
    't.py::test_stdin[mymodule.py]'
    >>> normalise("t.py::test_unicode[\\\\xb5g-unit0]") == normalise("t.py::test_unicode[µg-unit0]")
    True
    """
    text = _ASCII_SPACE.sub(" ", _ESCAPE.sub(_decode_escape, node_id))
    head, bracket, param = text.partition("[")
    if bracket and "/" in param:
        # A word that was only a path ("/x/") leaves two spaces in a row; they are collapsed again below.
        param = " ".join(_reduce_path_word(word) for word in param.split(" "))
        text = _ASCII_SPACE.sub(" ", head + bracket + param)
    return text.strip(" ")


# --- what to run -------------------------------------------------------------------------------------------


def files_to_run(ids: Iterable[str]) -> list[str]:
    """The sorted, unique test files of the pytest-style ids (the others cannot be run by pytest).

    >>> files_to_run(["b/test_b.py::test_x[1", "a/test_a.py::T::test_y", "a/test_a.py::test_z", "test_foo"])
    ['a/test_a.py', 'b/test_b.py']
    """
    files = {test.file for test in map(parse_test_id, ids) if test.file is not None}
    return sorted(files)


# What SWE-bench's log parser picked up from pytest's progress lines (``[100%]``, ``[``,
# ``[100%]------``): brackets, digits, percent signs, rules and spaces, and nothing that could name a test.
_LOG_FRAGMENT = re.compile(r"[\s\[\]\d%=\-]*")


def is_log_fragment(raw: str) -> bool:
    """True for a dataset id that is a stray piece of pytest's progress output, not a test of any runner.

    >>> [is_log_fragment(raw) for raw in ("[100%]", "[", "[100%]------", "test_x", "t.py::test[1]")]
    [True, True, True, False, False]
    """
    return _LOG_FRAGMENT.fullmatch(raw) is not None


def unsupported(ids: Iterable[str]) -> list[str]:
    """The ids that are not pytest style (Django, sympy, descriptions), each once, in the order given."""
    seen: dict[str, None] = {}
    for raw in ids:
        if raw not in seen and parse_test_id(raw).style != "pytest":
            seen[raw] = None
    return list(seen)
