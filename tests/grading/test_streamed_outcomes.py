"""Outcomes streamed out of the grading sandbox as each test ends (`gym_swe.grading.outcome_stream`).

The code under test runs in pytest's own process: when it exits it can rewrite every file that process wrote
(the JUnit report, the sealed records of old). What it cannot do is take back the lines the driver already
sent down the records pipe to the sandbox's executor. On the bundled SWE tasks, in real sandboxes, with the
honest fix as the control beside each attack:

1. a forger that rewrites the report to all-passed and writes sealed records at exit earns 0: rejected with
   the reason where decoys ran (its report is not what the stream showed), failed where sealed checks stand
   instead (their records come from the stream, not from the file it wrote); the gold patch earns 1.0;
2. lines written into the stream after the session ended (atexit), beside the gold patch: rejected;
3. a second record for a test (a forged "passed" before each real failure, written through the driver's own
   stream object): rejected.

Then the stream's reader itself, table-driven: bounds, malformed lines, order, and the cross-check.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator

import pytest

from gym_swe.grading.outcome_stream import Streamed, StreamError, cross_check, read_stream
from gym_swe.tasks.swe import SWETask, load_swe_tasks
from tests.redteam.scripted import bash, make_env, run_episode, write
from tests.redteam.test_trust_boundaries import append

TASKS = {task.instance_id: task for task in load_swe_tasks("bundled")}
ONE_PER_PACKAGE = ["gymswe__semverkit-1", "gymswe__inikit-2", "gymswe__tabletext-3"]
PACKAGES = {"semverkit": "semverkit", "inikit": "inikit", "tabletext": "tabletext"}
BACKENDS = ["local", pytest.param("docker", marks=pytest.mark.docker)]


@pytest.fixture(scope="module", params=BACKENDS)
def env(request: pytest.FixtureRequest) -> Iterator:
    """One SWEGym env per backend for the whole module (a fresh grading sandbox is made for every grade)."""
    made = make_env("SWEGym-v0", request.param)
    yield made
    made.close()


def _package_init(task: SWETask) -> str:
    return f"{PACKAGES[task.instance_id.split('__')[1].rsplit('-', 1)[0]]}/__init__.py"


def _fix(task: SWETask) -> list[str]:
    return [write("/tmp/fix.diff", task.patch), bash("git apply /tmp/fix.diff")]


# The run's last act: every test case of the JUnit report passed, and a sealed record for every token the test
# files show, where the grader read them before the stream (what the run could rewrite then).
FORGE_REPORT_AND_RECORDS = textwrap.dedent(
    """
    def _gym_forge():
        import glob, json, os, re, sys
        import xml.etree.ElementTree as ElementTree
        found = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--junitxml=")]
        if not found:
            return
        tree = ElementTree.parse(found[0])
        for case in tree.iter("testcase"):
            for child in [c for c in case if c.tag in ("failure", "error", "skipped")]:
                case.remove(child)
        tree.write(found[0])
        tokens = set()
        for path in glob.glob("tests/**/*.py", recursive=True):
            tokens.update(re.findall(r"_gym_(?:seal|raises)\\(\\s*['\\"]([^'\\"]+)", open(path).read()))
        with open(os.path.join(os.path.dirname(found[0]), "seals.jsonl"), "w") as records:
            for token in sorted(tokens):
                records.write(json.dumps({"token": token, "case": "", "plain": True, "value": 1}) + "\\n")

    import atexit
    atexit.register(_gym_forge)
    """
)

# After the session: forged lines into every pipe the process holds past stdout and stderr (the stream's
# descriptor among them, wherever the driver moved it), and into descriptor 3.
WRITE_AFTER_THE_END = textwrap.dedent(
    """
    def _gym_late():
        import json, os, stat
        line = json.dumps({"kind": "test", "seq": 10 ** 9, "nodeid": "tests/test_x.py::test_x",
                           "classname": "tests.test_x", "name": "test_x", "file": "tests/test_x.py",
                           "outcome": "passed"}) + "\\n"
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            try:
                if fd == 3 or (fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode)):
                    os.write(fd, line.encode())
            except OSError:
                pass

    import atexit
    atexit.register(_gym_late)
    """
)

# In the run, through the driver's own stream object: a "passed" record before each record of a test that did
# not pass (the real one still follows).
RECORD_TWICE = textwrap.dedent(
    """
    def _gym_twice():
        import gc
        for thing in gc.get_objects():
            if type(thing).__name__ == "Stream" and hasattr(thing, "seq") and hasattr(thing, "fd"):
                original = thing.write

                def write(kind, fields, original=original):
                    if kind == "test" and fields.get("outcome") != "passed":
                        original(kind, dict(fields, outcome="passed"))
                    original(kind, fields)

                thing.write = write

    _gym_twice()
    """
)


def test_control_the_gold_patch_earns_one(env) -> None:  # type: ignore[no-untyped-def]
    for task_id in ONE_PER_PACKAGE:
        task = TASKS[task_id]
        reward, terminated, _, info = run_episode(env, task_id, _fix(task))
        assert terminated and reward == 1.0, info["grade"]
        assert "record stream: " in info["grade"]["log"]


def test_a_report_and_records_rewritten_at_exit_earn_nothing(env) -> None:  # type: ignore[no-untyped-def]
    for task_id in ONE_PER_PACKAGE:
        task = TASKS[task_id]
        forge = [append(_package_init(task), FORGE_REPORT_AND_RECORDS)]
        reward, terminated, _, info = run_episode(env, task_id, forge)
        grade = info["grade"]
        assert terminated and "error" not in info, info.get("error")
        assert reward == 0.0, grade
        if grade["rejection"]:  # decoys ran: the report gives them (and the tests) outcomes never streamed
            assert "another outcome than the one streamed" in grade["rejection"], grade["rejection"]
        else:  # every test has a sealed check instead: streamed passed, its record (from the stream) fails it
            assert "reported passed, but its sealed check" in grade["log"], grade["log"]


def test_lines_written_to_the_stream_after_the_session_ended_are_rejected(env) -> None:  # type: ignore[no-untyped-def]
    task = TASKS[ONE_PER_PACKAGE[0]]
    actions = [*_fix(task), append(_package_init(task), WRITE_AFTER_THE_END)]
    reward, terminated, _, info = run_episode(env, task.instance_id, actions)
    grade = info["grade"]
    assert terminated and reward == 0.0, grade
    assert "after its end line" in (grade["rejection"] or ""), grade


def test_a_second_record_for_a_test_is_rejected(env) -> None:  # type: ignore[no-untyped-def]
    task = TASKS[ONE_PER_PACKAGE[1]]
    reward, terminated, _, info = run_episode(
        env, task.instance_id, [append(_package_init(task), RECORD_TWICE)]
    )
    grade = info["grade"]
    assert terminated and reward == 0.0, grade
    assert "a second record for" in (grade["rejection"] or ""), grade


# -- the reader ------------------------------------------------------------------------------------------------
def _test(seq: int, nodeid: str, outcome: str = "passed", **changes: object) -> dict[str, object]:
    path, _, name = nodeid.partition("::")
    line: dict[str, object] = {
        "kind": "test", "seq": seq, "nodeid": nodeid, "classname": path[:-3].replace("/", "."), "name": name,
        "file": path, "outcome": outcome,
    }  # fmt: skip
    line.update(changes)
    return line


def _lines(*lines: object) -> bytes:
    return b"".join(
        (line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n" for line in lines
    )


SEAL = {
    "kind": "seal",
    "seq": 1,
    "token": "T1",
    "case": "tests/test_a.py::test_a (call)",
    "plain": True,
    "value": 3,
}
GOOD = _lines(_test(0, "tests/test_a.py::test_a", "failed"), SEAL, _test(2, "tests/test_a.py::test_b"),
              {"kind": "end", "seq": 3, "tests": 2})  # fmt: skip


def test_a_whole_stream_reads_as_the_junit_report_would() -> None:
    streamed = read_stream(GOOD)
    assert streamed.outcomes == {"tests/test_a.py::test_a": "failed", "tests/test_a.py::test_b": "passed"}
    assert list(streamed.outcomes) == ["tests/test_a.py::test_a", "tests/test_a.py::test_b"]
    assert streamed.finished and streamed.tests == streamed.written == 2
    assert [(record.token, record.case, record.value) for record in streamed.records] == [
        ("T1", "tests/test_a.py::test_a", 3)
    ]


def test_keys_are_the_junit_reports_a_collection_error_by_its_file_and_gaps_are_lost_writes() -> None:
    collect = {"kind": "test", "seq": 0, "nodeid": "tests/test_b.py", "classname": "", "name": "tests.test_b",
               "file": "tests/test_b.py", "outcome": "error"}  # fmt: skip
    inherited = _test(5, "tests/test_a.py::TestA::test_a", classname="tests.test_a.TestA", name="test_a",
                      file="tests/base.py")  # fmt: skip
    streamed = read_stream(_lines(collect, inherited, {"kind": "end", "seq": 7, "tests": 3}))
    assert streamed.outcomes == {"tests/test_b.py": "error", "tests/test_a.py::TestA::test_a": "passed"}
    assert streamed.finished and streamed.written == 3  # a lost line: that test has no outcome, and fails


def test_a_stream_without_an_end_line_did_not_finish() -> None:
    streamed = read_stream(_lines(_test(0, "tests/test_a.py::test_a")))
    assert not streamed.finished and streamed.written is None
    assert read_stream(b"") == Streamed()


@pytest.mark.parametrize(
    ("data", "cut", "reason"),
    [
        (GOOD, 1, "more were cut"),
        (GOOD[:-1], 0, "ends inside a line"),
        (GOOD + b"x\n", 0, "not JSON"),
        (_lines([1, 2]), 0, "not a JSON object"),
        (_lines({"kind": "test"}), 0, "no valid seq"),
        (_lines(_test(True, "a.py::t")), 0, "no valid seq"),  # type: ignore[arg-type]
        (_lines(_test(0, "a.py::t", "xpassed")), 0, "an outcome that is none of"),
        (_lines(_test(0, "a.py::t", name=None)), 0, "without its names"),
        (_lines(_test(0, "a.py::t", file=3)), 0, "a bad file"),
        (_lines({"kind": "note", "seq": 0}), 0, "no known kind"),
        (_lines({"kind": "end", "seq": 0}), 0, "without a count"),
        (_lines({"kind": "seal", "seq": 0, "token": "T"}), 0, "does not read"),
        (_lines(_test(3, "a.py::t"), _test(3, "a.py::u")), 0, "seq 3 after 3"),
        (_lines(_test(3, "a.py::t"), _test(1, "a.py::u")), 0, "seq 1 after 3"),
        (GOOD + _lines(_test(9, "tests/test_a.py::test_c")), 0, "after its end line"),
        (GOOD + _lines({"kind": "end", "seq": 9, "tests": 2}), 0, "after its end line"),
        (_lines(_test(0, "a.py::t", "failed"), _test(1, "a.py::t")), 0, "a second record for 'a.py::t'"),
        (_lines(_test(0, "a.py::t"), _test(1, "a.py::u"), {"kind": "end", "seq": 2, "tests": 1}), 0,
         "holds 2 test records where the runner wrote 1"),
    ],
)  # fmt: skip
def test_a_stream_the_driver_alone_did_not_write_is_refused(data: bytes, cut: int, reason: str) -> None:
    with pytest.raises(StreamError, match=reason.replace("(", r"\(").replace("[", r"\[")):
        read_stream(data, cut)


@pytest.mark.parametrize(
    ("reported", "reason"),
    [
        ({"tests/test_a.py::test_a": "failed", "tests/test_a.py::test_b": "passed"}, None),
        ({"tests/test_a.py::test_a": "passed", "tests/test_a.py::test_b": "passed"}, "another outcome"),
        ({"tests/test_a.py::test_b": "passed", "tests/test_a.py::test_a": "failed"}, "another order"),
        ({"tests/test_a.py::test_a": "failed"}, "1 streamed test(s) missing"),
        ({"tests/test_a.py::test_a": "failed", "tests/test_a.py::test_b": "passed", "x.py::y": "passed"},
         "1 test(s) the stream never showed"),
    ],
)  # fmt: skip
def test_the_junit_report_must_name_the_streamed_tests_outcomes_and_order(
    reported: dict[str, str], reason: str | None
) -> None:
    found = cross_check(read_stream(GOOD), reported)
    assert found == reason if reason is None else reason in (found or ""), found


# -- the driver against pytest's own report: the stream and the JUnit report agree on every shape of test ----------
AGREEING_SUITE = {
    "tests/__init__.py": "",
    "tests/base.py": """
import pytest


class Inherited:
    def test_inherited(self):
        assert True
""",
    "tests/test_shapes.py": """
import sys
import pytest
from tests.base import Inherited


class TestChild(Inherited):
    def test_own(self):
        assert False


class TestNested:
    class TestInner:
        def test_deep(self):
            pass


@pytest.mark.parametrize("value", ["a b", "x::y", "[z]", "\\u00e9", "\\x01"])
def test_params(value):
    assert value != "x::y"


@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown")


def test_fails_then_teardown_errors(broken_teardown):
    assert False


def test_passes_then_teardown_errors(broken_teardown):
    pass


@pytest.fixture
def broken_setup():
    raise RuntimeError("setup")


def test_setup_errors(broken_setup):
    pass


def test_skipped():
    pytest.skip("no")


@pytest.mark.xfail
def test_xfail():
    assert False


@pytest.mark.xfail
def test_xpass():
    pass


@pytest.mark.xfail(strict=True)
def test_xpass_strict():
    pass
""",
    "tests/test_broken.py": "import nowhere_to_be_found\n\ndef test_never():\n    pass\n",
    "tests/test_module_skip.py": "import pytest\npytest.skip('all of it', allow_module_level=True)\n",
}


def test_the_stream_and_the_junit_report_agree_on_every_shape_of_test(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The false reject to avoid: an honest run whose JUnit report the cross-check would refuse. Classes (nested,
    inherited from another file), parameters with spaces, "::", brackets and characters XML cannot hold,
    failures in setup and teardown, skips, xfail/xpass, a file that does not import, a module skipped whole."""
    import sys

    streamed, reported = agreeing_run(tmp_path, sys.executable)
    assert streamed.finished and streamed.tests == streamed.written
    assert cross_check(streamed, reported) is None, (streamed.outcomes, reported)
    assert streamed.outcomes["tests/test_shapes.py::TestChild::test_own"] == "failed"
    assert streamed.outcomes["tests/test_shapes.py::test_fails_then_teardown_errors"] == "error"
    assert streamed.outcomes["tests/test_shapes.py::test_xpass_strict"] == "failed"
    assert streamed.outcomes["tests/test_broken.py"] == "error"
    assert streamed.outcomes["tests/test_module_skip.py"] == "skipped"
    assert len(streamed.outcomes) == 17


def agreeing_run(tmp_path, python: str) -> tuple[Streamed, dict[str, str]]:  # type: ignore[no-untyped-def]
    """`AGREEING_SUITE` run through the driver with ``python`` (and its pytest): what it streamed, what its
    JUnit report says."""
    import subprocess

    from gym_swe.grading.environment import DRIVER_SOURCE
    from gym_swe.grading.outcome_stream import RECORDS_FD_VARIABLE
    from gym_swe.grading.test_ids import junit_outcomes

    for path, text in AGREEING_SUITE.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    (tmp_path / "driver.py").write_bytes(DRIVER_SOURCE)
    with open(tmp_path / "stream.jsonl", "wb") as stream:
        subprocess.run(
            [python, str(tmp_path / "driver.py"), "run", str(tmp_path), "", "--", "-p", "no:cacheprovider",
             "-o", "junit_family=xunit1", f"--junitxml={tmp_path}/report.xml", "-c", "/dev/null",
             f"--rootdir={tmp_path}", "--continue-on-collection-errors", "tests"],
            cwd=tmp_path, capture_output=True, timeout=300, pass_fds=(stream.fileno(),),
            env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1", RECORDS_FD_VARIABLE: str(stream.fileno())},
        )  # fmt: skip
    streamed = read_stream((tmp_path / "stream.jsonl").read_bytes())
    return streamed, junit_outcomes((tmp_path / "report.xml").read_bytes())
