"""Dataset test ids against pytest's report: real ids from SWE-bench Lite and Verified, with the ids pytest
prints for them, and a real pytest run whose JUnit report is matched back to ids written the SWE-bench way."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gym_swe.grading.test_ids import (
    STYLES,
    JUnitReportError,
    files_to_run,
    junit_outcomes,
    match_outcomes,
    normalise,
    parse_test_id,
)
from tests.tasks.test_test_ids import IDS

SWE_BENCH = Path(__file__).resolve().parents[3] / "shared" / "data" / "swe-bench"
PARQUETS = ("SWE-bench_Lite-test.parquet", "SWE-bench_Verified-test.parquet")


# --- cut ids: one dataset id, several real tests ------------------------------------------------------------

CUT = [
    # A cut id from the data; ids pytest prints that it stands for, and ids it must not take. The report-side
    # ids are what pytest prints for those tests' parameters (sphinx's test_unparse has ("a + b", "a + b"),
    # ("(1, 2, 3)", "(1, 2, 3)"), ("(1,)", "(1,)"), ("1234", "1234") twice, ...); where the full parameter is
    # not known, one of that shape.
    (
        "tests/test_pycode_ast.py::test_unparse[(1,",
        ["tests/test_pycode_ast.py::test_unparse[(1, 2, 3)-(1, 2, 3)]"],
        ["tests/test_pycode_ast.py::test_unparse[(1,)-(1,)]"],
    ),
    (
        "tests/test_pycode_ast.py::test_unparse[a",
        [
            "tests/test_pycode_ast.py::test_unparse[a + b-a + b]",
            "tests/test_pycode_ast.py::test_unparse[a and b-a and b]",
            "tests/test_pycode_ast.py::test_unparse[a or b-a or b]",
        ],
        ["tests/test_pycode_ast.py::test_unparse[sys-sys]", "tests/test_pycode_ast.py::test_unparse[ab-ab]"],
    ),
    (
        "tests/test_pycode_ast.py::test_unparse[1",
        ["tests/test_pycode_ast.py::test_unparse[1 + 2-1 + 2]"],
        [
            "tests/test_pycode_ast.py::test_unparse[1234-1234_0]",
            "tests/test_pycode_ast.py::test_unparse[1234-1234_1]",
        ],
    ),
    (
        "tests/test_pycode_ast.py::test_unparse[-",
        [
            "tests/test_pycode_ast.py::test_unparse[- 1-- 1]",
            "tests/test_pycode_ast.py::test_unparse[- a-- a]",
        ],
        ["tests/test_pycode_ast.py::test_unparse[-1--1]"],
    ),
    (  # pytest's own tests: whitespace-only and leading-space parameters
        "testing/test_mark_expression.py::test_syntax_oddeties[",
        [
            "testing/test_mark_expression.py::test_syntax_oddeties[    true           ]",
            "testing/test_mark_expression.py::test_syntax_oddeties"
            "[               ((((((((True))))))))        ]",
        ],
        ["testing/test_mark_expression.py::test_syntax_oddeties[true]"],
    ),
    (
        "lib/matplotlib/tests/test_axes.py::test_stem[png-w/o",
        ["lib/matplotlib/tests/test_axes.py::test_stem[png-w/o line collection]"],
        ["lib/matplotlib/tests/test_axes.py::test_stem[png-w/ line collection]"],
    ),
    (
        "sklearn/compose/tests/test_column_transformer.py::test_verbose_feature_names_out_false_errors"
        "[transformers4-drop-['b',",
        [
            "sklearn/compose/tests/test_column_transformer.py::test_verbose_feature_names_out_false_errors"
            "[transformers4-drop-['b', 'c']]"
        ],
        [
            "sklearn/compose/tests/test_column_transformer.py::test_verbose_feature_names_out_false_errors"
            "[transformers4-drop-['b']]"
        ],
    ),
    (
        "astropy/units/tests/test_format.py::test_unicode[\\u212b",
        ["astropy/units/tests/test_format.py::test_unicode[\\u212b \\xb5-unit13]"],
        ["astropy/units/tests/test_format.py::test_unicode[\\u212b-unit12]"],
    ),
    (
        "tests/test_utils.py::test_get_auth_from_url[http://user:pass",
        [
            "tests/test_utils.py::test_get_auth_from_url"
            "[http://user:pass pass@complex.url.com/path?query=yes-auth3]"
        ],
        [
            "tests/test_utils.py::test_get_auth_from_url[http://user:pass@complex.url.com/path?query=yes-auth1]"
        ],
    ),
]


@pytest.mark.parametrize(("cut", "covered", "others"), CUT, ids=[row[0][-40:] for row in CUT])
def test_a_cut_id_stands_for_every_test_it_was_cut_from(cut: str, covered: list, others: list) -> None:
    assert parse_test_id(cut).cut
    report = dict.fromkeys(covered, "passed") | dict.fromkeys(others, "failed")
    assert match_outcomes([cut], report) == {cut: "passed"}, "the others' failures must not leak in"
    # One failure among the covered tests fails the cut id; an error is worse than a failure.
    report[covered[-1]] = "failed"
    assert match_outcomes([cut], report)[cut] == "failed"
    report[covered[0]] = "error"
    assert match_outcomes([cut], report)[cut] == "error"
    # Only the others: nothing matches.
    assert match_outcomes([cut], dict.fromkeys(others, "passed")) == {cut: "not_run"}


def test_a_cut_id_aggregates_skipped_and_prefers_an_exact_entry() -> None:
    cut = "tests/test_fmt.py::test_pad[hello"
    report = {
        "tests/test_fmt.py::test_pad[hello world-10]": "passed",
        "tests/test_fmt.py::test_pad[hello x]": "skipped",
    }
    assert match_outcomes([cut], report) == {cut: "skipped"}
    # A report keyed the SWE-bench way (already cut) is taken verbatim.
    assert match_outcomes([cut], {**report, cut: "passed"}) == {cut: "passed"}


def test_an_id_that_looks_whole_may_have_been_cut_after_a_bracket() -> None:
    raw = "tests/test_x.py::test_list[[1]"  # pytest printed test_list[[1] [2]]
    assert not parse_test_id(raw).cut  # unbalanced brackets alone do not make an id cut ...
    report = {"tests/test_x.py::test_list[[1] [2]]": "failed", "tests/test_x.py::test_list[[1]-x]": "passed"}
    assert match_outcomes([raw], report) == {raw: "failed"}  # ... but with no other match it is taken as cut
    assert match_outcomes([raw], {**report, raw: "passed"}) == {raw: "passed"}


# --- paths in parameters ------------------------------------------------------------------------------------

SAME_TEST = [
    # (dataset id, id in the report), the dataset side exactly as in SWE-bench
    (  # pylint: parse_log_pytest_options kept "/" + the last path component
        "tests/test_self.py::TestRunTC::test_stdin[/mymodule.py]",
        "tests/test_self.py::TestRunTC::test_stdin[/testbed/tests/mymodule.py-mymodule-/testbed/tests/mymodule.py]",
    ),
    (  # requests: test_unzipped_paths_unchanged is parametrized with __file__ and pytest.__file__
        "tests/test_utils.py::TestExtractZippedPaths::test_unzipped_paths_unchanged[/test_utils.py]",
        "tests/test_utils.py::TestExtractZippedPaths::test_unzipped_paths_unchanged[/testbed/tests/test_utils.py]",
    ),
    (
        "tests/test_utils.py::TestExtractZippedPaths::test_unzipped_paths_unchanged[/__init__.py]",
        "tests/test_utils.py::TestExtractZippedPaths::test_unzipped_paths_unchanged"
        "[/opt/miniconda3/envs/testbed/lib/python3.9/site-packages/pytest/__init__.py]",
    ),
    (  # a file name against a tmp_path, and the reverse, and two machines' tmp paths
        "tests/test_io.py::test_x[data.csv]",
        "tests/test_io.py::test_x[/tmp/pytest-of-root/pytest-0/test_x0/data.csv]",
    ),
    (
        "tests/test_io.py::test_x[/tmp/pytest-of-root/pytest-0/test_x0/data.csv]",
        "tests/test_io.py::test_x[data.csv]",
    ),
    (
        "tests/test_io.py::test_x[csv-/tmp/pytest-of-root/pytest-0/test_x0/data.csv]",
        "tests/test_io.py::test_x[csv-/tmp/pytest-of-me/pytest-7/test_x0/data.csv]",
    ),
    (  # escaped and raw unicode
        "astropy/units/tests/test_format.py::test_unicode[\\xb5g-unit0]",
        "astropy/units/tests/test_format.py::test_unicode[µg-unit0]",
    ),
    (
        "testing/test_mark_expression.py::test_valid_idents[\\u05d0\\u05d1\\u05d2\\u05d3]",
        "testing/test_mark_expression.py::test_valid_idents[אבגד]",
    ),
    (  # escaped backslashes stay, the escapes around them are decoded
        "tests/test_markup.py::test_inline[verify-\\u0393\\\\\\\\\\u221e$-None-"
        "\\u0393\\\\textbackslash{}\\\\(\\\\infty\\\\)\\\\$]",
        "tests/test_markup.py::test_inline[verify-Γ\\\\\\\\∞$-None-Γ\\\\textbackslash{}\\\\(\\\\infty\\\\)\\\\$]",
    ),
    (  # whitespace
        "tests/test_fmt.py::test_pad[hello world-10]",
        "tests/test_fmt.py::test_pad[hello \t world-10] ",
    ),
]

OTHER_TEST = [
    # ids that must stay apart
    (
        "tests/test_self.py::TestRunTC::test_stdin[/mymodule.py]",
        "tests/test_self.py::TestRunTC::test_stdin[mymodule.py-mymodule-mymodule.py]",
    ),
    (  # bytes parameters are escaped byte by byte: another test
        "tests/test_requests.py::TestPreparingURLs::test_preparing_url[http://K\\xf6nigsg\\xe4\\xdfchen.de/"
        "stra\\xdfe-http://xn--knigsgchen-b4a3dun.de/stra%C3%9Fe]",
        "tests/test_requests.py::TestPreparingURLs::test_preparing_url[http://K\\xc3\\xb6nigsg\\xc3\\xa4\\xc3"
        "\\x9fchen.de/stra\\xc3\\x9fe-http://xn--knigsgchen-b4a3dun.de/stra%C3%9Fe]",
    ),
    (  # an escaped backslash followed by "xb5" is no escape
        "tests/test_x.py::test_x[\\\\xb5]",
        "tests/test_x.py::test_x[µ]",
    ),
    (  # relative paths are test data, not machine paths
        "tests/test_build_html.py::test_html5_output[subdir/images.html-expect5]",
        "tests/test_build_html.py::test_html5_output[images.html-expect5]",
    ),
    (  # URLs and globs are left alone
        "tests/test_utils.py::test_urldefragauth[//example.com/path-//example.com/path]",
        "tests/test_utils.py::test_urldefragauth[path-path]",
    ),
    (
        "testing/test_pathlib.py::TestFNMatcherPort::test_matching[/c/*.py-/c/foo.py]",
        "testing/test_pathlib.py::TestFNMatcherPort::test_matching[foo.py]",
    ),
    (  # the node part is never touched
        "tests/test_io.py::test_x[data.csv]",
        "tests/sub/test_io.py::test_x[data.csv]",
    ),
]


@pytest.mark.parametrize(("dataset_id", "report_id"), SAME_TEST)
def test_the_same_test_written_two_ways_matches(dataset_id: str, report_id: str) -> None:
    assert normalise(dataset_id) == normalise(report_id)
    assert match_outcomes([dataset_id], {report_id: "failed"}) == {dataset_id: "failed"}
    assert match_outcomes([report_id], {dataset_id: "passed"}) == {report_id: "passed"}


@pytest.mark.parametrize(("dataset_id", "report_id"), OTHER_TEST)
def test_different_tests_stay_apart(dataset_id: str, report_id: str) -> None:
    assert normalise(dataset_id) != normalise(report_id)
    assert match_outcomes([dataset_id], {report_id: "passed"}) == {dataset_id: "not_run"}


def test_ids_with_the_same_key_each_find_themselves() -> None:
    """flask's URL-prefix parameters look like paths; ids given together keep their own report entries."""
    ids = [
        "tests/test_blueprints.py::test_blueprint_prefix_slash[/-/-/]",
        "tests/test_blueprints.py::test_blueprint_prefix_slash[/--/]",
        "tests/test_blueprints.py::test_blueprint_prefix_slash[/foo/--/foo/]",
    ]
    assert len({normalise(raw) for raw in ids}) == 1
    report = {ids[0]: "passed", ids[1]: "failed"}
    assert match_outcomes(ids, report) == {ids[0]: "passed", ids[1]: "failed", ids[2]: "not_run"}
    # Alone, the missing one borrows what its key matches (all of it must pass).
    assert match_outcomes([ids[2]], report) == {ids[2]: "failed"}


@settings(max_examples=400, deadline=None)
@given(
    st.text()
    | st.builds(
        lambda head, param: f"tests/test_{head}.py::test_x[{param}",
        st.from_regex(r"[a-z]{1,5}", fullmatch=True),
        st.text(alphabet=st.sampled_from(list("/\\-u0123abfx[] .*:µ\t")), max_size=30),
    )
)
@example("tests/test_a.py::test_x[ /")  # a path alone at the end leaves a space
@example("tests/test_a.py::test_x[a /x/ b]")  # ... or two in a row
@example("t.py::test_x[\\\\\\xb5\\u00e9\\x41]")
def test_normalise_is_idempotent_and_parse_never_raises(text: str) -> None:
    key = normalise(text)
    assert normalise(key) == key
    test = parse_test_id(text)
    assert test.style in STYLES and test.key == key
    if test.style == "pytest":
        assert match_outcomes([text], {text: "failed"}) == {text: "failed"}


# --- ids pytest cannot run ---------------------------------------------------------------------------------


def test_ids_pytest_cannot_run_are_not_run() -> None:
    assert match_outcomes(IDS, {raw: "passed" for raw in IDS})[IDS[3]] == "not_run"


# --- JUnit XML ----------------------------------------------------------------------------------------------


def _report(*cases: str, root: str = "testsuites") -> str:
    body = '<testsuite name="pytest" tests="1">' + "".join(cases) + "</testsuite>"
    if root == "testsuites":
        body = "<testsuites>" + body + "</testsuites>"
    return '<?xml version="1.0" encoding="utf-8"?>' + body


def test_junit_outcomes_rebuilds_node_ids() -> None:
    xml = _report(
        '<testcase classname="tests.test_x" name="test_module_level" file="tests/test_x.py" line="3"/>',
        '<testcase classname="tests.test_x.TestA" name="test_method[a b-1]" file="tests/test_x.py" line="9">'
        '<failure message="boom">trace</failure></testcase>',
        '<testcase classname="tests.test_x.TestA.TestB" name="test_deep[a::b]" file="tests/test_x.py">'
        '<skipped type="pytest.skip" message="no"/></testcase>',
        '<testcase classname="tests.test_x" name="test_xfail" file="tests/test_x.py" line="20">'
        '<skipped type="pytest.xfail" message=""/></testcase>',
        '<testcase classname="tests.test_x" name="test_setup_error" file="tests/test_x.py" line="25">'
        '<error message="failed on setup"/></testcase>',
        # A failure, then an error in teardown: two testcases, the worst wins.
        '<testcase classname="tests.test_x" name="test_both" file="tests/test_x.py" line="30">'
        "<failure/></testcase>",
        '<testcase classname="tests.test_x" name="test_both" file="tests/test_x.py"><error/></testcase>',
        # Inherited from a class in another module: ``file`` is that module.
        '<testcase classname="tests.test_x.TestChild" name="test_inherited" file="tests/base.py" line="1"/>',
        # A test file in a directory with a dot, module level.
        '<testcase classname="src.v1.2.test_y" name="test_z" file="src/v1.2/test_y.py" line="1"/>',
        # xunit2 has no file attribute.
        '<testcase classname="pkg.tests.test_w.TestW" name="test_v" time="0.1"/>',
        # A collection error: no classname, the module as name.
        '<testcase classname="" name="tests.test_broken" file="tests/test_broken.py">'
        '<error message="collection failure"/></testcase>',
        '<testcase classname="tests.test_x" name="" file="tests/test_x.py"/>',  # nameless: ignored
    )
    assert junit_outcomes(xml) == {
        "tests/test_x.py::test_module_level": "passed",
        "tests/test_x.py::TestA::test_method[a b-1]": "failed",
        "tests/test_x.py::TestA::TestB::test_deep[a::b]": "skipped",
        "tests/test_x.py::test_xfail": "skipped",
        "tests/test_x.py::test_setup_error": "error",
        "tests/test_x.py::test_both": "error",
        "tests/test_x.py::TestChild::test_inherited": "passed",
        "src/v1.2/test_y.py::test_z": "passed",
        "pkg/tests/test_w.py::TestW::test_v": "passed",
        "tests/test_broken.py": "error",
    }
    assert junit_outcomes(xml.encode()) == junit_outcomes(xml)
    single_suite = _report('<testcase classname="t" name="test_a" file="t.py"/>', root="testsuite")
    assert junit_outcomes(single_suite) == {"t.py::test_a": "passed"}
    assert junit_outcomes("<testsuites/>") == {}
    # Bytes are parsed in the encoding the report declares.
    latin = '<?xml version="1.0" encoding="latin-1"?>' + single_suite.split("?>", 1)[1].replace(
        "test_a", "test_µ"
    )
    assert junit_outcomes(latin.encode("latin-1")) == {"t.py::test_µ": "passed"}


@pytest.mark.parametrize(
    ("xml", "message"),
    [
        ("", "empty"),
        ("not xml at all", "Malformed"),
        ('<testsuites><testsuite><testcase classname="t" name="test_a"', "Malformed"),  # truncated
        ("<html><body/></html>", "Not a JUnit XML report"),
        ('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><testsuites/>', "DOCTYPE"),
    ],
)
def test_junit_outcomes_refuses_bad_reports(xml: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as raised:
        junit_outcomes(xml)
    assert isinstance(raised.value, JUnitReportError)


# --- matching -----------------------------------------------------------------------------------------------


def test_match_outcomes_order_and_fallbacks() -> None:
    report = {
        "tests/test_x.py::test_a[/tmp/p/data.csv]": "failed",
        "tests/test_x.py::test_a[data.csv]": "passed",
        "tests/sub/test_broken.py": "error",
        "tests/test_y.py::test_b": "skipped",
    }
    ids = [
        "tests/test_x.py::test_a[data.csv]",  # exact beats the key it shares with the failed one
        "tests/test_x.py::test_a[/other/data.csv]",  # key only: both, and one failed
        "tests/sub/test_broken.py::test_c",  # nothing, but its file failed to collect
        "pkg/tests/test_y.py::test_b",  # the report is relative to pkg/ (pytest's rootdir)
        "tests/test_y.py::test_gone",
        "Named URLs should be reversible",
        "tests/test_x.py::test_a[data.csv]",  # given twice: one entry
    ]
    assert match_outcomes(ids, report) == {
        "tests/test_x.py::test_a[data.csv]": "passed",
        "tests/test_x.py::test_a[/other/data.csv]": "failed",
        "tests/sub/test_broken.py::test_c": "error",
        "pkg/tests/test_y.py::test_b": "skipped",
        "tests/test_y.py::test_gone": "not_run",
        "Named URLs should be reversible": "not_run",
    }
    # The reverse: the dataset is relative to the rootdir, the report to a parent directory.
    assert match_outcomes(["tests/test_y.py::test_b"], {"pkg/tests/test_y.py::test_b": "passed"}) == {
        "tests/test_y.py::test_b": "passed"
    }
    # Two report files fit: no guessing.
    two = {"a/tests/test_y.py::test_b": "passed", "b/tests/test_y.py::test_b": "passed"}
    assert match_outcomes(["tests/test_y.py::test_b"], two) == {"tests/test_y.py::test_b": "not_run"}
    # A Django id is never run, whatever the report says.
    django = "test_stdin_read (shell.tests.ShellCommandTestCase)"
    assert match_outcomes([django], {django: "passed"}) == {django: "not_run"}
    assert match_outcomes([], report) == {}


# --- every id in SWE-bench Lite and Verified ----------------------------------------------------------------


def _dataset_ids() -> list[str]:
    if not SWE_BENCH.is_dir():
        pytest.skip(f"SWE-bench parquet files not found at {SWE_BENCH}")
    parquet = pytest.importorskip("pyarrow.parquet")
    ids: list[str] = []
    for name in PARQUETS:
        path = SWE_BENCH / name
        if not path.is_file():
            pytest.skip(f"{path} not found")
        for row in parquet.read_table(path, columns=["FAIL_TO_PASS", "PASS_TO_PASS"]).to_pylist():
            for column in ("FAIL_TO_PASS", "PASS_TO_PASS"):
                ids.extend(json.loads(row[column]))
    return ids


def test_every_swe_bench_id() -> None:
    ids = _dataset_ids()
    started = time.monotonic()
    styles: Counter[str] = Counter()
    cut = 0
    seen: set[str] = set()
    for raw in ids:
        test = parse_test_id(raw)
        styles[test.style] += 1
        if raw in seen:
            continue
        seen.add(raw)
        assert test.style in STYLES, raw
        assert normalise(test.key) == test.key, raw
        if test.style != "pytest":
            assert test.file is test.node is test.param is None and not test.cut, raw
            assert match_outcomes([raw], {raw: "passed"}) == {raw: "not_run"}, raw
            continue
        assert test.file is not None and test.file.endswith(".py"), raw
        assert test.node is not None and test.node.startswith(test.file + "::"), raw
        assert match_outcomes([raw], {raw: "passed"}) == {raw: "passed"}, raw
        if test.cut:
            cut += 1
            assert match_outcomes([raw], {raw + " rest]": "passed"}) == {raw: "passed"}, raw
            assert (
                match_outcomes([raw], {raw + " rest]": "passed", raw + "  more]": "failed"})[raw] == "failed"
            )
    counts = f"{len(ids)} ids ({len(seen)} distinct): {dict(styles)}; {cut} distinct cut ids"
    assert len(ids) > 80_000, counts
    assert set(styles) == set(STYLES), counts
    # Every style is well represented; pytest ids are the majority.
    assert styles["pytest"] > len(ids) / 2 and min(styles.values()) > 1000, counts
    assert cut > 100, counts
    assert time.monotonic() - started < 30, counts


def test_each_instances_ids_find_themselves_among_each_other() -> None:
    """Within one task, a report with all its ids gives each id its own outcome (no key collisions leak)."""
    if not SWE_BENCH.is_dir():
        pytest.skip(f"SWE-bench parquet files not found at {SWE_BENCH}")
    parquet = pytest.importorskip("pyarrow.parquet")
    rows = [
        row
        for name in PARQUETS
        for row in parquet.read_table(SWE_BENCH / name, columns=["FAIL_TO_PASS", "PASS_TO_PASS"]).to_pylist()
    ]
    assert len(rows) > 700
    for row in rows:
        ids = json.loads(row["FAIL_TO_PASS"]) + json.loads(row["PASS_TO_PASS"])
        pytest_ids = [raw for raw in ids if parse_test_id(raw).style == "pytest"]
        report = {raw: ("passed" if index % 2 else "failed") for index, raw in enumerate(pytest_ids)}
        matched = match_outcomes(ids, report)
        assert {raw: matched[raw] for raw in pytest_ids} == report


# --- a real pytest run --------------------------------------------------------------------------------------

PACKAGE = {
    "pkg/pytest.ini": "[pytest]\n",
    "pkg/tests/base.py": """
        class Base:
            def test_inherited(self):
                assert True
        """,
    "pkg/tests/test_quirks.py": """
        import os

        import pytest

        from base import Base

        HERE = os.path.dirname(os.path.abspath(__file__))
        DATA = os.path.join(HERE, "data.csv")


        @pytest.mark.parametrize("text,width", [("hello world", 10), ("hello there", 5), ("plain", 3)])
        def test_pad(text, width):
            assert text != "hello there"


        @pytest.mark.parametrize("text", ["good morning", "good  night", "goodbye"])
        def test_greet(text):
            assert text


        @pytest.mark.parametrize("path", [DATA, "plain.csv"])
        def test_path(path):
            assert path.endswith(".csv")


        @pytest.mark.parametrize("input_path,module,expected_path", [(DATA, "data", DATA)])
        def test_stdin(input_path, module, expected_path):
            assert input_path == expected_path


        @pytest.mark.parametrize("unit", ["\\u00b5g", "\\u212b", "m\\u00b2", "a::b", "x[1]"])
        def test_unit(unit):
            assert unit != "m\\u00b2"


        class TestOuter:
            def test_shallow(self):
                pass

            class TestInner:
                def test_deep(self):
                    pass


        class TestChild(Base):
            pass


        def test_fails():
            assert 1 == 2


        @pytest.mark.skip(reason="not here")
        def test_skipped():
            pass


        @pytest.mark.xfail(reason="known bug")
        def test_xfail():
            assert False


        @pytest.fixture
        def broken():
            raise RuntimeError("setup fails")


        def test_setup_error(broken):
            pass
        """,
    "pkg/tests/sub/test_broken.py": "import a_module_that_does_not_exist\n",
}

# The ids as SWE-bench writes them after running ``pytest -rA pkg`` from the directory above pkg/:
# relative to that directory, cut at the first space, paths reduced by parse_log_pytest_options.
EXPECTED = {
    "pkg/tests/test_quirks.py::test_pad[hello": "failed",  # "hello world" passed, "hello there" failed
    "pkg/tests/test_quirks.py::test_pad[plain-3]": "passed",
    "pkg/tests/test_quirks.py::test_greet[good": "passed",  # "good morning" and "good  night"
    "pkg/tests/test_quirks.py::test_greet[goodbye]": "passed",
    "pkg/tests/test_quirks.py::test_path[/data.csv]": "passed",
    "pkg/tests/test_quirks.py::test_path[plain.csv]": "passed",
    "pkg/tests/test_quirks.py::test_stdin[/data.csv]": "passed",
    "pkg/tests/test_quirks.py::test_unit[\\xb5g]": "passed",
    "pkg/tests/test_quirks.py::test_unit[\\u212b]": "passed",
    "pkg/tests/test_quirks.py::test_unit[m\\xb2]": "failed",
    "pkg/tests/test_quirks.py::test_unit[a::b]": "passed",
    "pkg/tests/test_quirks.py::test_unit[x[1]]": "passed",
    "pkg/tests/test_quirks.py::TestOuter::test_shallow": "passed",
    "pkg/tests/test_quirks.py::TestOuter::TestInner::test_deep": "passed",
    "pkg/tests/test_quirks.py::TestChild::test_inherited": "passed",
    "pkg/tests/test_quirks.py::test_fails": "failed",
    "pkg/tests/test_quirks.py::test_skipped": "skipped",
    "pkg/tests/test_quirks.py::test_xfail": "skipped",
    "pkg/tests/test_quirks.py::test_setup_error": "error",
    "pkg/tests/test_quirks.py::test_not_in_the_file": "not_run",
    "pkg/tests/sub/test_broken.py::test_anything": "error",
    "Named URLs should be reversible": "not_run",
}


def test_a_real_pytest_run_matches_swe_bench_style_ids(tmp_path: Path) -> None:
    for name, text in PACKAGE.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    xml_path = tmp_path / "report.xml"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-o",
            "junit_family=xunit1",
            f"--junitxml={xml_path}",
            "--continue-on-collection-errors",
            "-rA",
            "pkg",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stdout + run.stderr  # some tests fail, on purpose
    outcomes = junit_outcomes(xml_path.read_text(encoding="utf-8"))
    data = tmp_path / "pkg" / "tests" / "data.csv"
    # The report's ids are pytest's own, relative to the rootdir pkg/, with the full paths and spaces.
    assert outcomes["tests/test_quirks.py::test_pad[hello world-10]"] == "passed"
    assert outcomes[f"tests/test_quirks.py::test_stdin[{data}-data-{data}]"] == "passed"
    assert outcomes["tests/test_quirks.py::TestOuter::TestInner::test_deep"] == "passed"
    assert outcomes["tests/test_quirks.py::TestChild::test_inherited"] == "passed"
    assert outcomes["tests/sub/test_broken.py"] == "error"
    # The -rA summary lines SWE-bench parses carry the same ids, relative to the working directory.
    assert f"PASSED pkg/tests/test_quirks.py::test_stdin[{data}-data-{data}]" in run.stdout
    assert "PASSED pkg/tests/test_quirks.py::test_unit[\\xb5g]" in run.stdout

    assert match_outcomes(EXPECTED, outcomes) == EXPECTED
    # The same tests written other ways: raw unicode, the file name alone, and ids relative to the rootdir.
    assert match_outcomes(["pkg/tests/test_quirks.py::test_unit[µg]"], outcomes) == {
        "pkg/tests/test_quirks.py::test_unit[µg]": "passed"
    }
    assert match_outcomes(["tests/test_quirks.py::test_path[data.csv]"], outcomes) == {
        "tests/test_quirks.py::test_path[data.csv]": "passed"
    }
    assert files_to_run(EXPECTED) == ["pkg/tests/sub/test_broken.py", "pkg/tests/test_quirks.py"]


def test_a_file_level_entry_can_fail_a_test_but_never_pass_one() -> None:
    """A collection error is keyed by its file and fails every test of it; a report whose only entry for a
    file says "passed" names no test that ran, so the file's tests did not run."""
    ids = ["tests/test_x.py::test_a", "tests/test_x.py::TestB::test_c"]
    assert match_outcomes(ids, {"tests/test_x.py": "error"}) == dict.fromkeys(ids, "error")
    assert match_outcomes(ids, {"tests/test_x.py": "passed"}) == dict.fromkeys(ids, "not_run")
