"""Runs pytest for the repository grader, inside the grading sandbox, so that the test runner and its plugins
come from the grader's environment whatever the workspace holds.

Run as a script with the task environment's python, standard library only, Python >= 3.6:

    python pytest_driver.py probe WORKDIR [FILE...] -> one JSON line: pytest's version and location, the
                                                      pytest11 plugins the environment installs, the
                                                      top-level module names a workspace must not shadow,
                                                      the workspace directories an editable install puts on
                                                      sys.path with the modules each holds, and the
                                                      configuration file and rootdir pytest takes for FILEs
    python pytest_driver.py run WORKDIR PLUGINS [self-hosted] -- PYTEST ARGS
    python pytest_driver.py scan WORKDIR NEEDLES      -> one JSON line: which of the strings in the JSON file
                                                      NEEDLES some text file of the tree holds (.git aside)

``probe`` runs on the pristine tree, before any change of the agent's is applied. ``run`` takes pytest and
each plugin module (comma-separated ``PLUGINS``) from ``sys.path`` with the workspace and this script's own
directory taken off, then puts the workspace first on ``sys.path`` (as ``python -m pytest`` does) and runs
pytest with plugin autoloading off (PYTEST_DISABLE_PLUGIN_AUTOLOAD, set by the grader) and the probed
plugins registered as the modules it imported. A module the workspace adds later cannot replace what is
already imported, and a ``*.dist-info`` it adds registers no plugin. The grader names the configuration
file and rootdir the probe found (``-c``, ``--rootdir``), so no file the workspace adds (``pytest.toml``,
``.pytest.toml``, a ``pytest.ini`` nearer the tests) is read as pytest's configuration.

A repository that *is* pytest (its editable install is the only pytest there is) is ``self-hosted``: the probe
says so, and ``run`` imports pytest from the workspace's editable directories, as a plain run would.

Where the grader names a records descriptor (``GYM_SWE_RECORDS_FD``: the pipe the sandbox's executor reads,
out of the run's reach), ``run`` streams what the grader reads through it, one JSON line each, as it
happens: a ``test`` line as each test ends (its node id, the names the JUnit report gives it, its final
outcome as that report would give it), a ``seal`` line for each record of a sealed check (`install_recorder`),
and at the end of the session an ``end`` line with the number of test lines. Every line carries ``seq``, its
place in the stream. The code under test runs in this process and could rewrite any file when it exits;
what already went down the pipe it cannot take back (`gym_swe.grading.outcome_stream` reads the stream).
"""

import json
import os
import re
import sys

# The type checker's names, for the type comments below: typing is never imported when this runs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any  # noqa: F401  (used in type comments, which ruff does not read)

ENTRY_POINT_GROUP = "pytest11"


def outside(workdir):
    """sys.path without the script's directory, the current directory and anything under the workspace."""
    here = os.path.dirname(os.path.abspath(__file__))
    kept = []
    for entry in sys.path:
        real = os.path.realpath(entry or os.getcwd())
        if real == here or real == workdir or real.startswith(workdir + os.sep):
            continue
        kept.append(entry)
    return kept


def plugin_entry_points():
    """(name, module) of every pytest11 entry point installed, first one of each name."""
    found = []
    try:
        from importlib import metadata

        for distribution in metadata.distributions():
            for entry_point in distribution.entry_points:
                if entry_point.group == ENTRY_POINT_GROUP:
                    found.append((entry_point.name, entry_point.value.split(":")[0].strip()))
    except ImportError:  # Python < 3.8: setuptools' pkg_resources, where installed
        try:
            import pkg_resources

            for entry_point in pkg_resources.iter_entry_points(ENTRY_POINT_GROUP):
                found.append((entry_point.name, entry_point.module_name))
        except ImportError:
            pass
    seen, unique = set(), []
    for name, module in found:
        if name not in seen:
            seen.add(name)
            unique.append((name, module))
    return unique


def top_level_modules(paths):
    """Names importable at the top level from ``paths``, the builtins and the standard library."""
    names = set(sys.builtin_module_names)
    names.update(getattr(sys, "stdlib_module_names", ()))
    for entry in paths:
        names.update(modules_in(entry))
    return sorted(names)


def modules_in(entry):
    """The top-level module and package names one ``sys.path`` entry holds."""
    if not os.path.isdir(entry):
        return []
    try:
        listing = os.listdir(entry)
    except OSError:
        return []
    names = set()
    for name in listing:
        if name.endswith(".py"):
            names.add(name[:-3])
        elif name.endswith((".so", ".pyd")):
            names.add(name.split(".", 1)[0])
        elif "." not in name and os.path.isdir(os.path.join(entry, name)) and name.isidentifier():
            names.add(name)
    return sorted(names)


def locate_config(workdir, files):
    """(configuration file, rootdir, None) pytest takes when it runs ``files`` from ``workdir``, by its own
    search (whose signature differs between versions); (None, None, why) when that cannot be asked."""
    try:
        import inspect

        from _pytest.config import findpaths

        determine = findpaths.determine_setup
        parameters = inspect.signature(determine).parameters
        args = list(files) or [workdir]
        options = {}  # type: dict[str, Any]  # what this pytest version's determine_setup takes
        if "invocation_dir" in parameters:
            import pathlib

            options["invocation_dir"] = pathlib.Path(workdir)
        if "override_ini" in parameters:
            options["override_ini"] = None
        if "rootdir_cmd_arg" in parameters:
            options["rootdir_cmd_arg"] = None
        found = determine(inifile=None, args=args, **options)
        rootdir, inifile = found[0], found[1]
        return (str(inifile) if inifile else None), (str(rootdir) if rootdir else None), None
    except Exception as error:  # the grader then runs pytest without naming them, as before
        return None, None, "%s: %s" % (type(error).__name__, error)


def probe(workdir, files):
    # A new module at the workspace's root (first on sys.path in `run`) must not take the name of one in
    # these, or the tests would import it in place of the project's code; nor may a new module in one of
    # them take an installed name (they can come before a system site-packages that follows the venv's).
    installed = installed_into(workdir)
    editable = {}
    for entry in installed:
        editable[os.path.relpath(os.path.realpath(entry), workdir)] = modules_in(entry)
    startup = list(sys.path)
    sys.path[:] = outside(workdir)
    report = {"python": sys.version.split()[0], "plugins": plugin_entry_points(), "self_hosted": False}
    try:
        import pytest
    except ImportError:
        # The repository may be pytest itself, served from its own tree by an editable install.
        sys.path[:] = [entry for entry in startup if entry in installed or entry in sys.path]
        try:
            import pytest

            report["self_hosted"] = True
        except Exception as again:
            pytest = None  # type: ignore[assignment]
            report["error"] = "%s: %s" % (type(again).__name__, again)
    except Exception as error:  # reported, and the grader says why it cannot run the tests
        pytest = None  # type: ignore[assignment]
        report["error"] = "%s: %s" % (type(error).__name__, error)
    report["pytest"] = getattr(pytest, "__version__", "?") if pytest is not None else None
    report["pytest_file"] = getattr(pytest, "__file__", "?") if pytest is not None else None
    if pytest is not None:
        report["config"], report["rootdir"], report["config_error"] = locate_config(workdir, files)
    sys.path[:] = outside(workdir)
    report["shadowable"] = top_level_modules(sys.path)
    report["editable"] = editable
    sys.stdout.write(json.dumps(report) + "\n")
    return 0


def installed_into(workdir):
    """The entries under the workspace that the environment's site-packages put on sys.path: an editable
    install of a src layout (``pip install -e .``) adds ``WORKDIR/src`` through a .pth file there."""
    here = os.path.dirname(os.path.abspath(__file__))
    kept = []
    for entry in sys.path[1:]:  # sys.path[0] is this script's directory
        if not entry or entry == here:
            continue
        real = os.path.realpath(entry)
        if real != workdir and real.startswith(workdir + os.sep):
            kept.append(entry)
    return kept


RECORDS_FD = "GYM_SWE_RECORDS_FD"  # the descriptor the stream goes to, named by the grader
MAX_DEPTH, MAX_ITEMS, MAX_RECORD_CHARS = 60, 1000000, 8 * 1024 * 1024
# Where the stream's descriptor is moved to first thing, so that code closing descriptor 3 (and opening a file
# that takes its number) cannot redirect the stream: the lowest free descriptor at or above the first of these
# that the process may have.
HIGH_FDS = (512, 128, 10)


def keep_stream_fd(fd):
    """Move the stream's descriptor ``fd`` out of the way (above `HIGH_FDS`), not inherited by the commands
    the tests start; the number it now has."""
    import fcntl

    for lowest in HIGH_FDS:
        try:
            high = fcntl.fcntl(fd, fcntl.F_DUPFD, lowest)
        except OSError:
            continue
        os.set_inheritable(high, False)
        os.close(fd)
        return high
    os.set_inheritable(fd, False)
    return fd


class Stream(object):
    """Lines to the records descriptor, each with its ``seq``. A write that fails is lost: the grader then
    has no line for that test, which fails."""

    def __init__(self, fd):
        self.fd = fd
        self.seq = 0
        self.tests = 0

    def write(self, kind, fields):
        line = dict(fields)
        line["kind"], line["seq"] = kind, self.seq
        self.seq += 1
        if kind == "test":
            self.tests += 1
        view = memoryview((json.dumps(line) + "\n").encode("utf-8", "surrogatepass"))
        try:
            while len(view):
                view = view[os.write(self.fd, view) :]
        except OSError:
            pass


# What pytest's JUnit report (_pytest.junitxml, pytest >= 6) writes as #xNN in a test's name: its pattern
# meant to keep characters above U+FFFF too, but reads as this one.
ILLEGAL_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd]")


def xml_escaped(found):
    number = ord(found.group())
    return "#x%02X" % number if number <= 0xFF else "#x%04X" % number


def mangle_address(address):
    """A node id as the JUnit report's names (pytest's own ``mangle_test_address``, as of pytest 8)."""
    path, bracket, params = address.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return names


def junit_names(report):
    """(classname, name, file) of ``report`` as pytest's JUnit XML report writes them for xunit1."""
    try:
        from _pytest import junitxml

        mangle = getattr(junitxml, "mangle_test_address", mangle_address)
    except ImportError:
        mangle = mangle_address
    names = mangle(report.nodeid)
    name = ILLEGAL_XML.sub(xml_escaped, names[-1])
    location = getattr(report, "location", None) or (None,)
    return ".".join(names[:-1]), name, location[0]


def outcome_of(reports):
    """A test's outcome as its JUnit report gives it, from the reports of its phases: "error" where setup or
    teardown failed, "failed" where the call did (a strict XPASS too), "skipped" (an xfail too), else
    "passed". Reports of other outcomes (a rerun's) count for nothing, as there."""
    failed = [report.when for report in reports if report.outcome == "failed"]
    if any(when != "call" for when in failed):
        return "error"
    if failed:
        return "failed"
    if any(report.outcome == "skipped" for report in reports):
        return "skipped"
    return "passed"


def outcome_streamer(stream):
    """The plugin that writes a ``test`` line as each test ends (after its teardown: ``logfinish`` where
    pytest has it, the teardown report before pytest 3.4), one for each collector that failed or was skipped
    (what the JUnit report keys by file), and the ``end`` line when the session finishes."""
    import pytest

    try:
        from _pytest import hookspec

        finishes = hasattr(hookspec, "pytest_runtest_logfinish")
    except ImportError:
        finishes = False

    class OutcomeStreamer(object):
        def __init__(self):
            self.phases = {}

        def emit(self, report, outcome):
            classname, name, file = junit_names(report)
            fields = {"nodeid": report.nodeid, "classname": classname, "name": name, "file": file}
            fields["outcome"] = outcome
            stream.write("test", fields)

        def pytest_collectreport(self, report):
            if report.outcome in ("failed", "skipped"):
                self.emit(report, "error" if report.outcome == "failed" else "skipped")

        def pytest_runtest_logreport(self, report):
            self.phases.setdefault(report.nodeid, []).append(report)
            if report.when == "teardown" and not finishes:
                self.finish(report.nodeid)

        @pytest.hookimpl(optionalhook=True)
        def pytest_runtest_logfinish(self, nodeid, location):
            self.finish(nodeid)

        def finish(self, nodeid):
            reports = self.phases.pop(nodeid, [])
            if reports:
                self.emit(reports[-1], outcome_of(reports))

        def pytest_sessionfinish(self, session):
            stream.write("end", {"tests": stream.tests})

    return OutcomeStreamer()


class NotPlain(Exception):
    pass


def plain(value, depth=0, budget=None):
    """A value as tagged JSON data, read through its base type (a str subclass is its text, never its own
    __eq__); NotPlain for anything that is not plain data, or too deep or too large."""
    if budget is None:
        budget = [MAX_ITEMS]
    budget[0] -= 1
    if depth > MAX_DEPTH or budget[0] < 0:
        raise NotPlain("too deep or too large")
    if value is None or isinstance(value, bool):
        return value if value is None else bool(int(value))
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        number = float.__float__(value)
        return (
            number if number == number and abs(number) != float("inf") else {"$": "float", "v": repr(number)}
        )
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, (bytes, bytearray)):
        return {"$": "bytes", "v": list(bytes(value))}
    for kind in (tuple, frozenset, set, list):
        if isinstance(value, kind):
            return {
                "$": kind.__name__,
                "v": [plain(item, depth + 1, budget) for item in kind.__iter__(value)],  # type: ignore[arg-type]
            }
    if isinstance(value, dict):
        items = [[plain(k, depth + 1, budget), plain(v, depth + 1, budget)] for k, v in dict.items(value)]
        return {"$": "dict", "v": items}
    # The standard library's stand-ins, as what they compare equal to: views of a dict's keys or items as
    # sets, UserString/UserList/UserDict and other mappings (ChainMap, MappingProxyType) as their data.
    import collections
    import collections.abc as abc

    if isinstance(value, (abc.KeysView, abc.ItemsView)):
        return {"$": "set", "v": [plain(item, depth + 1, budget) for item in list(value)]}
    if isinstance(value, collections.UserString):
        return plain(str(value.data), depth, budget)
    if isinstance(value, collections.UserList):
        return plain(list(value.data), depth, budget)
    if isinstance(value, abc.Mapping):
        return plain(dict(value.items()), depth, budget)
    # A number of another type (Fraction, Decimal, numpy's) that is exactly an int or a float, as that one
    try:
        for number_type in (int, float):
            if number_type(value) == value and type(number_type(value)) is number_type:
                return plain(number_type(value), depth, budget)
    except Exception:
        pass
    raise NotPlain(type(value).__name__)


def install_recorder(stream):
    """``_gym_seal(token, actual[, expected, op])`` and ``_gym_raises(token, catch_all[, expected, pattern])``
    in builtins: what the sealed checks of the test files call. ``_gym_seal`` records ``actual`` as plain data
    for the grader to hold against the expectation, which the run never has; ``_gym_raises`` wraps the test's
    own ``raises(BaseException)`` (or ``assertRaises``) and records what its block raised: the ancestry of its
    class (module and qualified name of each, read through ``type``'s own descriptors, which no class can
    change) and its message. With the expectation given (the gold patch's calibrating run) each also holds
    the check here, with Python's and pytest's own semantics, and fails the test as the check would. Each
    record is a ``seal`` line of ``stream``."""
    import builtins

    def write(record):
        if len(json.dumps(record)) > MAX_RECORD_CHARS:
            record.pop("value", None)
            record["plain"] = False
        stream.write("seal", record)

    def seal(token, actual, expected=None, op=None):
        record = {"token": token, "case": os.environ.get("PYTEST_CURRENT_TEST", "")}
        try:
            record["value"], record["plain"] = plain(actual), True
        except Exception:
            record["plain"] = False
        # which singleton it is, if any: an identity check (``is not None``) of a value that is not data
        record["singleton"] = next((repr(one) for one in (None, True, False) if actual is one), "")
        if op is not None:
            record["held"] = held(op, actual, expected)
        write(record)
        if op is not None and not record["held"]:
            raise AssertionError("%r %s %r does not hold" % (actual, op, expected))

    class SealedRaises(object):
        """The test's ``raises(BaseException)`` context, recording what its block raised on the way out."""

        def __init__(self, token, catch_all, expected=None, pattern=None):
            self.token, self.catch_all = token, catch_all
            self.expected, self.pattern = expected, pattern

        def __enter__(self):
            return self.catch_all.__enter__()

        def __exit__(self, kind, value, traceback):
            record = {"token": self.token, "case": os.environ.get("PYTEST_CURRENT_TEST", ""), "plain": True}
            try:
                record["value"] = None if value is None else plain(raised(value))
            except Exception:
                record["plain"] = False
            failure = None
            if self.expected is not None:
                names, ancestry = expected_classes(self.expected)
                record["expected"] = {"names": names, "ancestry": ancestry}
                record["held"] = (
                    value is not None
                    and isinstance(value, self.expected)
                    and (self.pattern is None or matches(self.pattern, value))
                )
                if value is not None and not record["held"]:
                    failure = AssertionError(
                        "%r is not %r matching %r" % (value, self.expected, self.pattern)
                    )
            write(record)
            if failure is not None:
                raise failure
            return self.catch_all.__exit__(kind, value, traceback)

    builtins._gym_seal = seal  # type: ignore[attr-defined]  # names of our own, for the sealed checks
    builtins._gym_raises = SealedRaises  # type: ignore[attr-defined]


def qualified(cls):
    """A class's module and qualified name, read through ``type``'s own descriptors."""
    module = type.__dict__["__module__"].__get__(cls)
    return "%s.%s" % (module, type.__dict__["__qualname__"].__get__(cls))


def raised(value):
    """What a sealed block raised, as data: its class's ancestry, its message (``str``, as pytest's ``match``
    and unittest's ``assertRaisesRegex`` read it) and its notes (which pytest 8's ``match`` reads too)."""
    ancestry = [qualified(cls) for cls in type.__dict__["__mro__"].__get__(type(value))]
    try:
        message = str(value)
    except Exception:
        message = None
    notes = getattr(value, "__notes__", None)
    notes = [note for note in notes if isinstance(note, str)] if isinstance(notes, list) else []
    return {"mro": ancestry, "message": message if isinstance(message, str) else None, "notes": notes}


def matches(pattern, value):
    """Whether ``match=`` holds: on the message, or (pytest 8) on the message with the notes after it."""
    message = str(value)
    notes = [note for note in getattr(value, "__notes__", None) or [] if isinstance(note, str)]
    texts = [message] + (["\n".join([message, *notes])] if notes else [])
    return any(re.search(pattern, text) is not None for text in texts)


def expected_classes(expected):
    """The names of the expected exception classes (one, or a tuple) and each one's ancestry."""
    classes = expected if isinstance(expected, tuple) else (expected,)
    names = [qualified(cls) for cls in classes]
    ancestry = [[qualified(base) for base in type.__dict__["__mro__"].__get__(cls)] for cls in classes]
    return names, ancestry


def held(op, actual, expected):
    try:
        if op == "==":
            return bool(actual == expected)
        if op == "!=":
            return bool(actual != expected)
        if op == "<":
            return bool(actual < expected)
        if op == "<=":
            return bool(actual <= expected)
        if op == ">":
            return bool(actual > expected)
        if op == ">=":
            return bool(actual >= expected)
        if op == "is":
            return actual is expected
        if op == "is not":
            return actual is not expected
        if op == "in":
            return bool(expected in actual)
        if op == "not in":
            return bool(expected not in actual)
        if op == "approx":
            import pytest

            return bool(actual == pytest.approx(expected))
    except Exception:
        return False
    return False


def run(workdir, plugins, self_hosted, args):
    # First thing, before any module of the workspace's can run: the stream's descriptor out of the way.
    stream = None
    if os.environ.get(RECORDS_FD):
        stream = Stream(keep_stream_fd(int(os.environ.pop(RECORDS_FD))))
    # Read before sys.path changes; these come from the prepared venv's .pth files, which the agent cannot
    # change (the venv is read-only): only the modules they lead to are the workspace's.
    startup = list(sys.path)
    editable = installed_into(workdir)
    sys.path[:] = outside(workdir)
    if self_hosted:  # the runner is the repository's own pytest, where its editable install serves it
        sys.path[:] = [entry for entry in startup if entry in editable or entry in sys.path]
    import pytest

    for module in plugins:
        try:
            __import__(module)
        except Exception as error:  # a plugin that does not import is left to pytest's own error
            sys.stderr.write("gym_swe: plugin %s does not import: %s\n" % (module, error))
    # The code under test is found as `python -m pytest` would find it, now that the runner is imported: the
    # workspace first, and each editable entry where site put it, after the site-packages whose .pth named
    # it, so that a module there never takes the place of an installed one.
    sys.path.insert(0, workdir)
    for entry in editable:
        if entry in sys.path:
            continue
        before = [kept for kept in startup[: startup.index(entry)] if kept in sys.path]
        sys.path.insert(sys.path.index(before[-1]) + 1 if before else 1, entry)
    registered = [sys.modules[name] for name in plugins if name in sys.modules]
    if stream is not None:
        install_recorder(stream)
        registered.append(outcome_streamer(stream))
    # The plugins go in as the modules imported above, not as -p names: pytest would mark a -p module for
    # assertion rewriting and warn that it is already imported, an error under filterwarnings=error
    # (pylint's configuration).
    return pytest.main(list(args), plugins=registered)


MAX_SCANNED_BYTES = 4 * 1024 * 1024


def scan(workdir, needles_file):
    """Which of the needles (a JSON list of strings) any text file under ``workdir`` holds: a file that
    decodes as UTF-8 (or Latin-1), up to MAX_SCANNED_BYTES, outside ``.git``."""
    with open(needles_file) as handle:
        needles = set(json.load(handle))
    found = set()  # type: set[str]
    for root, directories, files in os.walk(workdir):
        directories[:] = [name for name in directories if name != ".git"]
        for name in files:
            if found == needles:
                break
            path = os.path.join(root, name)
            try:
                if os.path.islink(path) or os.path.getsize(path) > MAX_SCANNED_BYTES:
                    continue
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            if b"\0" in data[:8192]:
                continue  # binary
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = data.decode("latin-1")
            found.update(needle for needle in needles - found if needle in text)
    sys.stdout.write(json.dumps(sorted(found)) + "\n")
    return 0


def main(argv):
    mode, workdir = argv[1], os.path.realpath(argv[2])
    if mode == "probe":
        return probe(workdir, argv[3:])
    if mode == "scan":
        return scan(workdir, argv[3])
    plugins = [name for name in argv[3].split(",") if name]
    separator = argv.index("--")
    return run(workdir, plugins, "self-hosted" in argv[4:separator], argv[separator + 1 :])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
