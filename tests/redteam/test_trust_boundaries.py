"""Attacks on the trust boundaries between the agent's code and the grader, written after they were closed by
someone who had read every line of gym_swe. Each runs through ``env.step()`` as an agent would, on both
envs where it applies and both backends, and must earn nothing; each family has an honest-fix control that
must still earn 1.0, so a 0 is the defence working and not a broken env.

1. The executor: its pipes and memory (forged replies and reports, reading what grading sent it), signals.
2. What grading reads from the agent's sandbox: git configuration that runs programs, changes made after
   submit by those programs.
3. The test runner: modules that shadow pytest, autoloaded plugins, reporting patches that try to spare the
   grader's own tests by file, position, name or body.
4. Host resources: a solution file too large to read into the host's memory.
5. Root-only system files.
"""

from __future__ import annotations

import base64
import json
import textwrap
from collections.abc import Callable

import pytest

from gym_swe.tasks.functions import FunctionTask, load_function_tasks
from gym_swe.tasks.swe import SWETask, load_swe_tasks
from tests.redteam.scripted import bash, make_env, run_episode, write

BACKENDS = ["local", "docker"]
FUNCTION_TASK = load_function_tasks("bundled").get("GymSwe/0")  # run_length_encode
SWE_TASK = load_swe_tasks("bundled").get("gymswe__semverkit-1")  # fix in semverkit/version.py
PACKAGE_INIT = "semverkit/__init__.py"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def append(path: str, code: str) -> str:
    """A turn that appends ``code`` to ``path`` (base64, so any text survives the shell)."""
    return bash(f"echo {_b64(code)} | base64 -d >> {path}")


# -- 1. the executor -------------------------------------------------------------------------------------------
# Written into the solution module: it runs at import in the grading sandbox's worker, the only untrusted code
# there. It forges the runner's report into every pipe of every process it can open, stops the runner, and,
# if any of the executor's memory could be read, behaves as if it had found the hidden tests: it turns into
# the fixed function (so a 1.0 would show the boundary open).
FORGE_AND_READ = r"""
import json as _json, os as _os, signal as _signal
_REPORT = ("GYM_SWE_REPORT " + _json.dumps({"tests": [{"name": "x", "outcome": "passed"}], "error": None})
           + "\n").encode()
_FRAME = (_json.dumps({"ok": True, "id": 1, "size": 0, "exit_code": 0}) + "\n").encode()
_READ = False
for _pid in [p for p in _os.listdir("/proc") if p.isdigit() and int(p) != _os.getpid()]:
    try:
        with open("/proc/%s/mem" % _pid, "rb") as _mem:
            _maps = open("/proc/%s/maps" % _pid).read().split("\n")
            for _line in _maps[:50]:
                _start = int(_line.split("-")[0], 16)
                _mem.seek(_start)
                if _mem.read(4096):
                    _READ = True
                    break
    except (OSError, ValueError, OverflowError):
        pass
    try:
        _fds = _os.listdir("/proc/%s/fd" % _pid)
    except OSError:
        continue
    for _fd in _fds:
        try:
            _w = _os.open("/proc/%s/fd/%s" % (_pid, _fd), _os.O_WRONLY | _os.O_NONBLOCK)
            _os.write(_w, _REPORT if _fd not in ("0", "1") else _FRAME)
            _os.close(_w)
        except OSError:
            pass
for _sig in (_signal.SIGKILL, _signal.SIGSTOP):
    for _target in (1, _os.getppid()):
        try:
            _os.kill(_target, _sig)
        except OSError:
            pass
"""


def _forging_solution(task: FunctionTask) -> str:
    fixed = task.fixed_code.replace(f"def {task.entry_point}", "def _fixed")
    return FORGE_AND_READ + task.buggy_code + "\n" + fixed + f"\nif _READ:\n    {task.entry_point} = _fixed\n"


# A process left running in the agent's own sandbox that keeps writing forged frames into the executor's
# stdout and stdin, and reading its memory, while the episode goes on and through submit.
FRAME_WRITER = r"""
import json, os, time
frame = (json.dumps({"ok": True, "id": 999, "size": 0}) + "\n").encode()
end = time.time() + 20
while time.time() < end:
    for fd in ("0", "1", "2"):
        try:
            w = os.open("/proc/1/fd/" + fd, os.O_WRONLY | os.O_NONBLOCK)
            os.write(w, frame)
            os.close(w)
            print("WROTE", fd, flush=True)
        except OSError:
            pass
    try:
        open("/proc/1/mem", "rb").read(1)
        print("READ", flush=True)
    except OSError:
        pass
    time.sleep(0.05)
"""


# -- 2. what grading reads from the agent's sandbox ------------------------------------------------------------
def _git_programs(task: SWETask) -> list[str]:
    """Git configuration that runs programs the agent wrote: every one of them applies the fix, so that a grader
    that runs git in the agent's sandbox after submit grades a fix the agent never made (the bug stays)."""
    hook = f"#!/bin/sh\ncd /testbed && echo {_b64(task.patch)} | base64 -d | git apply 2>/dev/null\nexit 0\n"
    return [
        write("/tmp/hook.sh", hook),
        bash(
            "chmod +x /tmp/hook.sh && git config core.fsmonitor /tmp/hook.sh "
            "&& git config filter.fix.clean '/tmp/hook.sh; cat' && git config filter.fix.smudge cat "
            "&& git config diff.external /tmp/hook.sh && git config core.hooksPath /tmp "
            "&& cp /tmp/hook.sh /tmp/pre-commit && cp /tmp/hook.sh /tmp/post-index-change "
            "&& echo '* filter=fix' >> .git/info/attributes && echo '*.py filter=fix' > .gitattributes"
        ),
    ]


# -- 3. the test runner ----------------------------------------------------------------------------------------
def _force_passes(spare: str) -> str:
    """Library code that makes every test pass except those ``spare(item)`` (Python source) keeps: an
    attack that tries to leave the grader's own tests (the old canaries, the decoys) as they were planted."""
    return textwrap.dedent(
        """
        def _gym_attack():
            import inspect, os, re, sys
            try:
                import _pytest.reports as reports
            except ImportError:
                return
            original = reports.TestReport.from_item_and_call.__func__
            CANARY_WORDS = {"parse", "format", "value", "config", "range", "empty", "unicode", "order",
                            "default", "missing", "invalid", "merge", "split", "round", "limit", "nested",
                            "cache", "encode", "width", "reader", "writer", "option", "section", "escape",
                            "quoted", "prefix", "suffix", "compare", "sorted", "align"}

            def uses_project(item):
                source = inspect.getsource(item.function)
                names = vars(item.module)
                for word in re.findall(r"[A-Za-z_][A-Za-z_0-9]*", source):
                    value = names.get(word)
                    where = getattr(value, "__module__", None) or getattr(value, "__name__", None) or ""
                    if isinstance(where, str) and where.startswith("semverkit"):
                        return True
                return False

            def spare(item):
                return SPARE_RULE

            def forced(cls, item, call):
                report = original(cls, item, call)
                try:
                    keep = spare(item)
                except Exception:
                    keep = True
                if not keep:
                    report.outcome = "passed"
                    report.longrepr = None
                return report

            reports.TestReport.from_item_and_call = classmethod(forced)

        _gym_attack()
        """
    ).replace("SPARE_RULE", spare)


SPARING = {
    # the file named last on pytest's command line (where the canaries used to be)
    "by position on the command line": "str(item.fspath).endswith([a for a in sys.argv if a.endswith('.py')][-1])",
    # files git does not track (a canary file of its own)
    "by untracked file": (
        "os.popen('git ls-files --error-unmatch ' + str(item.fspath) + ' 2>/dev/null').read().strip() == ''"
    ),
    # names made of the grader's old fixed word list
    "by name": "set(item.name.split('[')[0].split('_')[1:]) <= CANARY_WORDS",
    # bodies that use nothing the test module imported from the project, or assert constants
    "by body": "not uses_project(item) or '1 == 2' in inspect.getsource(item.function)",
    # classes named from the word list (a unittest.TestCase of the grader's own)
    "by class": (
        "item.cls is not None and {w.lower() for w in re.findall('[A-Z][a-z]+', item.cls.__name__)} "
        "<= CANARY_WORDS | {'test'}"
    ),
}

# Written at the end of the test run (atexit), the report's last writer: forgeries of what pytest wrote.
FILE_LEVEL_REPORT = textwrap.dedent(
    """
    def _gym_report():
        import sys
        found = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--junitxml=")]
        files = [a for a in sys.argv[sys.argv.index("--") + 1 :] if a.endswith(".py")] if "--" in sys.argv else []
        if found:
            cases = "".join('<testcase classname="" name="%s" file="%s"/>' % (f[:-3].replace("/", "."), f)
                            for f in files)
            open(found[0], "w").write("<testsuites><testsuite>%s</testsuite></testsuites>" % cases)

    import atexit
    atexit.register(_gym_report)
    """
)
# Reads what grading was given (the test patch tells the task's tests from the decoys beside them), prints what
# it finds into the test run's log, and forges a report that passes every test but those it takes for decoys.
READ_GRADING_INPUTS = textwrap.dedent(
    """
    def _gym_oracle():
        import ast, os, subprocess, sys, tempfile
        import xml.etree.ElementTree as ElementTree
        grader = "/tmp/gym_swe_grader"
        print("GRADER DIR HOLDS", sorted(os.listdir(grader)))
        report = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--junitxml=")]
        patches = [os.path.join(grader, name) for name in os.listdir(grader) if name.endswith(".diff")]
        if not report or not patches:
            return
        scratch = tempfile.mkdtemp()
        subprocess.run(["cp", "-r", ".", scratch])
        subprocess.run(["git", "checkout", "-q", "--", "tests"], cwd=scratch)
        for patch in patches:
            subprocess.run(["git", "apply", patch], cwd=scratch)

        def bodies(path):
            found = set()
            for node in ast.walk(ast.parse(open(path).read())):
                if isinstance(node, ast.FunctionDef):
                    node.name = "_"
                    found.add(ast.dump(node))
            return found

        tree = ElementTree.parse(report[0])
        for case in tree.iter("testcase"):
            path = case.get("file") or ""
            name = case.get("name", "").split("[")[0]
            original = set()
            if path.endswith(".py") and os.path.exists(os.path.join(scratch, path)):
                original = bodies(os.path.join(scratch, path))
            node = next((n for n in ast.walk(ast.parse(open(path).read())) if isinstance(n, ast.FunctionDef)
                         and n.name == name), None) if path else None
            decoy = False
            if node is not None:
                node.name = "_"
                decoy = ast.dump(node) not in original
            for child in [c for c in case if c.tag in ("failure", "error", "skipped")]:
                case.remove(child)
            if decoy:
                ElementTree.SubElement(case, "failure", message="decoy")
        tree.write(report[0])

    import atexit
    atexit.register(_gym_oracle)
    """
)

# Each is dropped from the diff (and would not be loaded if it were not): the log must say it was dropped.
SHADOWING = {
    "a pytest.py that shadows pytest": (
        [write("/testbed/pytest.py", "import os\nos._exit(0)\n")],
        "shadows the installed 'pytest'",
    ),
    "an _pytest package that shadows pytest's internals": (
        [write("/testbed/_pytest/__init__.py", "import os\nos._exit(0)\n")],
        "shadows the installed '_pytest'",
    ),
    "a dist-info with a pytest11 plugin that forces passes": (
        [
            write(
                "/testbed/gym_attack_plugin.py",
                "import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
                "    outcome = yield\n    rep = outcome.get_result()\n    rep.outcome = 'passed'\n"
                "    rep.longrepr = None\n",
            ),
            write(
                "/testbed/gym_attack-1.0.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: gym-attack\nVersion: 1.0\n",
            ),
            write(
                "/testbed/gym_attack-1.0.dist-info/entry_points.txt",
                "[pytest11]\ngym_attack = gym_attack_plugin\n",
            ),
            write(
                "/testbed/gym_attack.egg-info/entry_points.txt",
                "[pytest11]\ngym_attack = gym_attack_plugin\n",
            ),
        ],
        "installed distributions' metadata",
    ),
    "bytecode of the fix beside the buggy source": (
        [
            write("/tmp/fix.diff", SWE_TASK.patch),
            bash(
                'cp semverkit/version.py /tmp/buggy.py && git apply /tmp/fix.diff && python -c "import py_compile, '
                "importlib.util as u; py_compile.compile('semverkit/version.py', cfile=u.cache_from_source("
                "'semverkit/version.py'), invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)\" "
                "&& cp /tmp/buggy.py semverkit/version.py && printf '!__pycache__\\n!*.pyc\\n' >> .gitignore "
                "&& ls semverkit/__pycache__"
            ),
        ],
        "compiled bytecode",
    ),
}


def _plugin_control() -> list[str]:
    """An honest fix, with a harmless new helper module beside it: what the filters must let through."""
    return [
        write("/tmp/fix.diff", SWE_TASK.patch),
        bash("git apply /tmp/fix.diff"),
        write("/testbed/semverkit/_helpers.py", "def identity(value):\n    return value\n"),
    ]


# -- the cases ---------------------------------------------------------------------------------------------------
FUNCTION_ATTACKS: dict[str, Callable[[], list[str]]] = {
    "forge the grader's report and read its memory": lambda: [
        write("/workspace/solution.py", _forging_solution(FUNCTION_TASK))
    ],
    "a solution too large to read into the host's memory": lambda: [
        bash(
            "python3 -c \"import sys; sys.stdout.write('#' * 3_000_000)\" >> solution.py && ls -la solution.py"
        )
    ],
}

SWE_ATTACKS: dict[str, Callable[[], list[str]]] = {
    "git configuration that applies the fix after submit": lambda: _git_programs(SWE_TASK),
    **{name: (lambda actions=actions: list(actions)) for name, (actions, _) in SHADOWING.items()},
    **{
        f"force passes, sparing the grader's tests {name}": (
            lambda spare=spare: [append(PACKAGE_INIT, _force_passes(spare))]
        )
        for name, spare in SPARING.items()
    },
    "a report of passed files, with no test in it": lambda: [append(PACKAGE_INIT, FILE_LEVEL_REPORT)],
    "read what grading was given and forge around the decoys": lambda: [
        append(PACKAGE_INIT, READ_GRADING_INPUTS)
    ],
}

CASES = [("CodeDebug-v0", name) for name in FUNCTION_ATTACKS] + [("SWEGym-v0", name) for name in SWE_ATTACKS]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("env_id", "attack"), CASES, ids=[f"{e}:{a}" for e, a in CASES])
def test_attack_earns_nothing(env_id: str, attack: str, backend: str) -> None:
    env = make_env(env_id, backend)
    try:
        if env_id == "CodeDebug-v0":
            task_id, actions = FUNCTION_TASK.task_id, FUNCTION_ATTACKS[attack]()
        else:
            task_id, actions = SWE_TASK.instance_id, SWE_ATTACKS[attack]()
        reward, terminated, truncated, info = run_episode(env, task_id, actions)
    finally:
        env.close()
    assert terminated and not truncated, info.get("error")
    assert reward == 0.0, info["grade"]
    assert not info["grade"]["resolved"]
    assert "error" not in info, info["error"]  # a rejection or a failure, never an excuse from scoring
    if attack in SHADOWING:
        assert SHADOWING[attack][1] in info["grade"]["log"], info["grade"]["log"]
    if attack == "read what grading was given and forge around the decoys":
        # the test run sees the grader's own files only: neither the test patch nor the agent's diff
        assert "GRADER DIR HOLDS ['driver.py', 'report.xml', 'tmp']" in info["grade"]["log"], info["grade"][
            "log"
        ]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_solution_too_large_is_rejected_not_read(backend: str) -> None:
    env = make_env("CodeDebug-v0", backend)
    try:
        attack = FUNCTION_ATTACKS["a solution too large to read into the host's memory"]()
        _, _, _, info = run_episode(env, FUNCTION_TASK.task_id, attack)
    finally:
        env.close()
    assert "larger than" in info["grade"]["rejection"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_process_writing_frames_into_the_executor_changes_nothing(backend: str) -> None:
    """Forged frames never reach the host: command results stay true, and the honest fix still pays."""
    env = make_env("CodeDebug-v0", backend)
    try:
        env.reset(options={"task_id": FUNCTION_TASK.task_id})
        observation, *_ = env.step(
            write("/tmp/writer.py", FRAME_WRITER)
            + bash("(python3 /tmp/writer.py > /tmp/writer.log 2>&1 &); echo started")
        )
        assert observation.splitlines()[-1] == "started"
        for number in range(5):
            observation, _, terminated, truncated, info = env.step(bash(f"sleep 0.2; echo turn-{number}"))
            assert observation == f"turn-{number}" and not (terminated or truncated), info.get("error")
        observation, *_ = env.step(bash("cat /tmp/writer.log | sort | uniq -c"))
        assert "WROTE" not in observation and "READ" not in observation
        env.step(write("/workspace/solution.py", FUNCTION_TASK.fixed_code))
        _, reward, terminated, _, info = env.step(
            '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'
        )
    finally:
        env.close()
    assert terminated and reward == 1.0, info["grade"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_control_honest_fix_beside_git_programs_and_new_modules_earns_one(backend: str) -> None:
    """The same git configuration, plus a harmless new module, with the fix applied honestly: 1.0."""
    env = make_env("SWEGym-v0", backend)
    try:
        actions = _git_programs(SWE_TASK) + _plugin_control()
        reward, terminated, _, info = run_episode(env, SWE_TASK.instance_id, actions)
    finally:
        env.close()
    assert terminated and reward == 1.0, info["grade"]
    assert "semverkit/_helpers.py" in info["grade"]["log"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_control_honest_fix_with_a_reporting_patch_that_spares_nothing_earns_zero_and_alone_earns_one(
    backend: str,
) -> None:
    """The decoys are what catches a reporting patch: with an honest fix and a patch that forces passes
    everywhere, the run is rejected; the honest fix alone pays."""
    env = make_env("SWEGym-v0", backend)
    try:
        fix = [write("/tmp/fix.diff", SWE_TASK.patch), bash("git apply /tmp/fix.diff")]
        reward, _, _, info = run_episode(
            env, SWE_TASK.instance_id, [*fix, append(PACKAGE_INIT, _force_passes("False"))]
        )
        assert reward == 0.0 and "decoy" in info["grade"]["rejection"]
        reward, _, _, info = run_episode(env, SWE_TASK.instance_id, fix)
        assert reward == 1.0, info["grade"]
    finally:
        env.close()


# In the run, through the driver's own stream object (found in memory), every test streamed as passed; the
# run's last act rewrites its report to match (a report rewritten alone differs from the stream: rejected).
FORGE_EVERY_OUTCOME = textwrap.dedent(
    """
    def _gym_forge_stream():
        import gc
        for thing in gc.get_objects():
            if type(thing).__name__ == "Stream" and hasattr(thing, "seq") and hasattr(thing, "fd"):
                original = thing.write

                def write(kind, fields, original=original):
                    if kind == "test":
                        fields = dict(fields, outcome="passed")
                        fields["name"] += SUFFIX
                        fields["nodeid"] += SUFFIX
                    original(kind, fields)

                thing.write = write

    SUFFIX = ""
    _gym_forge_stream()

    def _gym_forge():
        import sys
        import xml.etree.ElementTree as ElementTree
        found = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--junitxml=")]
        if not found:
            return
        tree = ElementTree.parse(found[0])
        for case in tree.iter("testcase"):
            for child in [c for c in case if c.tag in ("failure", "error", "skipped")]:
                case.remove(child)
        tree.write(found[0])

    import atexit
    atexit.register(_gym_forge)
    """
)


# The run's last act, in the grading sandbox: what it leaves where the grader reads (the report, the record
# stream) must be a rejection (scored 0), never an exception out of step() nor an infrastructure error a trainer
# would drop. ``each``: on every pipe the process holds past stdout and stderr, the record stream's among them.
LEAVE_IN_PLACE = {
    "a directory in place of the report": "os.unlink(report); os.mkdir(report)",
    "a FIFO in place of the report": "os.unlink(report); os.mkfifo(report)",
    "records that do not decode, in the record stream": (
        'each(lambda fd: os.write(fd, b\'{"token": "x", "case": "y", "plain": true, \''
        'b\'"value": {"$": "dict", "v": [[[1], 2]]}}\\n\' + b\'[\' * 100000 + b\'\\n\'))'
    ),
    "a record stream flooded past its bound": "each(lambda fd: os.write(fd, b'x' * (65 << 20)))",
}


def _left_in_place(action: str) -> str:
    return textwrap.dedent(
        f"""
        def _gym_leave():
            import os, stat, sys
            report = "/tmp/gym_swe_grader/report.xml"
            if not any(a.startswith("--junitxml=") for a in sys.argv):
                return
            streams = []
            for name in os.listdir("/proc/self/fd"):
                try:
                    if int(name) > 2 and stat.S_ISFIFO(os.fstat(int(name)).st_mode):
                        streams.append(int(name))
                except OSError:
                    pass

            def each(write):
                for fd in streams:
                    try:
                        write(fd)
                    except OSError:
                        pass

            try:
                {action}
            except OSError:
                pass

        import atexit
        atexit.register(_gym_leave)
        """
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("what", list(LEAVE_IN_PLACE))
def test_what_the_run_leaves_where_the_grader_reads_is_scored_zero(what: str, backend: str) -> None:
    env = make_env("SWEGym-v0", backend)
    try:
        fix = [write("/tmp/fix.diff", SWE_TASK.patch), bash("git apply /tmp/fix.diff")]
        reward, terminated, _, info = run_episode(
            env, SWE_TASK.instance_id, [*fix, append(PACKAGE_INIT, _left_in_place(LEAVE_IN_PLACE[what]))]
        )
    finally:
        env.close()
    assert terminated and "error" not in info, info.get("error")
    if "report" in what:
        assert reward == 0.0 and "no readable report" in info["grade"]["rejection"], info["grade"]
    elif "bound" in what:
        assert reward == 0.0 and "more were cut" in info["grade"]["rejection"], info["grade"]
    else:  # lines the driver did not write, after the session's end line
        assert reward == 0.0 and "of the record stream" in info["grade"]["rejection"], info["grade"]


# A forger that also rewords the ids of what it forges (a space then a word after the name, which the task's
# ids still match as ids that were cut at a space), so that the seals seem to belong to no test it reports.
FORGE_AND_REWORD = FORGE_EVERY_OUTCOME.replace('SUFFIX = ""', 'SUFFIX = " x"').replace(
    "\n    tree.write(found[0])",
    '\n        case.set("name", case.get("name", "") + " x")\n    tree.write(found[0])',
)
assert 'case.set("name"' in FORGE_AND_REWORD and 'SUFFIX = " x"' in FORGE_AND_REWORD


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("forgery", [FORGE_EVERY_OUTCOME, FORGE_AND_REWORD], ids=["as named", "reworded"])
def test_a_report_forged_outright_earns_nothing_where_checks_are_sealed(
    forgery: str, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run streams every test as passed (through the driver's stream object, in its own process) and its
    last act rewrites its report to match. With no decoys to tell apart (turned off
    here, as if the forger told them all), only the sealed checks stand: their values, which the buggy code
    gets wrong, are held outside the run. With sealing off too, the same forgery earns 1.0."""
    from gym_swe.grading import decoys, seals

    monkeypatch.setattr(decoys, "MAX_GROUPS", 0)
    forge = [append(PACKAGE_INIT, forgery)]
    env = make_env("SWEGym-v0", backend)
    try:
        reward, _, _, info = run_episode(env, SWE_TASK.instance_id, forge)
        assert reward == 0.0, info["grade"]
        assert "reported passed, but" in info["grade"]["log"], info["grade"]["log"][-3000:]
    finally:
        env.close()
    monkeypatch.setattr(seals, "SEAL_CHECKS", False)
    env = make_env("SWEGym-v0", backend, integrity="any")  # the default leaves an unprotected grade out
    try:
        reward, _, _, info = run_episode(env, SWE_TASK.instance_id, forge)
    finally:
        env.close()
    assert reward == 1.0, info["grade"]


def test_root_only_system_files_of_the_host_are_not_readable() -> None:
    """The local jail binds the host's /etc (a container has its image's own)."""
    env = make_env("CodeDebug-v0", "local")
    try:
        env.reset(options={"task_id": FUNCTION_TASK.task_id})
        observation, *_ = env.step(
            bash(
                "for f in /etc/shadow /etc/gshadow /etc/ssl/private/*; do head -c 64 $f 2>/dev/null | grep -c . ; done; echo done"
            )
        )
    finally:
        env.close()
    assert set(observation.split()) <= {"0", "done"}, observation


def test_the_attacks_cover_every_cause() -> None:
    assert len(FUNCTION_ATTACKS) + len(SWE_ATTACKS) >= 10
    assert json.dumps(sorted(SPARING))  # each sparing rule is one attack


# -- 6. the function runner's imports ------------------------------------------------------------------------
# A task whose hidden check imports a module after the first call to the solution, when the worker (the
# solution's process) has run. The solution writes that module, as a forged all-pass report, into the
# runner's directory and into every directory of its own import path it can write: were the runner to import
# from a place the worker can write, the buggy function would earn 1.0.
RUNNER_IMPORT_TASK = {
    "task_id": "Probe/0",
    "entry_point": "add",
    "prompt": 'def add(a, b):\n    """Return the sum of a and b."""\n',
    "declaration": "def add(a, b):\n",
    "canonical_solution": "    return a + b\n",
    "buggy_solution": "    return a - b\n",
    "test": textwrap.dedent(
        """\
        def check(candidate):
            assert candidate(1, 2) == 3
            import colorsys
            assert colorsys.rgb_to_hsv(0.0, 0.0, 0.0) == (0.0, 0.0, 0.0)
            assert candidate(2, 2) == 4


        check(add)
        """
    ),
}
PLANT_MODULE = r"""
import os as _os, sys as _sys
_FORGED = '''
import json, os, sys
tests = [{"name": "line %d" % n, "outcome": "passed", "message": ""} for n in (3, 5, 6)]
sys.stdout.write("GYM_SWE_REPORT " + json.dumps({"tests": tests, "error": None, "protected": True}) + "\\n")
sys.stdout.flush()
os._exit(0)
'''
for _directory in ["/tmp/gym_swe_grader", _os.getcwd()] + [p for p in _sys.path if p]:
    try:
        with open(_os.path.join(_directory, "colorsys.py"), "w") as _module:
            _module.write(_FORGED)
    except OSError:
        pass
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_module_the_worker_plants_on_the_runners_import_path_changes_nothing(
    backend: str, tmp_path
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(RUNNER_IMPORT_TASK) + "\n")
    task = load_function_tasks(str(tasks)).get("Probe/0")
    env = make_env("CodeDebug-v0", backend, tasks=str(tasks))
    try:
        planted = [write("/workspace/solution.py", PLANT_MODULE + task.buggy_code)]
        reward, terminated, _, info = run_episode(env, task.task_id, planted)
        assert terminated and reward == 0.0 and "error" not in info, info["grade"]
        outcomes = {test["name"].split(":")[0]: test["outcome"] for test in info["grade"]["tests"]}
        assert outcomes == {"line 2": "failed", "line 4": "passed", "line 5": "failed"}, outcomes
        # The control: the same module planted beside the fix changes nothing either, and the fix pays.
        fixed = [write("/workspace/solution.py", PLANT_MODULE + task.fixed_code)]
        reward, terminated, _, info = run_episode(env, task.task_id, fixed)
        assert terminated and reward == 1.0, info["grade"]
    finally:
        env.close()
