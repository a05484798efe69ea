"""What a dataset's test id says (gym_swe.tasks.test_ids): real ids from SWE-bench Lite and Verified, parsed
and normalised. How they are found in pytest's report is tested in tests/grading/test_test_ids.py."""

from __future__ import annotations

import pytest

from gym_swe.tasks.test_ids import (
    TestId,
    files_to_run,
    is_log_fragment,
    normalise,
    parse_test_id,
    unsupported,
)

# --- parsing: real ids from the parquet files ---------------------------------------------------------------

PARSED = [
    # raw, style, file, node, param, cut
    (
        "xarray/tests/test_dataarray.py::TestDataArray::test_pad_constant",
        "pytest",
        "xarray/tests/test_dataarray.py",
        "xarray/tests/test_dataarray.py::TestDataArray::test_pad_constant",
        None,
        False,
    ),
    (
        "lib/matplotlib/tests/test_offsetbox.py::test_paddedbox_default_values",
        "pytest",
        "lib/matplotlib/tests/test_offsetbox.py",
        "lib/matplotlib/tests/test_offsetbox.py::test_paddedbox_default_values",
        None,
        False,
    ),
    (
        "astropy/units/tests/test_quantity_ufuncs.py::TestUfuncReturnsNotImplemented::TestBinaryUfuncs::"
        "test_basic[duck_quantity0-quantity0-add]",
        "pytest",
        "astropy/units/tests/test_quantity_ufuncs.py",
        "astropy/units/tests/test_quantity_ufuncs.py::TestUfuncReturnsNotImplemented::TestBinaryUfuncs::"
        "test_basic",
        "duck_quantity0-quantity0-add",
        False,
    ),
    (
        "xarray/tests/test_units.py::TestDataArray::test_isel[int64-single",
        "pytest",
        "xarray/tests/test_units.py",
        "xarray/tests/test_units.py::TestDataArray::test_isel",
        "int64-single",
        True,
    ),
    (  # "::" inside the parameter
        "testing/test_nodes.py::test_ischildnode[foo/bar::TestBaz-foo/bar::TestBop-False]",
        "pytest",
        "testing/test_nodes.py",
        "testing/test_nodes.py::test_ischildnode",
        "foo/bar::TestBaz-foo/bar::TestBop-False",
        False,
    ),
    (
        "tests/test_requests.py::TestRequests::test_errors[http://fe80::5054:ff:fe5a:fc0-InvalidURL]",
        "pytest",
        "tests/test_requests.py",
        "tests/test_requests.py::TestRequests::test_errors",
        "http://fe80::5054:ff:fe5a:fc0-InvalidURL",
        False,
    ),
    (  # nested brackets, whole
        "tests/test_requests.py::TestPreparingURLs::test_preparing_url[http://[1200:0000:ab00:1234:0000:2552:"
        "7777:1313]:12345/-http://[1200:0000:ab00:1234:0000:2552:7777:1313]:12345/0]",
        "pytest",
        "tests/test_requests.py",
        "tests/test_requests.py::TestPreparingURLs::test_preparing_url",
        "http://[1200:0000:ab00:1234:0000:2552:7777:1313]:12345/-http://[1200:0000:ab00:1234:0000:2552:"
        "7777:1313]:12345/0",
        False,
    ),
    (  # nested (escaped) brackets, cut
        "sklearn/compose/tests/test_column_transformer.py::test_column_transformer_verbose"
        "[fit_transform-est6-\\\\[ColumnTransformer\\\\].*\\\\(1",
        "pytest",
        "sklearn/compose/tests/test_column_transformer.py",
        "sklearn/compose/tests/test_column_transformer.py::test_column_transformer_verbose",
        "fit_transform-est6-\\\\[ColumnTransformer\\\\].*\\\\(1",
        True,
    ),
    (  # quotes, cut
        "sklearn/compose/tests/test_column_transformer.py::test_verbose_feature_names_out_false_errors"
        "[transformers4-drop-['b',",
        "pytest",
        "sklearn/compose/tests/test_column_transformer.py",
        "sklearn/compose/tests/test_column_transformer.py::test_verbose_feature_names_out_false_errors",
        "transformers4-drop-['b',",
        True,
    ),
    (  # cut right after the "["
        "testing/test_mark_expression.py::test_syntax_oddeties[",
        "pytest",
        "testing/test_mark_expression.py",
        "testing/test_mark_expression.py::test_syntax_oddeties",
        "",
        True,
    ),
    (  # escaped unicode
        "astropy/units/tests/test_format.py::test_unicode[\\u212b-unit12]",
        "pytest",
        "astropy/units/tests/test_format.py",
        "astropy/units/tests/test_format.py::test_unicode",
        "\\u212b-unit12",
        False,
    ),
    (  # the longest id in the data
        "xarray/tests/test_dataarray.py::TestReduce3D::test_argmax_dim[x0-minindices_x0-minindices_y0-"
        "minindices_z0-minindices_xy0-minindices_xz0-minindices_yz0-minindices_xyz0-maxindices_x0-maxindices_y0-"
        "maxindices_z0-maxindices_xy0-maxindices_xz0-maxindices_yz0-maxindices_xyz0-nanindices_x0-nanindices_y0-"
        "nanindices_z0-nanindices_xy0-nanindices_xz0-nanindices_yz0-nanindices_xyz0]",
        "pytest",
        "xarray/tests/test_dataarray.py",
        "xarray/tests/test_dataarray.py::TestReduce3D::test_argmax_dim",
        "x0-minindices_x0-minindices_y0-minindices_z0-minindices_xy0-minindices_xz0-minindices_yz0-"
        "minindices_xyz0-maxindices_x0-maxindices_y0-maxindices_z0-maxindices_xy0-maxindices_xz0-maxindices_yz0-"
        "maxindices_xyz0-nanindices_x0-nanindices_y0-nanindices_z0-nanindices_xy0-nanindices_xz0-nanindices_yz0-"
        "nanindices_xyz0",
        False,
    ),
    ("test_stdin_read (shell.tests.ShellCommandTestCase)", "django"),
    ("test_absolute_max (forms_tests.tests.test_formsets.FormsFormsetTestCase.test_absolute_max)", "django"),
    ("testCallable (auth_tests.test_decorators.LoginRequiredTestCase)", "django"),
    ("Named URLs should be reversible", "description"),
    ("A DecimalField with decimal_places=0 should work (#22272).", "description"),
    ("#24155 - Tests ordering of imports.", "description"),
    ("--version is equivalent to version", "description"),
    ("[100%]", "description"),
    ("[", "description"),
    ("test_padded_key", "sympy"),
    ("", "description"),
    ("   ", "description"),
    ("tests/test_x.py", "description"),  # a file alone is no test id
]


@pytest.mark.parametrize("row", PARSED, ids=lambda row: row[0][:60])
def test_parse_test_id_on_real_ids(row: tuple) -> None:
    raw, style, *rest = row
    file, node, param, cut = rest if rest else (None, None, None, False)
    test = parse_test_id(raw)
    assert isinstance(test, TestId)
    assert (test.raw, test.style, test.file, test.node, test.param, test.cut) == (
        raw,
        style,
        file,
        node,
        param,
        cut,
    )
    assert test.key == normalise(raw)


def test_normalise_examples() -> None:
    assert normalise("t.py::test_stdin[/testbed/tests/mymodule.py-mymodule-/testbed/tests/mymodule.py]") == (
        "t.py::test_stdin[mymodule.py]"
    )
    assert normalise("t.py::test_x[a-/tmp/p/q.txt b-/x/y/z]") == "t.py::test_x[a-q.txt b-z]"
    assert (
        normalise("t.py::test_inline[verify-<p>\\u201cJohn\\u201d</p>]")
        == "t.py::test_inline[verify-<p>“John”</p>]"
    )
    assert normalise("  t.py::test_x[a \n\t b]  ") == "t.py::test_x[a b]"
    assert normalise("t.py::test_x[\\x00\\t]") == "t.py::test_x[\\x00\\t]"  # ASCII escapes stay
    assert normalise("Named  URLs should be reversible") == "Named URLs should be reversible"


# --- what to run --------------------------------------------------------------------------------------------

IDS = [
    "xarray/tests/test_units.py::TestDataArray::test_isel[int64-single",
    "astropy/units/tests/test_format.py::test_unicode[\\u212b-unit12]",
    "xarray/tests/test_units.py::TestVariable::test_isel[float64-single",
    "test_stdin_read (shell.tests.ShellCommandTestCase)",
    "Named URLs should be reversible",
    "test_padded_key",
    "[100%]",
    "Named URLs should be reversible",
]


def test_files_to_run_and_unsupported() -> None:
    assert files_to_run(IDS) == ["astropy/units/tests/test_format.py", "xarray/tests/test_units.py"]
    assert files_to_run([]) == []
    assert unsupported(IDS) == [
        "test_stdin_read (shell.tests.ShellCommandTestCase)",
        "Named URLs should be reversible",
        "test_padded_key",
        "[100%]",
    ]


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("[100%]", True),  # pytest-dev__pytest-5227's PASS_TO_PASS
        ("[", True),
        ("[100%]------------------------------", True),
        (" [ 50%]", True),
        ("test_x", False),
        ("t.py::test[1]", False),
        ("test_100 (m.C)", False),
        ("Named URLs should be reversible", False),
    ],
)
def test_log_fragments_name_no_test(raw: str, fragment: bool) -> None:
    assert is_log_fragment(raw) is fragment
    if fragment:
        assert parse_test_id(raw).style == "description"
