"""Runs sympy's own test runner for the repository grader, inside the grading sandbox, and streams one line
per test as it ends.

Run as a script with the task environment's python, standard library only, Python >= 3.6 (the floor of the
pytest driver it imports; SWE-bench runs every sympy version with 3.9):

    python sympy_driver.py run WORKDIR -- ARGS    (ARGS: bin/test's, e.g. -C --verbose sympy/core/tests/x.py)

The runner is the repository's own: ``WORKDIR/bin/test`` is run in this process (``runpy``) as ``python
bin/test ARGS`` would run it, and it runs the tests with ``sympy.testing.runtests`` (sympy >= 1.6) or
``sympy.utilities.runtests`` (older). Nothing of it is replaced: when that module is imported, its reporter
class (``PyTestReporter``) is replaced by a subclass whose ``entering_test``, ``test_pass``, ``test_fail``,
``test_exception``, ``test_skip``, ``test_xfail``, ``test_xpass`` and ``import_error`` also write to the
stream, and ``SymPyTests.test_file`` is wrapped to know which file runs.

Where the grader names a records descriptor (``GYM_SWE_RECORDS_FD``), it is taken first thing, before any
code of the repository's runs, and the grader's pytest driver (written beside this script as ``driver.py``)
gives the stream and the sealed checks' recorder (``_gym_seal`` / ``_gym_raises`` in builtins). The lines:

- one ``test`` line per test as it ends: ``nodeid`` ``FILE::name`` (FILE relative to WORKDIR, with ``/``),
  ``file`` FILE, ``id`` the test's name as sympy's runner prints it (the dataset's id), ``outcome``: passed
  (what sympy's verbose output marks ``ok``, the only mark SWE-bench's log parser reads as PASSED), failed (an
  assertion failed, or an ``@XFAIL`` test passed: ``X``), error (any other exception: ``E``, or ``T`` for a
  timeout), skipped (``skip()``, ``@SKIP``, ``@slow`` without ``--slow``, or an ``@XFAIL`` test that failed);
- one ``test`` line with outcome error and nodeid FILE for a test file that does not import or whose module
  code raised (sympy then runs the tests defined before the error, each with its own line);
- a second test of the same name in a file (the cases of a generator test) is ``FILE::name[2]``, ``[3]`` ...;
- at the end, when the runner returns or exits, an ``end`` line with the number of test lines; a runner that
  breaks (an exception out of bin/test) leaves none: the run did not finish. A test that was running when the
  run ended (a test's own ``sys.exit``) gets an error line first.

A bin/test that never imports sympy's runner streams no test line, and stderr says so: from sympy 1.13.0 on,
bin/test runs pytest unless given ``--use-sympy-runner`` (no SWE-bench task's base commit is that recent). One
that raises first (sympy that does not import on this Python) leaves its traceback to say why.

While a test runs, ``PYTEST_CURRENT_TEST`` is ``NODE (call)``, which the sealed checks' recorder reads.

sympy's ``test()`` runs the tests in a child python with hash randomization unless ``PYTHONHASHSEED`` is set;
where it is not, it is set to ``random`` here (what this process already has), so the tests run in this
process, where the hooks are. The exit status is bin/test's. Nothing is printed to stdout but the runner's own
output: the stream is the only channel of outcomes.
"""

import os
import sys

RECORDS_FD = "GYM_SWE_RECORDS_FD"
RUNNER_MODULES = ("sympy.testing.runtests", "sympy.utilities.runtests")
DRIVER_MODULE = "_gym_swe_pytest_driver"


def load_driver():
    """The grader's pytest driver (``driver.py`` beside this script), under a private module name."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "driver.py")
    import importlib.util

    spec = importlib.util.spec_from_file_location(DRIVER_MODULE, path)
    if spec is None or spec.loader is None:
        raise ImportError("no driver.py beside " + __file__)
    module = importlib.util.module_from_spec(spec)
    sys.modules[DRIVER_MODULE] = module
    spec.loader.exec_module(module)
    return module


class Tracker:
    """Which file and test sympy's runner is in, and the stream lines of the tests that end."""

    def __init__(self, stream, workdir):
        self.stream, self.workdir = stream, workdir
        self.file = None  # the test file being run, relative to WORKDIR
        self.node = None  # the node id of the test running, None between tests
        self.name = None
        self.seen = set()
        self.hooked = False  # whether sympy's runner module was imported, and hooked

    def relative(self, filename):
        path = os.path.relpath(os.path.realpath(filename), self.workdir)
        return path.replace(os.sep, "/")

    def enter_file(self, filename):
        self.file = self.relative(filename)

    def start(self, function):
        name = getattr(function, "__name__", None) or "?"
        node = f"{self.file}::{name}"
        if node in self.seen:  # the cases a generator test yields, each a lambda
            count = 2
            while f"{node}[{count}]" in self.seen:
                count += 1
            node = f"{node}[{count}]"
        self.seen.add(node)
        self.node, self.name = node, name
        os.environ["PYTEST_CURRENT_TEST"] = node + " (call)"

    def end(self, outcome):
        """The running test ended with ``outcome``; an error outside a test is its file's."""
        if self.node is None:
            if outcome == "error":
                self.module_error(None)
            return
        node, name = self.node, self.name
        self.node = self.name = None
        os.environ.pop("PYTEST_CURRENT_TEST", None)
        self.emit(node, self.file, outcome, name)

    def abort(self):
        """The run ended while a test ran: that test did not pass."""
        if self.node is not None:
            self.end("error")

    def module_error(self, filename):
        """A test file that did not import, or whose module code raised: one error line for the file."""
        file = self.relative(filename) if filename else self.file
        if file is None or file in self.seen:
            return
        self.seen.add(file)
        self.emit(file, file, "error", "")

    def emit(self, node, file, outcome, name):
        if self.stream is not None:
            fields = {"nodeid": node, "classname": "", "name": "", "file": file, "outcome": outcome}
            fields["id"] = name
            self.stream.write("test", fields)


# The reporter's calls that end a test, and the outcome each gives it (sympy's verbose mark in the comment).
ENDINGS = (
    ("test_pass", "passed"),  # ok: the only mark SWE-bench's log parser reads as PASSED
    ("test_fail", "failed"),  # F: an assertion failed
    ("test_exception", "error"),  # E (T: a timeout with fail_on_timeout); outside a test, the file's error
    ("test_skip", "skipped"),  # s, or the reason (Slow, Timeout, KeyboardInterrupt of a slow test)
    ("test_xfail", "skipped"),  # f: an @XFAIL test that failed
    ("test_xpass", "failed"),  # X: an @XFAIL test that passed, which sympy's runner counts as a failure
)


def streaming_reporter(base, tracker):
    """A subclass of sympy's reporter class ``base`` that also tells ``tracker`` as each test starts and
    ends, and which test file does not import."""

    def ending(original, outcome):
        def hooked(self, *args, **kwargs):
            tracker.end(outcome)
            return original(self, *args, **kwargs)

        return hooked

    def entering_test(self, f):
        tracker.start(f)
        return base.entering_test(self, f)

    def import_error(self, filename, *args, **kwargs):
        tracker.module_error(filename)
        return base.import_error(self, filename, *args, **kwargs)

    methods = {"entering_test": entering_test, "import_error": import_error, "_gym_swe_hooked": True}
    for name, outcome in ENDINGS:
        methods[name] = ending(getattr(base, name), outcome)
    return type(base.__name__, (base,), methods)


def hook_runner(module, tracker):
    """Put the streaming reporter in place of ``module``'s own, and make its test runner say which file runs.
    A module that only re-exports another's names (sympy >= 1.6's ``sympy.utilities.runtests``) is left as is:
    the classes it names are hooked where they are defined. Whether it hooked ``module``."""
    reporter_class = getattr(module, "PyTestReporter", None)
    tests_class = getattr(module, "SymPyTests", None)
    if reporter_class is None or tests_class is None:
        return False
    if getattr(reporter_class, "_gym_swe_hooked", False) or reporter_class.__module__ != module.__name__:
        return False
    tracker.hooked = True
    module.PyTestReporter = streaming_reporter(reporter_class, tracker)
    original_test_file = tests_class.test_file

    def test_file(self, filename, *args, **kwargs):
        tracker.enter_file(filename)
        return original_test_file(self, filename, *args, **kwargs)

    tests_class.test_file = test_file
    return True


class RunnerFinder:
    """A ``sys.meta_path`` finder that finds sympy's runner module as the other finders would, and hooks the
    module once its code has run (before ``bin/test`` calls it)."""

    def __init__(self, tracker):
        self.tracker = tracker

    def find_spec(self, name, path, target=None):
        if name not in RUNNER_MODULES:
            return None
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        execute, tracker = loader.exec_module, self.tracker

        def exec_module(module):
            execute(module)
            if hook_runner(module, tracker) and self in sys.meta_path:
                sys.meta_path.remove(self)  # hooked: no other import needs looking at

        loader.exec_module = exec_module
        return spec


def run(workdir, args):
    # First thing, before any code of the repository's runs: the stream's descriptor, out of the way.
    stream = None
    if os.environ.get(RECORDS_FD):
        fd = int(os.environ.pop(RECORDS_FD))
        driver = load_driver()
        stream = driver.Stream(driver.keep_stream_fd(fd))
        driver.install_recorder(stream)
    tracker = Tracker(stream, workdir)
    # sympy's test() runs the tests in this process only where PYTHONHASHSEED is set; "random" is what this
    # process has (and what the commands the tests start then get).
    if not os.environ.get("PYTHONHASHSEED"):
        os.environ["PYTHONHASHSEED"] = "random"
    script = os.path.join(workdir, "bin", "test")
    # As `python bin/test` has it: the script's directory first on sys.path (for its `get_sympy`), not ours.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [entry for entry in sys.path if os.path.realpath(entry or os.getcwd()) != here]
    sys.path.insert(0, os.path.dirname(os.path.realpath(script)))
    sys.meta_path.insert(0, RunnerFinder(tracker))
    sys.argv[:] = [script, *list(args)]
    status = 0  # type: int | str | None
    broke = False
    try:
        import runpy

        runpy.run_path(script, run_name="__main__")
    except SystemExit as exit:  # bin/test's own sys.exit, or a test's that ended the run
        status = exit.code
        tracker.abort()
    except BaseException:  # the runner itself broke: no end line, the run did not finish
        broke = True  # its traceback says why (sympy that does not import), not "ran something else"
        tracker.abort()
        raise
    finally:
        sys.stdout.flush()
        if not tracker.hooked and not broke:
            runners = " or ".join(RUNNER_MODULES)
            sys.stderr.write(
                f"gym_swe: sympy's own test runner ({runners}) never ran: bin/test ran something else (from "
                "sympy 1.13.0 on, bin/test runs pytest unless given --use-sympy-runner)\n"
            )
    if stream is not None:
        stream.write("end", {"tests": stream.tests})
    return status


def main(argv):
    if len(argv) < 4 or argv[1] != "run" or "--" not in argv:
        sys.stderr.write("usage: python sympy_driver.py run WORKDIR -- BIN_TEST_ARGS\n")
        return 2
    workdir = os.path.realpath(argv[2])
    separator = argv.index("--")
    return run(workdir, argv[separator + 1 :])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
