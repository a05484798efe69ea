"""Dataset test ids (SWE-bench / SWE-Gym ``FAIL_TO_PASS`` / ``PASS_TO_PASS``) against what pytest reports.

Our grader runs pytest itself and takes the per-test outcomes from the stream the run writes as each test ends
(`gym_swe.grading.outcome_stream`), keyed as pytest's JUnit XML report (``--junitxml`` with ``-o
junit_family=xunit1``) keys them (`junit_node_id`); the report itself is read as a cross-check. This module
reads that report (`junit_outcomes`) and finds each dataset id's outcome among the outcomes
(`match_outcomes`), despite the ids' real-world quirks: ids cut at the first space, path
parameters reduced to a file name, escapes, ids pytest cannot run. What an id is, and those quirks, are
described where ids are parsed, in `gym_swe.tasks.test_ids` (a task's ids are part of the task); its names
are importable from here too.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from bisect import bisect_left
from collections.abc import Iterable, Mapping

from gym_swe.errors import GradingError
from gym_swe.tasks.test_ids import (
    STYLES,
    TestId,
    files_to_run,
    is_log_fragment,
    normalise,
    parse_test_id,
    unsupported,
)

__all__ = [
    "STYLES",
    "JUnitReportError",
    "TestId",
    "files_to_run",
    "is_log_fragment",
    "junit_node_id",
    "junit_outcomes",
    "match_outcomes",
    "normalise",
    "parse_test_id",
    "unsupported",
]

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
    return junit_node_id(case.get("name"), case.get("classname"), case.get("file"))


def junit_node_id(name: str | None, classname: str | None, file: str | None) -> str | None:
    """Rebuild ``file::Class::name`` from an xunit1 ``<testcase>``.

    pytest writes ``classname`` as the node id's path with "/" turned into "." and ".py" dropped, then the
    classes, joined by "."; ``name`` is the last part with its parameters; ``file`` is the file the test's
    code is in, relative to the rootdir. The classes are what ``classname`` has beyond ``file``'s module.
    Where ``file`` is missing (xunit2) or is another file (a test method inherited from a class in another
    module: ``file="tests/base.py"``, ``classname="tests.test_x.TestChild"``), the classes are taken to be
    the trailing parts of ``classname`` that start with a capital letter. A collection error has an empty
    ``classname`` and the module as ``name``; it is keyed by the file alone.
    """
    if not name:
        return None
    file = (file or "").replace("\\", "/")
    classname = classname or ""
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
