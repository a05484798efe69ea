"""The Django runner (`gym_swe.grading.runners.django`) and its shim (`django_driver`).

Real parts: Django's own ``tests/runtests.py`` of four releases from PyPI (1.11.29 and 3.0.14 under Python
3.6 and 4.2.16 under 3.8, whose unittest names tests ``test_x (module.Class)``; 5.0.14 under Python 3.11,
``test_x (module.Class.test_x)``),
with two of their real test apps (``signing``, its docstring ids; ``str``, a database test) and modules of
ours in Django's style for every outcome shape. The shim runs as the grader runs it, from the runner's own
command, its stream read by `read_stream`; the host side maps the ids the run itself printed back to the
node ids the stream gave. Last, the real django records of SWE-bench Lite and Verified: no id refused, the
PASS_TO_PASS ids of the 1.11, 3.0, 4.2 and 5.0 tasks found in those releases' files, and two tasks run from their
records on their real test apps, every id passing.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import shutil
import subprocess
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gym_swe.grading.outcome_stream import read_stream
from gym_swe.grading.runners.django import DjangoRunner, patched_files
from tests.grading.runners.django_fixtures import PYTHONS, Installed, installed, run_shim, workspace

RUNNER = DjangoRunner()
PACKAGE = Path(__file__).parents[3] / "gym_swe" / "grading"
DATA = Path(__file__).parents[3].parent / "shared" / "data" / "swe-bench"

SHAPES = textwrap.dedent(
    '''
    import unittest

    from django.test import SimpleTestCase


    class DocumentedMixin:
        def test_inherited_doc(self):
            """A mixin's documented test, run by each class that mixes it in."""


    class ShapeTests(DocumentedMixin, SimpleTestCase):
        def test_passes(self):
            self.assertEqual(1 + 1, 2)

        def test_fails(self):
            self.assertEqual(1 + 1, 3)

        def test_errors(self):
            raise KeyError("boom")

        @unittest.skip("not today")
        def test_skipped(self):
            pass

        @unittest.expectedFailure
        def test_expected_failure(self):
            self.assertEqual(1, 2)

        @unittest.expectedFailure
        def test_unexpected_success(self):
            pass

        def test_subtests_fail(self):
            for number in range(3):
                with self.subTest(number=number):
                    self.assertLess(number, 2)

        def test_subtests_pass(self):
            for number in range(3):
                with self.subTest(number=number):
                    self.assertLess(number, 5)

        def test_documented(self):
            """Shapes print their docstring's first line.

            Not this one.
            """

        def test_documented_late(self):
            """
            A docstring that opens with a newline.
            """

        def test_sealed(self):
            _gym_seal("t1", {"a": [1, 2]})


    class SetUpErrorTests(SimpleTestCase):
        def setUp(self):
            raise RuntimeError("setUp")

        def test_in_broken_setup(self):
            pass


    class SetUpClassErrorTests(SimpleTestCase):
        @classmethod
        def setUpClass(cls):
            super().setUpClass()
            raise RuntimeError("setUpClass")

        def test_one(self):
            pass

        def test_two(self):
            pass


    class TearDownClassErrorTests(SimpleTestCase):
        @classmethod
        def tearDownClass(cls):
            super().tearDownClass()
            raise RuntimeError("tearDownClass")

        def test_first(self):
            pass

        def test_last(self):
            pass


    class PreSetupErrorTests(SimpleTestCase):
        def _pre_setup(self):  # Django's own fixture, before unittest starts the test
            raise RuntimeError("_pre_setup")

        def test_never_started(self):
            pass


    class PostTeardownErrorTests(SimpleTestCase):
        def _post_teardown(self):  # Django's own fixture, after unittest stopped the test
            raise RuntimeError("_post_teardown")

        def test_stopped_then_broken(self):
            pass


    class NestedTests(SimpleTestCase):
        def test_runs_a_runner_of_its_own(self):
            # A test that runs unittest itself (Django's own test_runner tests do): not the run reported.
            class Inner(unittest.TestCase):
                def test_inner_fails(self):
                    self.fail("inner")

            result = unittest.TextTestRunner(stream=open("/dev/null", "w")).run(Inner("test_inner_fails"))
            self.assertEqual(len(result.failures), 1)
    '''
)
SHAPES_FILE = "tests/gym_shapes/tests.py"
MODULE_FIXTURE = textwrap.dedent(
    """
    from django.test import SimpleTestCase


    def {broken}():
        raise RuntimeError("{broken}")


    class ModuleTests(SimpleTestCase):
        def test_first(self):
            pass

        def test_last(self):
            pass
    """
)
EXTRA = {
    "tests/gym_shapes/__init__.py": "",
    SHAPES_FILE: SHAPES,
    "tests/gym_module_setup/__init__.py": "",
    "tests/gym_module_setup/tests.py": MODULE_FIXTURE.format(broken="setUpModule"),
    "tests/gym_module_teardown/__init__.py": "",
    "tests/gym_module_teardown/tests.py": MODULE_FIXTURE.format(broken="tearDownModule"),
    "tests/gym_broken/__init__.py": "",
    "tests/gym_broken/tests.py": "import no_such_module_here\n",
}
APPS = ("signing", "str")
FILES = [
    "tests/signing/tests.py",
    "tests/str/tests.py",
    SHAPES_FILE,
    "tests/gym_module_setup/tests.py",
    "tests/gym_module_teardown/tests.py",
    "tests/gym_broken/tests.py",
]


def shape(name: str, cls: str = "ShapeTests") -> str:
    return f"{SHAPES_FILE}::{cls}::{name}"


EXPECTED = {
    shape("test_passes"): "passed",
    shape("test_fails"): "failed",
    shape("test_errors"): "error",
    shape("test_skipped"): "skipped",
    shape("test_expected_failure"): "skipped",
    shape("test_unexpected_success"): "failed",
    shape("test_subtests_fail"): "failed",
    shape("test_subtests_pass"): "passed",
    shape("test_documented"): "passed",
    shape("test_documented_late"): "passed",
    shape("test_inherited_doc"): "passed",
    shape("test_sealed"): "passed",
    shape("test_in_broken_setup", "SetUpErrorTests"): "error",
    shape("test_one", "SetUpClassErrorTests"): "error",
    shape("test_two", "SetUpClassErrorTests"): "error",
    shape("test_first", "TearDownClassErrorTests"): "passed",
    shape("test_last", "TearDownClassErrorTests"): "error",  # its class's tearDownClass raised after it
    shape("test_never_started", "PreSetupErrorTests"): "error",
    shape("test_stopped_then_broken", "PostTeardownErrorTests"): "error",
    shape("test_runs_a_runner_of_its_own", "NestedTests"): "passed",
    "tests/gym_module_setup/tests.py::ModuleTests::test_first": "error",  # its setUpModule raised
    "tests/gym_module_setup/tests.py::ModuleTests::test_last": "error",
    "tests/gym_module_teardown/tests.py::ModuleTests::test_first": "passed",
    "tests/gym_module_teardown/tests.py::ModuleTests::test_last": "error",  # tearDownModule raised after it
    "tests/gym_broken/tests.py": "error",  # the module that does not import
    "tests/str/tests.py::SimpleTests::test_international": "passed",  # a database test
    "tests/signing/tests.py::TestSigner::test_invalid_sep": "passed",  # docstring "should warn on ..."
}


@dataclass
class Run:
    root: Path
    release: Installed
    status: int
    stream: bytes
    output: str

    @property
    def lines(self) -> list[dict]:
        return [json.loads(line) for line in self.stream.splitlines()]


def run(
    tmp: Path,
    release: Installed,
    files: list[str],
    extra: dict[str, str] = EXTRA,
    apps: tuple[str, ...] = APPS,
) -> Run:
    root = workspace(tmp / "work", release, apps, extra)
    grader = tmp / "grader"  # the grader's directory: the shim, and the pytest driver beside it as driver.py
    grader.mkdir()
    shutil.copy(PACKAGE / "runners" / RUNNER.driver, grader / RUNNER.driver)
    shutil.copy(PACKAGE / "pytest_driver.py", grader / "driver.py")
    command = RUNNER.command(str(root), str(grader / RUNNER.driver), files)
    status, stream, output = run_shim(root, release, command, grader, RUNNER.environment())
    return Run(root, release, status, stream, output)


@pytest.fixture(scope="module", params=["1.11.29", "3.0.14", "4.2.16", "5.0.14"])
def shapes_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    release = installed(request.param)
    yield run(tmp_path_factory.mktemp(f"django-{request.param}"), release, FILES)


# -- the shim under real runtests.py ---------------------------------------------------------------------------


def test_each_test_streams_its_outcome(shapes_run: Run) -> None:
    streamed = read_stream(shapes_run.stream)
    assert streamed.finished and streamed.written == streamed.tests, shapes_run.output[-3000:]
    for node, outcome in EXPECTED.items():
        assert streamed.outcomes.get(node) == outcome, (
            node,
            streamed.outcomes.get(node),
            shapes_run.output[-3000:],
        )
    signing = [node for node in streamed.outcomes if node.startswith("tests/signing/tests.py::")]
    assert len(signing) >= 10 and all(streamed.outcomes[node] == "passed" for node in signing)
    # the nested run's test, the loader's stand-in for the broken module: no lines of their own
    assert not [node for node in streamed.outcomes if "Inner" in node or "_FailedTest" in node]


def test_runtests_prints_as_it_would_and_exits_with_its_status(shapes_run: Run) -> None:
    assert shapes_run.status == 1  # runtests.py's own: there were failures
    assert "FAILED (failures=2, errors=9" in shapes_run.output, shapes_run.output[-3000:]
    assert "test_passes (gym_shapes.tests.ShapeTests" in shapes_run.output
    assert '"outcome"' not in shapes_run.output  # outcomes go down the stream only


def test_a_sealed_check_is_recorded_under_its_node(shapes_run: Run) -> None:
    streamed = read_stream(shapes_run.stream)
    [record] = [record for record in streamed.records if record.token == "t1"]
    assert record.case == shape("test_sealed")
    assert record.value == {"a": [1, 2]}


def test_the_stream_ends_with_the_count(shapes_run: Run) -> None:
    lines = shapes_run.lines
    assert lines[-1]["kind"] == "end" and lines[-1]["tests"] == sum(line["kind"] == "test" for line in lines)
    assert [line["seq"] for line in lines] == list(range(len(lines)))


def test_node_ids_map_the_ids_the_run_printed(shapes_run: Run) -> None:
    """The ids SWE-bench's parser takes from the verbose lines (the docstring's first line where there is
    one, else unittest's name, whichever shape this Python prints) map to the node ids the stream gave."""
    sources = {file: (shapes_run.root / file).read_text() for file in FILES}
    printed = {}
    for line in shapes_run.lines:
        if line["kind"] == "test" and "::" in line["nodeid"]:
            printed[line["doc"] or line["id"]] = line["nodeid"]
    assert "should warn on invalid separator" in printed  # a real docstring id
    assert "Shapes print their docstring's first line." in printed
    assert RUNNER.node_ids(list(printed), sources) == printed


def test_a_run_that_passes_exits_0(tmp_path: Path) -> None:
    result = run(tmp_path, installed("3.0.14"), ["tests/signing/tests.py"])
    streamed = read_stream(result.stream)
    assert result.status == 0, result.output[-3000:]
    assert streamed.finished and streamed.tests >= 10
    assert set(streamed.outcomes.values()) == {"passed"}


def test_a_module_that_breaks_runtests_is_reported(tmp_path: Path) -> None:
    """A test module that raises at import (not an ImportError) stops runtests.py before any test runs: its
    file gets an error line, the run its end line, and the exit status is runtests.py's failure."""
    extra = {**EXTRA, "tests/gym_broken/tests.py": "undefined_name_here\n"}
    result = run(tmp_path, installed("3.0.14"), [SHAPES_FILE, "tests/gym_broken/tests.py"], extra)
    streamed = read_stream(result.stream)
    assert result.status != 0
    assert "NameError" in result.output
    assert streamed.finished
    assert streamed.outcomes == {"tests/gym_broken/tests.py": "error"}


def test_the_shim_is_python_35_syntax() -> None:
    """Django 1.9-2.2 run under Python 3.5 (not installed here): no f-strings, no variable annotations (the
    parser's own check for 3.5), no walrus (which that check lets through); and it compiles under 3.6."""
    source = (PACKAGE / "runners" / RUNNER.driver).read_text()
    tree = ast.parse(source, feature_version=(3, 5))
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.NamedExpr)]
    python36 = PYTHONS / "3.6.15" / "bin" / "python"
    if python36.exists():
        compiled = subprocess.run([str(python36), "-c", "import sys; compile(sys.stdin.read(), 'shim', 'exec')"],
                                  input=source, capture_output=True, text=True)  # fmt: skip
        assert compiled.returncode == 0, compiled.stderr


# -- the host side, table-driven ---------------------------------------------------------------------------------

HOST_SOURCES = {
    "tests/admin_views/tests.py": textwrap.dedent(
        '''
        from django.test import TestCase

        class Mixin:
            def test_shared(self):
                """Shared docstring line."""

        class AdminViewBasicTest(TestCase):
            def test_foo(self):
                pass

            def test_documented(self):
                """
                Opens with a newline.
                """

            class Nested(TestCase):
                def test_inner(self):
                    pass

        class BTests(Mixin, TestCase):
            pass

        class ATests(Mixin, TestCase):
            pass

        if True:
            class GuardedTests(TestCase):
                def test_guarded(self):
                    """Guarded."""

        class AsyncTests(TestCase):
            @async_to_sync
            async def test_wrapped(self):
                """Its own docstring is not what the runner prints."""
        '''
    ),
    "tests/auth_tests/test_views.py": "class LoginTest(AuthViewsTestCase):\n    def test_login(self):\n        pass\n",
}


@pytest.mark.parametrize(
    ("test_id", "node"),
    [
        ("test_foo (admin_views.tests.AdminViewBasicTest)", "tests/admin_views/tests.py::AdminViewBasicTest::test_foo"),
        ("test_foo (admin_views.tests.AdminViewBasicTest.test_foo)",
         "tests/admin_views/tests.py::AdminViewBasicTest::test_foo"),
        ("test_inner (admin_views.tests.AdminViewBasicTest.Nested)",
         "tests/admin_views/tests.py::AdminViewBasicTest::Nested::test_inner"),
        ("test_inner (admin_views.tests.AdminViewBasicTest.Nested.test_inner)",
         "tests/admin_views/tests.py::AdminViewBasicTest::Nested::test_inner"),
        ("test_login (auth_tests.test_views.LoginTest)", "tests/auth_tests/test_views.py::LoginTest::test_login"),
        ("Opens with a newline.", "tests/admin_views/tests.py::AdminViewBasicTest::test_documented"),
        # two classes mix the test in: the one unittest runs (and SWE-bench's parser kept) last
        ("Shared docstring line.", "tests/admin_views/tests.py::BTests::test_shared"),
        ("Guarded.", "tests/admin_views/tests.py::GuardedTests::test_guarded"),
        ("Utility class which turns an awaitable that only works on the thread with",
         "tests/admin_views/tests.py::AsyncTests::test_wrapped"),
        ("test_gone (other_app.tests.SomeTests)", None),  # its module is not among the files
        ("No test prints this.", None),
    ],
)  # fmt: skip
def test_node_ids(test_id: str, node: str | None) -> None:
    assert RUNNER.node_ids([test_id], HOST_SOURCES).get(test_id) == node


PATCH = textwrap.dedent(
    """\
    diff --git a/tests/foo/tests.py b/tests/foo/tests.py
    --- a/tests/foo/tests.py
    +++ b/tests/foo/tests.py
    @@ -1 +1 @@
    -a
    +b
    diff --git a/tests/foo/models.py b/tests/foo/models.py
    new file mode 100644
    --- /dev/null
    +++ b/tests/foo/models.py
    @@ -0,0 +1 @@
    +x = 1
    diff --git a/tests/bar/test_old.py b/tests/bar/test_old.py
    deleted file mode 100644
    --- a/tests/bar/test_old.py
    +++ /dev/null
    @@ -1 +0,0 @@
    -x = 1
    diff --git a/tests/foo/fixtures/data.json b/tests/foo/fixtures/data.json
    --- a/tests/foo/fixtures/data.json
    +++ b/tests/foo/fixtures/data.json
    @@ -1 +1 @@
    -[]
    +[{}]
    diff --git a/django/db/models/query.py b/django/db/models/query.py
    --- a/django/db/models/query.py
    +++ b/django/db/models/query.py
    @@ -1 +1 @@
    -a
    +b
    """
)


def test_test_files_are_the_patchs_test_modules_and_the_ids_modules() -> None:
    assert patched_files(PATCH) == [
        "tests/foo/tests.py", "tests/foo/models.py", "tests/foo/fixtures/data.json", "django/db/models/query.py",
    ]  # fmt: skip
    ids = [
        "test_a (foo.tests.ATests)",  # already a file of the patch
        "test_b (model_fields.test_integerfield.IntegerFieldTests.test_b)",  # imported into a patched module
        "A docstring line says nothing of its file.",
    ]
    assert RUNNER.test_files(ids, PATCH) == [
        "tests/foo/tests.py", "tests/foo/models.py", "tests/model_fields/test_integerfield.py",
    ]  # fmt: skip


def test_command_is_swebench_s_runtests_line() -> None:
    command = RUNNER.command("/work/repo", "/tmp/gym_swe_grader/django_driver.py",
                             ["tests/foo/tests.py", "tests/foo/models.py", "tests/a b/tests.py", "setup.py"])  # fmt: skip
    assert command == (
        "cd /work/repo && python /tmp/gym_swe_grader/django_driver.py run /work/repo -- ./tests/runtests.py "
        "--verbosity 2 --settings=test_sqlite --parallel 1 foo.tests foo.models 'a b.tests'"
    )


def test_unsupported() -> None:
    ids = [
        "test_a (foo.tests.A)",
        "Any docstring line (even with parentheses).",
        '"',
        "",
        " padded",
        "two\nlines",
    ]
    assert RUNNER.unsupported(ids) == ["", " padded", "two\nlines"]


# -- the real ids of SWE-bench ---------------------------------------------------------------------------------


def _django_records() -> list[dict]:
    pandas = pytest.importorskip("pandas")
    files = [DATA / "SWE-bench_Lite-test.parquet", DATA / "SWE-bench_Verified-test.parquet"]
    if not all(file.exists() for file in files):
        pytest.skip(f"no SWE-bench parquet files under {DATA}")
    records: dict[str, dict] = {}
    for file in files:
        frame = pandas.read_parquet(file, columns=["repo", "instance_id", "version", "test_patch", "FAIL_TO_PASS",
                                                   "PASS_TO_PASS"])  # fmt: skip
        for row in frame[frame.repo == "django/django"].to_dict("records"):
            records[row["instance_id"]] = row
    return list(records.values())


def test_no_real_django_id_is_refused() -> None:
    ids = {test_id for row in _django_records() for column in ("FAIL_TO_PASS", "PASS_TO_PASS")
           for test_id in json.loads(row[column])}  # fmt: skip
    assert len(ids) > 10000
    assert RUNNER.unsupported(sorted(ids)) == []


@pytest.mark.parametrize(
    ("version", "release"), [("1.11", "1.11.29"), ("3.0", "3.0.14"), ("4.2", "4.2.16"), ("5.0", "5.0.14")]
)
def test_real_pass_to_pass_ids_are_found_in_the_release(version: str, release: str) -> None:
    """The PASS_TO_PASS ids of the tasks of a Django version, in the files `test_files` names, read from that
    version's last release (which can have moved a test since the task's commit: a few may be missing)."""
    records = [row for row in _django_records() if row["version"] == version]
    tree = installed(release).source
    total = mapped = 0
    for row in records:
        passing = json.loads(row["PASS_TO_PASS"])
        files = RUNNER.test_files(json.loads(row["FAIL_TO_PASS"]) + passing, row["test_patch"])
        sources = {file: (tree / file).read_text() for file in files if (tree / file).exists()}
        nodes = RUNNER.node_ids(passing, sources)
        total, mapped = total + len(passing), mapped + len(nodes)
        for node in nodes.values():
            assert node.split("::")[0] in sources
    assert total > 50 and mapped >= 0.99 * total, (mapped, total)


@pytest.mark.parametrize(
    ("instance", "release"), [("django__django-11179", "3.0.14"), ("django__django-16408", "5.0.14")]
)
def test_a_real_task_runs_from_its_record(instance: str, release: str, tmp_path: Path) -> None:
    """A task's record through the whole chain: its files, its ids' node ids, the runner's command on the
    real test app (from the release, which carries the task's fix and tests), each id's outcome streamed."""
    [row] = [row for row in _django_records() if row["instance_id"] == instance]
    ids = json.loads(row["FAIL_TO_PASS"]) + json.loads(row["PASS_TO_PASS"])
    files = RUNNER.test_files(ids, row["test_patch"])
    apps = tuple(sorted({file.split("/")[1] for file in files}))
    result = run(tmp_path, installed(release), files, extra={}, apps=apps)
    nodes = RUNNER.node_ids(ids, {file: (result.root / file).read_text() for file in files})
    streamed = read_stream(result.stream)
    assert result.status == 0 and streamed.finished, result.output[-3000:]
    assert sorted(nodes) == sorted(ids)
    assert {test_id: streamed.outcomes.get(node) for test_id, node in nodes.items()} == dict.fromkeys(
        ids, "passed"
    )


def test_the_shim_reads_the_labels_among_runtests_arguments() -> None:
    spec = importlib.util.spec_from_file_location("django_shim", PACKAGE / "runners" / RUNNER.driver)
    assert spec is not None and spec.loader is not None
    shim = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shim)
    arguments = ["./tests/runtests.py", "--verbosity", "2", "--settings=test_sqlite", "--parallel", "1",
                 "foo.tests", "--settings", "other_settings", "-k", "pattern", "bar.test_x", "--debug-sql", "baz"]  # fmt: skip
    assert shim.labels_of(arguments) == ["foo.tests", "bar.test_x", "baz"]
