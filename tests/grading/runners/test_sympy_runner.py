"""The sympy runner: its ids, files and command (`gym_swe.grading.runners.sympy`), and its shim
(``sympy_driver.py``) run as the grader runs it, on real sympy releases from PyPI with Python 3.9 (SWE-bench's),
one with the new layout (``sympy.testing.runtests``, 1.12) and one with the old (``sympy.utilities.runtests``,
1.1.1): each test's outcome streamed as it ends, sealed checks, the exit status, the ids' mapping."""

from __future__ import annotations

import ast
import json
import random
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from gym_swe.grading import pytest_driver
from gym_swe.grading.decoys import plant
from gym_swe.grading.outcome_stream import RECORDS_FD_VARIABLE, Streamed, read_stream
from gym_swe.grading.runners.sympy import SympyRunner, module_functions
from gym_swe.grading.test_ids import parse_test_id
from tests.grading.runners.sympy_fixtures import runner_venv, sympy_repository, sympy_sdist

RUNNER = SympyRunner()
PYTEST_DRIVER = Path(pytest_driver.__file__)  # the grader writes it beside the shim as driver.py
VERSIONS = ("1.12", "1.1.1")  # sympy.testing.runtests; sympy.utilities.runtests
PYTEST_MODULE = {"1.12": "sympy.testing.pytest", "1.1.1": "sympy.utilities.pytest"}

REAL = "sympy/core/tests/test_truediv.py"  # a real test file of both releases, all passing
SHAPES = "sympy/core/tests/test_gym_shapes.py"
BROKEN = "sympy/core/tests/test_gym_broken.py"
RAISING = "sympy/core/tests/test_gym_where_module_raises.py"  # after SHAPES: sympy 1.1.1 fails on a first file that raises
SHAPES_SOURCE = """\
import os

from sympy import Symbol
from {pytest} import SKIP, XFAIL, raises, skip, slow

x = Symbol("x")


def test_passes():
    assert x + x == 2*x


def test_fails():
    assert x + x == 3*x


def test_errors():
    raise ValueError("not an assertion")


def test_skips():
    skip("not here")


@SKIP("decorated")
def test_skip_decorated():
    assert False


@slow
def test_slow():
    assert True


@XFAIL
def test_xfail():
    assert False


@XFAIL
def test_xpass():
    assert True


def test_sealed():
    _gym_seal("t1", 2 + 3)


def test_sealed_raises():
    with _gym_raises("t2", raises(BaseException)):
        1 / 0


def test_knows_its_name():
    assert os.environ["PYTEST_CURRENT_TEST"] == "{shapes}::test_knows_its_name (call)"


def test_generated():
    def check(n):
        assert n > 0
    yield check, 1
    yield check, 2
"""
BROKEN_SOURCE = "import sympy.no_such_module\n\n\ndef test_never():\n    pass\n"
RAISING_SOURCE = "def test_before():\n    assert True\n\n\n1 / 0\n\n\ndef test_after():\n    pass\n"
SHAPE_OUTCOMES = {
    f"{SHAPES}::test_passes": "passed",
    f"{SHAPES}::test_fails": "failed",
    f"{SHAPES}::test_errors": "error",
    f"{SHAPES}::test_skips": "skipped",
    f"{SHAPES}::test_skip_decorated": "skipped",
    f"{SHAPES}::test_slow": "skipped",  # @slow without --slow
    f"{SHAPES}::test_xfail": "skipped",  # sympy's f
    f"{SHAPES}::test_xpass": "failed",  # sympy's X: not "ok", so not PASSED for SWE-bench's parser
    f"{SHAPES}::test_sealed": "passed",
    f"{SHAPES}::test_sealed_raises": "passed",
    f"{SHAPES}::test_knows_its_name": "passed",
    f"{SHAPES}::<lambda>": "passed",  # the cases a generator test yields
    f"{SHAPES}::<lambda>[2]": "passed",
    BROKEN: "error",  # does not import
    RAISING: "error",  # its module code raised; sympy still runs the tests defined before that
    f"{RAISING}::test_before": "passed",
}


@dataclass
class Run:
    repo: Path
    returncode: int
    output: str
    stream: bytes

    @property
    def streamed(self) -> Streamed:
        return read_stream(self.stream)

    @property
    def lines(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.stream.splitlines()]


def run_shim(repo: Path, grader: Path, files: list[str]) -> Run:
    """Run ``files`` through the shim as the grader does: its `command` in bash, the task's python first on
    PATH, the pytest driver beside the shim as driver.py, a records descriptor named by GYM_SWE_RECORDS_FD."""
    grader.mkdir(exist_ok=True)
    (grader / RUNNER.driver).write_bytes(RUNNER.driver_source())
    (grader / "driver.py").write_bytes(PYTEST_DRIVER.read_bytes())
    records = grader / "stream.jsonl"
    with open(records, "wb") as stream:
        run = subprocess.run(
            ["bash", "-c", RUNNER.command(str(repo), str(grader / RUNNER.driver), files)],
            capture_output=True, text=True, timeout=300, pass_fds=(stream.fileno(),),
            env={"PATH": f"{runner_venv()}:/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1",
                 RECORDS_FD_VARIABLE: str(stream.fileno()), **RUNNER.environment()},
        )  # fmt: skip
    return Run(repo, run.returncode, run.stdout + run.stderr, records.read_bytes())


@pytest.fixture(scope="module", params=VERSIONS)
def repository(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    version = request.param
    shapes = SHAPES_SOURCE.format(pytest=PYTEST_MODULE[version], shapes=SHAPES)
    files = {SHAPES: shapes, BROKEN: BROKEN_SOURCE, RAISING: RAISING_SOURCE}
    destination = tmp_path_factory.mktemp(f"sympy-{version}")
    return sympy_repository(version, destination, (REAL,), files)


@pytest.fixture(scope="module")
def ran(repository: Path, tmp_path_factory: pytest.TempPathFactory) -> Run:
    return run_shim(repository, tmp_path_factory.mktemp("grader"), [REAL, SHAPES, BROKEN, RAISING])


def real_outcomes(repo: Path) -> dict[str, str]:
    """REAL's tests, all passing, by their node ids (what the source defines)."""
    tree = ast.parse((repo / REAL).read_text())
    return {f"{REAL}::{name}": "passed" for name in module_functions(tree.body)}


def test_each_test_streams_its_outcome(ran: Run) -> None:
    streamed = ran.streamed
    assert streamed.outcomes == {**real_outcomes(ran.repo), **SHAPE_OUTCOMES}, ran.output
    assert streamed.finished and streamed.tests == streamed.written == len(streamed.outcomes)


def test_lines_name_the_file_and_the_runners_id(ran: Run) -> None:
    tests = [line for line in ran.lines if line["kind"] == "test"]
    for line in tests:
        node = str(line["nodeid"])
        assert line["file"] == node.split("::")[0] and line["classname"] == line["name"] == ""
        assert line["id"] == (node.split("::")[1].split("[")[0] if "::" in node else "")
    assert ran.lines[-1] == {"kind": "end", "tests": len(tests), "seq": len(ran.lines) - 1}


def test_sealed_checks_are_recorded_for_their_tests(ran: Run) -> None:
    """A sealed assert (``_gym_seal``) and a sealed ``raises`` block (``_gym_raises`` around sympy's own
    ``raises(BaseException)`` context) record their values for the test that ran them."""
    sealed, raised = ran.streamed.records
    assert (sealed.token, sealed.case, sealed.value) == ("t1", f"{SHAPES}::test_sealed", 5)
    assert (raised.token, raised.case) == ("t2", f"{SHAPES}::test_sealed_raises")
    assert raised.value["mro"][0] == "builtins.ZeroDivisionError"


DECOYED = "sympy/core/tests/test_gym_decoyed.py"
DECOYED_SOURCE = "from sympy import Integer\n\n\ndef test_grows():\n    for x in (1, 2, 3):\n" \
                 "        assert Integer(2) * x > x\n"  # fmt: skip


def test_a_raises_decoy_fails_under_sympys_runner_and_the_run_finishes(
    repository: Path, tmp_path: Path
) -> None:
    """A test whose last statement is a loop gets a ``raises`` decoy (sympy__sympy-13852's shape); sympy's
    modules import no pytest, so the decoy's context is unittest's, whose failure is an AssertionError: sympy's
    runner counts it as the decoy's failure (``F``) and runs on (pytest.raises' BaseException ended the run)."""
    planting = plant({DECOYED: DECOYED_SOURCE}, [parse_test_id(f"{DECOYED}::test_grows")], random.Random(0))
    (group,) = planting.groups
    assert group.kind == "raises"
    (repository / DECOYED).write_text(planting.sources[DECOYED])
    try:
        ran = run_shim(repository, tmp_path / "grader", [DECOYED, REAL])
    finally:
        (repository / DECOYED).unlink()
    streamed = ran.streamed
    assert streamed.finished, ran.output
    assert streamed.outcomes[group.planted_original] == "passed", ran.output
    assert [streamed.outcomes[decoy] for decoy in group.decoys] == ["failed"] * len(group.decoys), ran.output
    assert set(real_outcomes(repository)) <= set(streamed.outcomes)  # the next file ran too


def test_the_exit_status_is_the_runners(ran: Run, repository: Path, tmp_path: Path) -> None:
    assert ran.returncode == 1  # tests failed
    passing = run_shim(repository, tmp_path / "grader", [REAL])
    assert passing.returncode == 0, passing.output
    assert passing.streamed.outcomes == real_outcomes(repository) and passing.streamed.finished


def test_node_ids_map_the_runners_ids_to_the_streamed_node_ids(ran: Run) -> None:
    """`node_ids`, reading the test files' text, finds the node id the shim streamed for each test's id."""
    sources = {file: (ran.repo / file).read_text() for file in (REAL, SHAPES, BROKEN, RAISING)}
    streamed = {
        str(line["id"]): str(line["nodeid"])
        for line in ran.lines
        if line["kind"] == "test" and str(line["id"]).startswith("test_")
    }
    assert len(streamed) >= len(real_outcomes(ran.repo)) + 10
    assert RUNNER.node_ids([*streamed, "test_not_anywhere"], sources) == streamed


def test_node_ids_take_the_last_file_by_path_of_a_name_two_define() -> None:
    """sympy 1.12's two test_normalforms.py files (one SWE-bench task runs both) both define
    test_smith_normal; a bare id maps to the file sympy's runner runs last (its files in path order), whose
    outcome SWE-bench's log parser kept, in whatever order the sources come."""
    first, second = (
        "sympy/matrices/tests/test_normalforms.py",
        "sympy/polys/matrices/tests/test_normalforms.py",
    )
    with tarfile.open(sympy_sdist("1.12")) as archive:
        texts = {path: archive.extractfile(f"sympy-1.12/{path}").read().decode() for path in (first, second)}  # type: ignore[union-attr]
    ids = ["test_smith_normal", "test_issue_23410"]  # in both; in the first only
    expected = {
        "test_smith_normal": f"{second}::test_smith_normal",
        "test_issue_23410": f"{first}::test_issue_23410",
    }
    assert RUNNER.node_ids(ids, texts) == expected
    assert RUNNER.node_ids(ids, {second: texts[second], first: texts[first]}) == expected


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("def test_a():\n    pass\n", ["test_a"]),
        ("def helper():\n    pass\n", []),
        ("class TestA:\n    def test_m(self):\n        pass\n", []),  # sympy's runner runs functions only
        ("def test_outer():\n    def test_inner():\n        pass\n", ["test_outer"]),
        ("if X:\n    def test_if():\n        pass\nelse:\n    def test_else():\n        pass\n",
         ["test_if", "test_else"]),
        ("try:\n    def test_try():\n        pass\nexcept ImportError:\n    def test_except():\n        pass\n"
         "finally:\n    def test_finally():\n        pass\n", ["test_try", "test_except", "test_finally"]),
        ("with x:\n    async def test_async():\n        pass\n", ["test_async"]),
    ],
)  # fmt: skip
def test_module_functions_are_what_sympys_runner_collects(source: str, found: list[str]) -> None:
    assert list(module_functions(ast.parse(source).body)) == found


def test_node_ids_skip_a_file_that_does_not_parse() -> None:
    sources = {
        "sympy/a/tests/test_x.py": "def test_a(:\n",
        "sympy/b/tests/test_y.py": "def test_a():\n    pass\n",
    }
    assert RUNNER.node_ids(["test_a"], sources) == {"test_a": "sympy/b/tests/test_y.py::test_a"}


def _part(old: str | None, new: str | None) -> str:
    header = f"diff --git a/{old or new} b/{new or old}\n"
    if old is None:
        header += "new file mode 100644\n"
    if new is None:
        header += "deleted file mode 100644\n"
    return f"{header}--- {'a/' + old if old else '/dev/null'}\n+++ {'b/' + new if new else '/dev/null'}\n@@ -1 +1 @@\n-x\n+y\n"


def test_test_files_are_the_patch_files_sympys_runner_selects() -> None:
    patch = "".join([
        _part("sympy/core/tests/test_basic.py", "sympy/core/tests/test_basic.py"),
        _part("sympy/testing/quality_unicode.py", "sympy/testing/quality_unicode.py"),  # a helper, not run
        _part(None, "sympy/sets/tests/test_new.py"),
        _part("sympy/old/tests/test_gone.py", None),  # deleted: nothing to run
        _part("doc/src/tests/test_doc.py", "doc/src/tests/test_doc.py"),  # outside sympy/: not run
        _part("sympy/core/tests/test_basic.py", "sympy/core/tests/test_basic.py"),
    ])  # fmt: skip
    assert RUNNER.test_files(["test_a"], patch) == [
        "sympy/core/tests/test_basic.py",
        "sympy/sets/tests/test_new.py",
    ]


def test_command_is_swe_benchs_bin_test_through_the_shim() -> None:
    command = RUNNER.command(
        "/testbed dir", "/tmp/gym_swe_grader/sympy_driver.py", ["sympy/a/tests/test_x.py"]
    )
    assert command == (
        "cd '/testbed dir' && python /tmp/gym_swe_grader/sympy_driver.py run '/testbed dir' -- "
        "-C --verbose sympy/a/tests/test_x.py"
    )
    assert RUNNER.environment() == {"PYTHONWARNINGS": "ignore::UserWarning,ignore::SyntaxWarning"}


def test_unsupported_are_ids_sympys_runner_cannot_name() -> None:
    ids = [
        "test_issue_12345",
        "test_Matrix",
        "sympy/core/tests/test_x.py::test_a",
        "helper",
        "test_a[1]",
        "test_",
    ]
    assert RUNNER.unsupported(ids) == ["sympy/core/tests/test_x.py::test_a", "helper", "test_a[1]"]


def test_every_swe_bench_sympy_id_is_supported(shared_data: Path) -> None:
    """SWE-bench Lite and Verified: how many of sympy's FAIL_TO_PASS / PASS_TO_PASS ids the runner refuses
    (none: 152 tasks, 2945 distinct ids when this was written)."""
    parquet = pytest.importorskip("pyarrow.parquet")
    files = [
        shared_data / "swe-bench" / name
        for name in ("SWE-bench_Lite-test.parquet", "SWE-bench_Verified-test.parquet")
    ]
    if not all(file.exists() for file in files):
        pytest.skip("SWE-bench's parquet files are not in the shared data")
    ids = [
        test_id
        for file in files
        for row in parquet.read_table(file, columns=["repo", "FAIL_TO_PASS", "PASS_TO_PASS"]).to_pylist()
        if row["repo"] == "sympy/sympy"
        for column in ("FAIL_TO_PASS", "PASS_TO_PASS")
        for test_id in json.loads(row[column])
    ]
    assert len(ids) > 1000
    assert RUNNER.unsupported(ids) == []


def test_a_bin_test_that_runs_no_sympy_runner_streams_no_tests(tmp_path: Path) -> None:
    """sympy >= 1.13.0's bin/test runs pytest unless given --use-sympy-runner: nothing is streamed for any
    test (each then fails), the run still ends with its own exit status, and stderr says why."""
    repo = tmp_path / "repo"
    (repo / "bin").mkdir(parents=True)
    (repo / "bin" / "test").write_text("import sys\nprint('ran something else')\nsys.exit(3)\n")
    run = run_shim(repo, tmp_path / "grader", ["sympy/core/tests/test_basic.py"])
    assert run.returncode == 3
    assert run.lines == [{"kind": "end", "tests": 0, "seq": 0}]
    assert "ran something else" in run.output and "sympy's own test runner" in run.output


def test_a_bin_test_that_breaks_before_the_runner_says_why_and_leaves_no_end_line(tmp_path: Path) -> None:
    """sympy 1.1 under Python 3.11 (a docker task image): importing sympy fails in bin/test itself. The run
    did not finish (no end line), and its traceback is the reason, not "bin/test ran something else"."""
    repo = tmp_path / "repo"
    (repo / "bin").mkdir(parents=True)
    (repo / "bin" / "test").write_text(
        "from collections import Mapping_gone\n"
    )  # Python 3.9 still has Mapping
    run = run_shim(repo, tmp_path / "grader", ["sympy/core/tests/test_basic.py"])
    assert run.returncode != 0 and run.lines == []
    assert "ImportError: cannot import name 'Mapping_gone'" in run.output
    assert "sympy's own test runner" not in run.output
