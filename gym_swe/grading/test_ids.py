"""Dataset test ids (SWE-bench / SWE-Gym ``FAIL_TO_PASS`` / ``PASS_TO_PASS``) against what pytest reports.

The datasets list tests as the strings SWE-bench's log parsers pulled out of ``pytest -rA`` (or Django's or
sympy's runner) output. Our grader runs pytest itself and reads the per-test outcomes from a JUnit XML report
(``--junitxml`` with ``-o junit_family=xunit1``). This module turns the dataset ids into (a) the test files to
run and (b) a way to find each id's outcome in the report, despite the ids' real-world quirks:

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
import xml.etree.ElementTree as ElementTree
from bisect import bisect_left
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gym_swe.errors import GradingError

__all__ = [
    "STYLES",
    "JUnitReportError",
    "TestId",
    "files_to_run",
    "is_log_fragment",
    "junit_outcomes",
    "match_outcomes",
    "normalise",
    "parse_test_id",
    "unsupported",
]

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


# --- JUnit XML ---------------------------------------------------------------------------------------------


class JUnitReportError(GradingError, ValueError):
    """A JUnit XML report could not be read (malformed, truncated, or not a JUnit report)."""


# Worst last. Outcomes not listed rank with "failed".
_SEVERITY = {"passed": 0, "skipped": 1, "not_run": 2, "failed": 3, "timeout": 4, "error": 5}
_DOCTYPE = re.compile(r"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)


def _worst(outcomes: Iterable[str]) -> str:
    return max(outcomes, key=lambda outcome: _SEVERITY.get(outcome, _SEVERITY["failed"]))


def _case_outcome(case: ElementTree.Element) -> str:
    tags = {child.tag for child in case}
    if "error" in tags:
        return "error"
    if "failure" in tags:
        return "failed"
    if "skipped" in tags:
        return "skipped"  # xfail too: <skipped type="pytest.xfail">
    return "passed"


def _module_file(dotted: list[str]) -> str:
    return "/".join(dotted) + ".py"


def _case_node_id(case: ElementTree.Element) -> str | None:
    """Rebuild ``file::Class::name`` from an xunit1 ``<testcase>``.

    pytest writes ``classname`` as the node id's path with "/" turned into "." and ".py" dropped, then the
    classes, joined by "."; ``name`` is the last part with its parameters; ``file`` is the file the test's
    code is in, relative to the rootdir. The classes are what ``classname`` has beyond ``file``'s module.
    Where ``file`` is missing (xunit2) or is another file (a test method inherited from a class in another
    module: ``file="tests/base.py"``, ``classname="tests.test_x.TestChild"``), the classes are taken to be
    the trailing parts of ``classname`` that start with a capital letter. A collection error has an empty
    ``classname`` and the module as ``name``; it is keyed by the file alone.
    """
    name = case.get("name")
    if not name:
        return None
    file = (case.get("file") or "").replace("\\", "/")
    classname = case.get("classname") or ""
    parts = [part for part in classname.split(".") if part and part != "()"]
    if not parts:  # the file itself: a collection error or a module-level skip
        if file.endswith(".py"):
            return file
        return _module_file([part for part in name.split(".") if part])
    if file.endswith(".py"):
        module = [part for part in file[: -len(".py")].replace("/", ".").split(".") if part]
        if parts[: len(module)] == module:
            return "::".join([file, *parts[len(module) :], name])
    classes = 0
    while classes < len(parts) - 1 and parts[len(parts) - 1 - classes][:1].isupper():
        classes += 1
    module_parts = parts[: len(parts) - classes]
    return "::".join([_module_file(module_parts), *parts[len(module_parts) :], name])


def junit_outcomes(xml_text: str | bytes) -> dict[str, str]:
    """Node id -> outcome from a pytest JUnit XML report (xunit1: ``file``, ``classname``, ``name``).

    ``<error>`` -> "error", ``<failure>`` -> "failed" (a strict XPASS too), ``<skipped>`` -> "skipped" (an
    xfail too), otherwise "passed". A test that fails and then errors in teardown has two ``<testcase>``
    elements; the worst outcome wins. A file that failed to collect is keyed by its path alone
    (``"tests/test_x.py": "error"``). Node ids are relative to pytest's rootdir, as pytest's own are.

    >>> junit_outcomes('<testsuites><testsuite><testcase classname="tests.test_x.TestA" name="test_b[1 2]" '
    ...                'file="tests/test_x.py" line="3"><failure message="boom"/></testcase></testsuite>'
    ...                '</testsuites>')
    {'tests/test_x.py::TestA::test_b[1 2]': 'failed'}

    Raises `JUnitReportError` (a ValueError) for malformed or truncated XML and for XML that is no JUnit
    report. Document type declarations are refused: pytest never writes one, and they can expand entities.
    """
    # Bytes go to the parser as they are, so that the encoding the report declares is honoured.
    text = xml_text.decode("latin-1") if isinstance(xml_text, bytes) else xml_text
    if not text.strip():
        raise JUnitReportError("Malformed JUnit XML report: the report is empty.")
    if _DOCTYPE.search(text):
        raise JUnitReportError("Refusing a JUnit XML report with a DOCTYPE or ENTITY declaration.")
    try:
        root = ElementTree.fromstring(xml_text)
    except ElementTree.ParseError as error:
        raise JUnitReportError(f"Malformed JUnit XML report ({error}).") from None
    if root.tag not in ("testsuites", "testsuite"):
        raise JUnitReportError(
            f"Not a JUnit XML report: the root element is <{root.tag}>, not <testsuites> or <testsuite>."
        )
    outcomes: dict[str, str] = {}
    for case in root.iter("testcase"):
        node_id = _case_node_id(case)
        if node_id is None:
            continue
        outcome = _case_outcome(case)
        outcomes[node_id] = _worst((outcomes[node_id], outcome)) if node_id in outcomes else outcome
    return outcomes


# --- matching ----------------------------------------------------------------------------------------------


class _Report:
    """A report's outcomes indexed by exact id, by key, by key prefix and by file."""

    def __init__(self, outcomes: Mapping[str, str]) -> None:
        self.exact = dict(outcomes)
        self.by_key: dict[str, list[str]] = {}
        self.file_level: dict[str, str] = {}
        self.files: set[str] = set()
        for report_id, outcome in self.exact.items():
            parsed = parse_test_id(report_id)
            self.by_key.setdefault(parsed.key, []).append(report_id)
            if parsed.file is not None:
                self.files.add(parsed.file)
            elif report_id.endswith(".py") and not any(char.isspace() for char in report_id):
                self.file_level[report_id] = outcome  # junit_outcomes' key for a collection error
                self.files.add(report_id)
        self.keys = sorted(self.by_key)

    def localise(self, test: TestId) -> tuple[str, str]:
        """The id and file of a pytest-style ``test`` as the report would have them.

        pytest's ids are relative to its rootdir, SWE-bench's to the directory pytest ran in, so
        ``pkg/tests/test_x.py::t`` may be ``tests/test_x.py::t`` in the report, or the reverse. The file is
        rewritten only when it is not in the report and exactly one report file is it seen from elsewhere.
        """
        raw, file = test.raw, test.file or ""
        if file not in self.files:
            near = [other for other in self.files if other.endswith("/" + file) or file.endswith("/" + other)]
            if len(near) == 1:
                return near[0] + raw[len(file) :], near[0]
        return raw, file

    def fuzzy(self, key: str, cut: bool) -> list[str]:
        """The report ids that an id with this key stands for, when the id is not in the report verbatim."""
        found = list(self.by_key.get(key, ()))
        if cut or not found:
            # A cut id covers every id that is it plus a space and more; an id that looks whole may have been
            # cut right after a "]" (``test_x[a] b]`` -> ``test_x[a]``), so it is looked up the same way.
            prefix = key + " "
            for index in range(bisect_left(self.keys, prefix), len(self.keys)):
                if not self.keys[index].startswith(prefix):
                    break
                found.extend(self.by_key[self.keys[index]])
        return found


def _aggregate(outcomes: list[str]) -> str:
    if all(outcome == "passed" for outcome in outcomes):
        return "passed"
    return _worst(outcomes)


def match_outcomes(
    ids: Iterable[str], outcomes: Mapping[str, str], matched: dict[str, list[str]] | None = None
) -> dict[str, str]:
    """Dataset id -> outcome, looked up in a report's ``node id -> outcome`` (e.g. from `junit_outcomes`).

    Pass all of a task's ids (FAIL_TO_PASS and PASS_TO_PASS) in one call. For each pytest-style id:

    1. its file is taken as the report has it: when the report has no such file but exactly one file that is
       it seen from another directory (``pkg/tests/test_x.py`` against ``tests/test_x.py``; a report's ids
       are relative to pytest's rootdir, SWE-bench's to where pytest ran), the id is rewritten to that file;
    2. the id is in the report verbatim: its outcome;
    3. otherwise, the report ids with the same `normalise` key (``test_stdin[/mymodule.py]`` against
       ``test_stdin[/testbed/tests/mymodule.py-mymodule-/testbed/tests/mymodule.py]``), and, for a cut id
       (``test_pad[hello``), also every report id whose key is the id's key, a space, and more
       (``test_pad[hello world-10]`` and ``test_pad[hello there-5]``; not ``test_pad[hellos]``). An id that
       looks whole takes those longer ids only when no key matched (it may have been cut after a ``]``).
       Report ids that are verbatim one of the other given ids are left to that id (flask's
       ``test_blueprint_prefix_slash[/-/-/]`` and ``[/--/]`` have the same key, and each finds itself);
    4. with nothing found, the outcome of the id's whole file if the report has one and it is not "passed"
       (a collection error, a module-level skip: such an entry can fail a test, never pass it);
    5. otherwise "not_run".

    Several matches give "passed" only if all passed, else the worst (error > timeout > failed > not_run >
    skipped). Ids that are not pytest style (Django, sympy, descriptions) are "not_run".

    ``matched``, when given, receives each id's report ids (those its outcome was taken from).

    >>> report = {"t.py::test_pad[hello world-10]": "passed", "t.py::test_pad[hello there-5]": "failed"}
    >>> match_outcomes(["t.py::test_pad[hello", "t.py::test_gone"], report)
    {'t.py::test_pad[hello': 'failed', 't.py::test_gone': 'not_run'}
    """
    report = _Report(outcomes)
    tests = {raw: parse_test_id(raw) for raw in ids}
    local = {raw: report.localise(test) for raw, test in tests.items() if test.style == "pytest"}
    claimed = {report_id for report_id, _ in local.values() if report_id in report.exact}
    result: dict[str, str] = {}
    for raw, test in tests.items():
        if raw not in local:
            result[raw] = "not_run"
            continue
        report_id, file = local[raw]
        if report_id in report.exact:
            found = [report_id]
        else:
            found = [other for other in report.fuzzy(normalise(report_id), test.cut) if other not in claimed]
        if matched is not None:
            matched[raw] = list(found)
        if found:
            result[raw] = _aggregate([report.exact[other] for other in found])
        else:
            # A file-level entry stands for a collection error or a module-level skip: it can fail a test,
            # never pass one (a report that only says "the file passed" names no test that ran).
            whole = report.file_level.get(file, "not_run")
            result[raw] = whole if whole != "passed" else "not_run"
    return result
