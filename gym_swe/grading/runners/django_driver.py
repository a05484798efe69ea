"""Runs Django's own ``tests/runtests.py`` for the grader, inside the grading sandbox, and streams each test's
outcome as it ends.

Run as a script with the task environment's python, standard library only, Python >= 3.5 (SWE-bench runs
Django 1.9-2.2 on 3.5: no f-strings, no variable annotations, no walrus here):

    python django_driver.py run WORKDIR -- RUNTESTS [RUNTESTS' ARGUMENTS...]

e.g. ``cd WORKDIR && python django_driver.py run WORKDIR -- ./tests/runtests.py --verbosity 2
--settings=test_sqlite --parallel 1 foo.tests``, SWE-bench's command. ``runtests.py`` runs in this process
(`runpy`, its directory first on ``sys.path`` as when it runs as a script), unchanged: what it prints is what
it would print, and the exit status is its own. ``--parallel 1`` keeps the tests in this process.

The stream (``GYM_SWE_RECORDS_FD``, taken before anything of the repository's is imported) and the sealed
checks' recorder are the pytest driver's own (``driver.py`` beside this file, loaded by path under a private
name). The hooks: ``unittest.TextTestRunner.run`` (Django's ``DiscoverRunner.run_suite`` runs its suite
through it) notes the suite and wraps the methods of the one result object it makes, so a ``TextTestRunner``
that a test itself runs is left alone. For each test, as it ends, one ``test`` line:

    {"nodeid": "tests/foo/tests.py::FooTests::test_bar", "classname": "", "name": "", "outcome": ...,
     "file": "tests/foo/tests.py", "id": "test_bar (foo.tests.FooTests)", "doc": "first docstring line"}

``nodeid`` is ``FILE::Class::method`` (a nested class's qualified name split on dots), FILE the file of the
module that defines the test's class (unittest's id names that module too), relative to WORKDIR. Outcomes:
an error or failure anywhere in the test (setUp, the test, tearDown, a subTest) fails it (``error`` for an
exception that is not an assertion); an expected failure that fails is ``skipped``, an unexpected success
``failed``. A test's line is held until the next test starts (or the run ends), so that an error in its
class's ``tearDownClass`` (or its module's ``tearDownModule``) makes it ``error``; an error in
``setUpClass``/``setUpModule`` gives each test of that class (module) that did not run an ``error`` line
(``skipped`` where it raised SkipTest); an error of Django's own ``_pre_setup`` (reported before unittest
starts the test) or ``_post_teardown`` (after it stopped) is the test's error. ``PYTEST_CURRENT_TEST`` is
``NODE (call)`` while a test runs (the sealed checks' records name the test by it).

A test module that does not import does not vanish: at the end each label (a dotted module name among the
arguments) whose module is not in ``sys.modules`` gets one ``error`` line, node id its file (unittest's own
``_FailedTest`` stand-in for it gets no line). Last, an ``end`` line, whatever happened.
"""

import os
import re
import sys

RECORDS_FD = "GYM_SWE_RECORDS_FD"
DRIVER_FILE = "driver.py"
SEVERITY = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
LABEL = re.compile(r"^[A-Za-z_]\w*(\.\w+)*$")
# runtests.py options whose value is the next argument: that argument is no label
VALUED_OPTIONS = frozenset(
    "-v --verbosity --settings --parallel --start-at --start-after --tag --exclude-tag -k --selenium "
    "--selenium-hub --external-host".split()
)


def load_driver():
    """The pytest driver (``driver.py`` beside this file) as a module of a private name."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), DRIVER_FILE)
    import importlib.util

    spec = importlib.util.spec_from_file_location("_gym_swe_pytest_driver", path)
    if spec is None or spec.loader is None:
        raise ImportError("gym_swe: no pytest driver at %s" % path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def worst(outcomes):
    return max(outcomes, key=lambda outcome: SEVERITY[outcome]) if outcomes else None


def class_name(cls):
    return getattr(cls, "__qualname__", cls.__name__)


def labels_of(args):
    """The test labels among runtests.py's arguments (``args[0]`` is the script)."""
    labels, skip = [], False
    for arg in args[1:]:
        if skip:
            skip = False
        elif arg.startswith("-"):
            skip = "=" not in arg and arg in VALUED_OPTIONS
        elif LABEL.match(arg):
            labels.append(arg)
    return labels


class Reporter:
    """Follows the one result object of the run and writes each test's line to the stream."""

    def __init__(self, stream, workdir, tests_dir):
        self.stream, self.workdir, self.tests_dir = stream, workdir, tests_dir
        self.running = False
        self.suite = []  # the run's test cases, in order: who a setUpClass error leaves out
        self.written = set()  # node ids with a line
        self.current = None  # [test, outcomes] of the test running
        self.pending = None  # [test, outcomes] of the test that ended last, its line not yet written

    # -- names ----------------------------------------------------------------------------------------------

    def relative(self, path):
        path = os.path.realpath(path)
        if path.endswith((".pyc", ".pyo")):
            path = path[:-1]
        relative = os.path.relpath(path, self.workdir)
        return relative.replace(os.sep, "/")

    def module_file(self, module_name):
        """A module's file relative to the workspace (where it is not imported: where its label points)."""
        module = sys.modules.get(module_name)
        path = getattr(module, "__file__", None)
        if path:
            return self.relative(path)
        base = os.path.join(self.tests_dir, *module_name.split("."))
        for candidate in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.exists(candidate):
                return self.relative(candidate)
        return self.relative(base + ".py")

    def node_of(self, test):
        """(node id, file) of a test case."""
        function = getattr(test, "_testFunc", None)  # unittest.FunctionTestCase
        if function is not None:
            module = getattr(function, "__module__", "") or ""
            file = self.module_file(module)
            return file + "::" + getattr(function, "__name__", "?"), file
        cls = type(test)
        file = self.module_file(cls.__module__)
        parts = [*class_name(cls).split("."), getattr(test, "_testMethodName", "?")]
        return "::".join([file, *parts]), file

    @staticmethod
    def case_of(test):
        """The test case of a subTest (what 3.11+ hands to addSkip for a skip inside one)."""
        return getattr(test, "test_case", test) if type(test).__name__ == "_SubTest" else test

    # -- lines ----------------------------------------------------------------------------------------------

    def write(self, test, outcome):
        try:
            node, file = self.node_of(test)
        except Exception as error:  # never let a name we cannot read stop the run
            sys.stderr.write("gym_swe: cannot name test %r: %s\n" % (test, error))
            return
        if node in self.written:
            sys.stderr.write("gym_swe: %s ran twice; its first outcome stands\n" % node)
            return
        self.written.add(node)
        fields = {"nodeid": node, "classname": "", "name": "", "file": file, "outcome": outcome}
        try:
            fields["id"] = str(test)
            fields["doc"] = test.shortDescription() or ""
        except Exception:
            pass
        self.stream.write("test", fields)

    def flush(self):
        if self.pending is not None:
            test, outcomes = self.pending
            self.pending = None
            self.write(test, worst(outcomes) or "error")

    def write_missing(self, matches, outcome):
        """A line for each test of the run that has none yet and that ``matches``."""
        for test in self.suite:
            if self.current is not None and test is self.current[0]:
                continue
            try:
                if not matches(test) or self.node_of(test)[0] in self.written:
                    continue
            except Exception:
                continue
            self.write(test, outcome)

    def fixture(self, description, outcome):
        """An error (or skip) of a class or module fixture, described ``setUpClass (foo.tests.FooTests)``."""
        match = re.match(r"^(\w+) \((.*)\)$", str(description))
        if not match:
            return
        method, parent = match.groups()

        def belongs(test):
            cls = type(test)
            if method.endswith("Module"):
                return cls.__module__ == parent
            return "%s.%s" % (cls.__module__, class_name(cls)) == parent

        if method.startswith("setUp"):
            self.flush()
            self.write_missing(belongs, outcome)
        elif self.pending is not None and belongs(self.pending[0]) and outcome == "error":
            self.pending[1].append("error")  # tearDownClass, tearDownModule, their cleanups

    # -- the hooks ------------------------------------------------------------------------------------------

    def attach(self, result):
        """Wrap the methods of the run's result object (the instance's own, so its class is untouched)."""
        reporter = self

        def mark(test, outcome):
            test = reporter.case_of(test)
            for held in (reporter.current, reporter.pending):
                if held is not None and test is held[0]:
                    held[1].append(outcome)
                    return
            # outside the test's startTest/stopTest: Django's _pre_setup raising (before unittest starts the
            # test) or _post_teardown (after it stopped; then it is still pending, above)
            if type(test).__name__ not in ("_ErrorHolder", "_FailedTest"):
                reporter.flush()
                reporter.write(test, outcome)

        def wrap(name, before):
            original = getattr(result, name, None)
            if original is None:
                return

            def hooked(*args, **kwargs):
                try:
                    before(*args)
                except Exception as error:
                    sys.stderr.write("gym_swe: %s hook: %s\n" % (name, error))
                return original(*args, **kwargs)

            setattr(result, name, hooked)

        def start(test):
            reporter.flush()
            reporter.current = [test, []]
            try:
                os.environ["PYTEST_CURRENT_TEST"] = reporter.node_of(test)[0] + " (call)"
            except Exception:
                pass

        def stop(test):
            os.environ.pop("PYTEST_CURRENT_TEST", None)
            if reporter.current is None or test is not reporter.current[0]:
                return
            current, reporter.current = reporter.current, None
            if type(test).__name__ == "_FailedTest":  # a label that did not import: the sweep names it
                return
            reporter.pending = current

        def error(test, err=None):
            if type(test).__name__ == "_ErrorHolder":
                reporter.fixture(test.description, "error")
            else:
                failure = getattr(reporter.case_of(test), "failureException", AssertionError)
                is_failure = err is not None and isinstance(err[0], type) and issubclass(err[0], failure)
                mark(test, "failed" if is_failure else "error")

        def skip(test, reason=None):
            if type(test).__name__ == "_ErrorHolder":
                reporter.fixture(test.description, "skipped")
            else:
                mark(test, "skipped")

        def subtest(test, subtest, err):
            if err is not None:
                failure = getattr(test, "failureException", AssertionError)
                failed = isinstance(err[0], type) and issubclass(err[0], failure)
                mark(test, "failed" if failed else "error")

        wrap("startTest", start)
        wrap("stopTest", stop)
        wrap("addSuccess", lambda test: mark(test, "passed"))
        wrap("addFailure", lambda test, err=None: mark(test, "failed"))
        wrap("addError", error)
        wrap("addSkip", skip)
        wrap("addExpectedFailure", lambda test, err=None: mark(test, "skipped"))
        wrap("addUnexpectedSuccess", lambda test: mark(test, "failed"))
        wrap("addSubTest", subtest)
        wrap("stopTestRun", lambda: reporter.flush())

    def hook_runner(self):
        import unittest

        original_run = unittest.TextTestRunner.run
        reporter = self

        def run(runner, test):
            if reporter.running:  # a test's own TextTestRunner: not the run we report
                return original_run(runner, test)
            reporter.running = True
            reporter.suite = list(flatten(test))
            make_result = runner._makeResult

            def make():
                result = make_result()
                reporter.attach(result)
                return result

            runner._makeResult = make
            try:
                return original_run(runner, test)
            finally:
                runner._makeResult = make_result
                reporter.flush()
                reporter.running = False

        unittest.TextTestRunner.run = run  # type: ignore[method-assign]  # the hook itself

    def sweep(self, labels):
        """An ``error`` line for each label whose module never imported."""
        for label in labels:
            if label in sys.modules:
                continue
            file = self.module_file(label)
            if file in self.written:
                continue
            self.written.add(file)
            self.stream.write(
                "test",
                {
                    "nodeid": file,
                    "classname": "",
                    "name": "",
                    "file": file,
                    "outcome": "error",
                    "id": label,
                    "doc": "",
                },
            )


def flatten(suite):
    """The test cases of a suite, in the order it runs them (a suite is iterable, a test case is not)."""
    if not hasattr(suite, "__iter__"):
        yield suite
        return
    for member in suite:
        yield from flatten(member)


def run(workdir, args):
    # First thing, before any module of the workspace's can run: the stream's descriptor out of the way.
    descriptor = os.environ.pop(RECORDS_FD, None)
    driver = load_driver()
    script = os.path.abspath(args[0])
    tests_dir = os.path.dirname(script)
    sys.argv = list(args)
    # runtests.py's directory first, where `python runtests.py` has it, in place of this script's own
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == here:
        sys.path[0] = tests_dir
    else:  # python -P / PYTHONSAFEPATH left this script's directory out
        sys.path.insert(0, tests_dir)
    if not descriptor:  # no grader listening: runtests.py as it is
        return run_script(script)
    stream = driver.Stream(driver.keep_stream_fd(int(descriptor)))
    reporter = Reporter(stream, workdir, tests_dir)
    driver.install_recorder(stream)
    reporter.hook_runner()
    try:
        return run_script(script)
    finally:
        try:
            reporter.flush()
            reporter.sweep(labels_of(args))
        finally:
            stream.write("end", {"tests": stream.tests})


def run_script(script):
    """Run ``script`` as ``__main__``; its exit status (what it passed to ``sys.exit``)."""
    import runpy

    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exit:
        return exit.code
    return 0


def main(argv):
    if len(argv) < 5 or argv[1] != "run" or argv[3] != "--":
        sys.stderr.write("usage: django_driver.py run WORKDIR -- RUNTESTS [ARGS...]\n")
        return 2
    return run(os.path.realpath(argv[2]), argv[4:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
