"""Grades one function against its hidden tests, inside a fresh grading sandbox.

Run as a script (``python3 function_runner.py CONFIG``), standard library only, Python >= 3.6. Two processes:

- the runner (trusted) reads the config (the hidden tests and the reference module) and deletes the file,
  makes itself non-dumpable (so no other process of its uid can read its memory, environment or file
  descriptors under /proc), then executes the test code statement by statement;
- the worker (untrusted) imports the agent's solution module and answers one request at a time: "call the
  entry point with these arguments". Arguments and results cross between the two as data (tagged JSON),
  never as objects, so nothing the solution does can reach the comparisons: an object whose ``__eq__``
  always says True, a patched ``assert``, ``sys.exit(0)`` at import, fake "PASSED" lines or report files
  all stay in the worker. The worker never sees the tests.

Each top-level statement of the test's ``check`` function that contains an ``assert`` is one test; the
others are set-up run in order. A call that runs past ``test_timeout`` kills the worker (a new one starts
for the next test) and its test is a timeout. The report is one JSON line on the runner's stdout.

Nothing the runner runs or imports once a worker exists comes from a place the worker can write. The runner
is started isolated (``python3 -I``: its own directory, where the worker could plant a module, is not on its
``sys.path``, nor the user's site directory, and no PYTHON* variable is read); workers are started from the
source the runner read when it began, not from this file, which the worker could rewrite; and where the
runner is root (a container), each worker runs as ``nobody``, so it cannot write the interpreter's own
library, which a later ``import`` in the tests would read. In a local jail the library is read-only already.
"""

import ast
import base64
import errno
import json
import math
import os
import select
import signal
import subprocess
import sys
import time

# The type checker's names, for the type comments below: typing is never imported when this runs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any  # noqa: F401  (used in type comments, which ruff does not read)

MAX_DEPTH = 60
MAX_ITEMS = 1000000
NOBODY = 65534


# -- values as data ----------------------------------------------------------------------------------------
class Opaque(object):
    """A value that was not plain data (an instance of the solution's own class, say). Equal to nothing."""

    def __init__(self, type_name, text):
        self.type_name = type_name
        self.text = text

    def __eq__(self, other):
        return False

    def __ne__(self, other):
        return True

    __hash__ = object.__hash__

    def __repr__(self):
        return "<%s %s>" % (self.type_name, self.text)


def encode(value, depth=0, budget=None):
    """Plain data to JSON-able form. Exact types only: a subclass of int or str is read through the base
    class, so overriding ``__eq__`` or ``__str__`` carries nothing across."""
    if budget is None:
        budget = [MAX_ITEMS]
    budget[0] -= 1
    if depth > MAX_DEPTH or budget[0] < 0:
        raise ValueError("value too deep or too large to compare")
    if value is None or isinstance(value, bool):
        return value if type(value) in (bool, type(None)) else bool(int.__int__(value))  # type: ignore[arg-type]
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        number = float.__float__(value)
        if math.isnan(number) or math.isinf(number):
            return {"$": "float", "v": repr(number)}
        return number
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, complex):
        # the slots themselves: complex.__complex__ exists only from Python 3.11
        return {"$": "complex", "v": [complex.real.__get__(value), complex.imag.__get__(value)]}
    if isinstance(value, (bytes, bytearray)):
        return {"$": "bytes", "v": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, (list, tuple, set, frozenset)):
        kind = "list"
        for base in (tuple, set, frozenset, list):
            if isinstance(value, base):
                kind = base.__name__
                break
        items = list(base.__iter__(value))  # type: ignore[arg-type]  # value is an instance of base
        return {"$": kind, "v": [encode(item, depth + 1, budget) for item in items]}
    if isinstance(value, dict):
        return {
            "$": "dict",
            "v": [[encode(k, depth + 1, budget), encode(v, depth + 1, budget)] for k, v in dict.items(value)],
        }
    try:
        text = object.__repr__(value)
    except Exception:
        text = "?"
    return {"$": "opaque", "type": type(value).__name__, "v": text[:200]}


def decode(data):
    if not isinstance(data, dict):
        return data
    kind, value = data.get("$"), data.get("v")  # type: Any, Any  # JSON from the worker
    if kind == "float":
        return float(value)
    if kind == "complex":
        return complex(value[0], value[1])
    if kind == "bytes":
        return base64.b64decode(value)
    if kind == "list":
        return [decode(item) for item in value]
    if kind == "tuple":
        return tuple(decode(item) for item in value)
    if kind == "set":
        return set(decode(item) for item in value)
    if kind == "frozenset":
        return frozenset(decode(item) for item in value)
    if kind == "dict":
        return dict((decode(k), decode(v)) for k, v in value)
    return Opaque(str(data.get("type")), str(value))


# -- the worker (untrusted side) ---------------------------------------------------------------------------
def worker_main(solution_path, entry_point):
    # The protocol keeps private copies of stdin/stdout; the solution's prints go to stderr (the log).
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    directory = os.path.dirname(os.path.abspath(solution_path))
    sys.path.insert(0, directory)

    def reply(message):
        replies.write(json.dumps(message).encode("utf-8") + b"\n")
        replies.flush()

    try:
        import importlib

        module = importlib.import_module(os.path.splitext(os.path.basename(solution_path))[0])
        function = getattr(module, entry_point)
    except BaseException as error:  # SystemExit at import included: that is a broken module, not a pass
        reply({"ready": False, "error": "%s: %s" % (type(error).__name__, error)})
        return
    reply({"ready": True})
    for line in requests:
        request = json.loads(line.decode("utf-8"))
        try:
            args = [decode(a) for a in request["args"]]
            kwargs = dict((k, decode(v)) for k, v in request["kwargs"].items())
            result = encode(function(*args, **kwargs))
            reply({"ok": True, "value": result})
        except BaseException as error:
            reply({"ok": False, "error": "%s: %s" % (type(error).__name__, str(error)[:500])})


# -- the runner (trusted side) -----------------------------------------------------------------------------
class CandidateError(Exception):
    """The solution raised, or could not be called."""


class CandidateTimeout(Exception):
    """A call to the solution ran past the time limit."""


class RunnerError(Exception):
    """The runner cannot do its job (no worker can be started at all): the grader's failure, not a test's."""


def demote():
    """In a worker about to start, where the runner is root: become ``nobody``, with no groups."""
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


class Worker(object):
    def __init__(self, solution, entry_point, log, source):
        self.solution = solution
        self.entry_point = entry_point
        self.log = log
        self.source = source  # this file's text as the runner read it, before any worker existed
        self.process = None  # type: Any  # the worker's subprocess.Popen while one runs
        self.buffer = b""
        self.started = 0  # workers started so far: after the first, the solution's code has run here

    def start(self, deadline):
        as_root = os.geteuid() == 0
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-B", "-c", self.source, "--worker", self.solution, self.entry_point],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.log,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"},
                cwd=os.path.dirname(os.path.abspath(self.solution)),
                preexec_fn=demote if as_root else None,
            )
        except OSError as error:
            if self.started and error.errno in (errno.EAGAIN, errno.ENOMEM):
                # The sandbox's processes or memory used up by what the solution left running: its failure.
                raise CandidateError(
                    "the solution's process could not start: %s (the solution's own "
                    "processes hold the sandbox's limits)" % error
                ) from None
            # An interpreter nobody may run, say: every test would fail, unfairly
            who = " as nobody (uid %d): the sandbox's python must be usable by any user" % NOBODY
            message = "the solution's process could not start%s: %s" % (who if as_root else "", error)
            raise RunnerError(message) from None
        self.started += 1
        hello = self.read(deadline)
        if not hello.get("ready"):
            self.stop()  # it has exited: the next test starts a new one rather than writing to a closed pipe
            raise CandidateError("the solution cannot be imported: %s" % hello.get("error"))

    def read(self, deadline):
        while b"\n" not in self.buffer:
            wait = max(deadline - time.monotonic(), 0)
            ready, _, _ = select.select([self.process.stdout], [], [], wait)
            if not ready:
                self.stop()
                raise CandidateTimeout("timed out")
            chunk = os.read(self.process.stdout.fileno(), 65536)
            if not chunk:
                code = self.process.wait()
                self.process = None
                raise CandidateError("the solution's process ended (exit status %s)" % code)
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line.decode("utf-8"))

    def call(self, args, kwargs, deadline):
        if self.process is None:
            self.start(deadline)
        message = {
            "args": [encode(a) for a in args],
            "kwargs": dict((k, encode(v)) for k, v in kwargs.items()),
        }
        try:
            self.process.stdin.write(json.dumps(message).encode("utf-8") + b"\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            self.stop()
            raise CandidateError("the solution's process is gone") from None
        answer = self.read(deadline)
        if not answer.get("ok"):
            raise CandidateError(answer.get("error"))
        return decode(answer["value"])

    def stop(self):
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None
        self.buffer = b""


def make_non_dumpable():
    """After this, processes of the same uid cannot read this one's memory, environment or fds via /proc."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
        return True
    except Exception:
        return False


def statement_name(source, node):
    lines = source.split("\n")[node.lineno - 1 : getattr(node, "end_lineno", node.lineno)]
    text = " ".join(line.strip() for line in lines)
    return "line %d: %s" % (node.lineno, text[:160])


def has_assert(node):
    return any(isinstance(child, ast.Assert) for child in ast.walk(node))


def run_tests(config, log, source):
    test_source = config["test"]
    entry_point = config["entry_point"]
    worker = Worker(config["solution"], entry_point, log, source)
    deadline_total = time.monotonic() + float(config.get("total_timeout", 60))
    per_test = float(config.get("test_timeout", 5))
    current = {"deadline": deadline_total}

    def candidate(*args, **kwargs):
        return worker.call(args, kwargs, current["deadline"])

    namespace = {"__name__": "__gym_swe_tests__"}  # type: dict[str, object]
    exec(compile(config.get("reference", ""), "<reference>", "exec"), namespace)
    namespace[entry_point] = candidate
    tree = ast.parse(test_source)
    check = None
    for node in tree.body:
        is_call = isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
        if is_call and getattr(node.value.func, "id", None) == "check":
            continue  # the test's own `check(<entry point>)`: we call it ourselves, statement by statement
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            check = node
        exec(compile(ast.Module(body=[node], type_ignores=[]), "<test>", "exec"), namespace)
    if check is None:
        raise ValueError("the test code defines no check() function")
    parameters = [a.arg for a in check.args.args]
    if parameters:
        namespace[parameters[0]] = candidate

    results = []
    for node in check.body:
        counted = has_assert(node)
        name = statement_name(test_source, node)
        if time.monotonic() >= deadline_total:
            if counted:
                results.append({"name": name, "outcome": "timeout", "message": "grading time ran out"})
            continue
        current["deadline"] = min(deadline_total, time.monotonic() + per_test)
        outcome, message = "passed", ""
        try:
            exec(compile(ast.Module(body=[node], type_ignores=[]), "<test>", "exec"), namespace)
        except AssertionError as error:
            outcome, message = "failed", str(error)[:500]
        except CandidateTimeout:
            outcome, message = "timeout", "the call did not return within %.1f s" % per_test
        except CandidateError as error:
            outcome, message = "error", str(error)[:500]
        except RunnerError:
            raise
        except Exception as error:
            outcome, message = "error", "%s: %s" % (type(error).__name__, str(error)[:500])
        if counted:
            results.append({"name": name, "outcome": outcome, "message": message})
        elif outcome != "passed":
            log.write(("set-up statement failed: %s: %s\n" % (name, message)).encode("utf-8"))
    worker.stop()
    return results


def runner_main(config_path):
    with open(os.path.abspath(__file__)) as handle:
        source = handle.read()
    with open(config_path) as handle:
        config = json.load(handle)
    os.remove(config_path)  # the worker must never find the hidden tests
    protected = make_non_dumpable()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    log = open(config.get("log", os.devnull), "ab")
    report = {"tests": [], "error": None, "protected": protected}
    try:
        report["tests"] = run_tests(config, log, source)
    except Exception as error:
        report["error"] = "%s: %s" % (type(error).__name__, error)
    log.close()
    sys.stdout.write("GYM_SWE_REPORT " + json.dumps(report) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--worker":
        worker_main(sys.argv[2], sys.argv[3])
    else:
        runner_main(sys.argv[1])
