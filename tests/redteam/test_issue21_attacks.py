"""New attacks in the classes of issue 21, written after its fixes (31e92b9, 790a140): hostile file names and
contents reaching the host, an agent laundering its own failure into an infrastructure error, unbounded
observations, and a proxy client starving the others. Each goes through ``env.step()`` or through the proxy's
socket, with an honest control in the same test (a fix that earns 1.0, a rollout that is served).

Six of them broke things when written and were fixed after: a directory deeper than PATH_MAX and a manifest
too large to read (both now a rejected submission, scored 0), a solution holding every pid while graded (its
tests now error, scored 0), a Python object nested past the recursion limit in a message (a parse error), and
a gzip bomb (415) and a body nested too deep (400) sent to the proxy with the rollout's own secret.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import zlib
from pathlib import Path
from typing import Any

import pytest

from gym_swe.rollout.trajectory import Trajectory, load_jsonl, save_jsonl
from gym_swe.tasks.functions import load_function_tasks
from gym_swe.tasks.swe import load_swe_tasks
from tests.redteam.scripted import bash, make_env, run_episode, write

BACKENDS = ["local", "docker"]
SWE_TASK = load_swe_tasks("bundled").get("gymswe__inikit-1")
FUNCTION_TASK = load_function_tasks("bundled").get("GymSwe/0")
MiB = 1 << 20


def swe_fix() -> list[str]:
    return [
        write("/tmp/fix.diff", SWE_TASK.patch),
        bash("cd /testbed && git apply /tmp/fix.diff && echo applied"),
    ]


def python_turn(source: str) -> list[str]:
    """Turns that run ``source`` with python3 in the sandbox (written to a file first: any bytes survive)."""
    return [write("/tmp/attack.py", source), bash("python3 /tmp/attack.py")]


def saved_and_loaded(info: dict, tmp_path: Path) -> Trajectory:
    trajectory = Trajectory(
        "t", grade=info["grade"], messages=info["messages"], end_reason=info["end_reason"]
    )
    return load_jsonl(save_jsonl([trajectory], tmp_path / "t.jsonl"))[0]


def assert_scored(info: dict, terminated: bool, reward: float, earned: float) -> None:
    """The episode ended by the agent's submit and was scored, never as an error a trainer would drop."""
    assert "error" not in info, info.get("error")
    assert terminated and info["end_reason"] == "submitted" and not info["grade"]["error"], info["grade"]
    assert reward == earned, (reward, info["grade"].get("rejection"), info["grade"]["log"][-2000:])


def rss() -> int:
    return int(re.search(r"VmRSS:\s+(\d+)", Path("/proc/self/status").read_text()).group(1)) * 1024  # type: ignore[union-attr]


# -- 1. hostile file names and contents ------------------------------------------------------------------------
# Names a diff, a log or a shell could misread, each a new module beside the fix; a directory 40 deep.
HOSTILE_NAMES = r"""
import os
os.chdir("/testbed")
names = ["new\nline.py", "-rf.py", "--output=x.py", "tab\there.py", 'quo"te.py', "back\\slash.py",
         " space .py", "a -> b.py", "\u202eevil.py", "x" * 250 + ".py", "diff --git a b.py", "+++ b.py",
         "@@ -1 +1 @@.py", "*.py", "~.py", "\x1b[31mred.py"]
for name in names:
    open(name, "w").write("x = 1\n")
os.makedirs("deep/" * 40, exist_ok=True)
open("deep/" * 40 + "m.py", "w").write("y = 2\n")
print("ok")
"""
# Git's own files and links that loop, planted after the fix: attributes that would filter or re-encode every
# file, an ignore-all, a submodule, a gitdir file in a subdirectory, names of git internals.
GIT_FILES = r"""
import os
os.chdir("/testbed")
open(".gitattributes", "w").write("* -diff binary filter=evil merge=evil\n*.py -text eol=crlf working-tree-encoding=UTF-16\n")
open(".gitignore", "w").write("*\n!.gitignore\n")
open(".gitmodules", "w").write('[submodule "x"]\n\tpath = sub\n\turl = /etc\n')
os.makedirs("sub", exist_ok=True)
open("sub/.git", "w").write("gitdir: /etc\n")
os.makedirs("HEAD/objects/refs", exist_ok=True)
open("HEAD/objects/refs/config", "w").write("[core]\n\tfsmonitor = touch /tmp/pwned\n")
open("packed-refs", "w").write("x\n")
os.symlink("loop", "loop")
os.symlink("l2", "l1"); os.symlink("l1", "l2")
os.symlink("/", "root")
os.symlink("/proc/self/fd/0", "stdin")
os.mkdir("cyc"); os.symlink("..", "cyc/up")
print("ok")
"""
# Contents: a NUL past git's binary sniff, CR-only lines, no final newline, a BOM, terminal escapes and a NUL
# in a tracked file, and 1,500 binary files (40 MB, under the size taken).
ODD_CONTENTS = r"""
import os
os.chdir("/testbed")
open("late_nul.py", "wb").write(b"a = 1\n" * 2000 + b"\0\n" + b"b\xff = 2\n")
open("cr_only.py", "wb").write(b"a = 1\rb = 2\rc = 3")
open("no_newline.py", "wb").write(b"x = 1")
open("bom.py", "wb").write(b"\xef\xbb\xbfx = 1\n")
open("README.md", "ab").write(b"\r\n\x1b[31mred\x1b[0m\x07\x08\x7f\x00 tail\n")
os.makedirs("bins", exist_ok=True)
blob = os.urandom(27000)
for i in range(1500):
    open("bins/b%d.bin" % i, "wb").write(blob + b"%d" % i)
print("ok")
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_hostile_names_git_files_and_contents_beside_an_honest_fix(backend: str, tmp_path: Path) -> None:
    env = make_env("SWEGym-v0", backend)
    attack = [*python_turn(HOSTILE_NAMES), *python_turn(ODD_CONTENTS)]
    try:
        for actions, earned in (
            ([*attack, *swe_fix(), *python_turn(GIT_FILES)], 1.0),
            ([*attack, *python_turn(GIT_FILES)], 0.0),
        ):
            reward, terminated, _, info = run_episode(env, SWE_TASK.instance_id, actions)
            assert_scored(info, terminated, reward, earned)
            json.dumps(info["grade"], ensure_ascii=False).encode("utf-8")
            back = saved_and_loaded(info, tmp_path)
            assert back.grade == info["grade"] and back.messages == info["messages"]
    finally:
        env.close()


DEEP_PATH = r"""
import os
os.chdir("/testbed")
for _ in range(300):  # 5,100 characters: more than PATH_MAX (4,096), made one relative step at a time
    os.mkdir("d" * 16)
    os.chdir("d" * 16)
open("deep.py", "w").write("x = 1\n")
print("made")
"""


# 14,000 empty files whose names are bytes that are not UTF-8, 14 directories deep: the executor's JSON writes
# each such byte as a six-character escape, so the manifest comes to about 316 MB, over the 256 MiB read.
BIG_MANIFEST = r"""
import os
os.chdir(b"/testbed")
name = b"\xff" * 250
for _ in range(14):
    os.mkdir(name)
    os.chdir(name)
for i in range(14000):
    open(name + b"%05d" % i, "wb").close()
print("made")
"""


@pytest.mark.parametrize(
    "workspace", [DEEP_PATH, BIG_MANIFEST], ids=["deeper_than_path_max", "manifest_over_256_mib"]
)
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_workspace_too_deep_or_large_to_take_is_the_agents_failure(backend: str, workspace: str) -> None:
    env = make_env("SWEGym-v0", backend)
    try:
        reward, terminated, _, info = run_episode(env, SWE_TASK.instance_id, swe_fix())  # the control
        assert_scored(info, terminated, reward, 1.0)
        reward, terminated, _, info = run_episode(
            env, SWE_TASK.instance_id, [*swe_fix(), *python_turn(workspace)]
        )
        assert_scored(info, terminated, reward, 0.0)  # rejected: the workspace cannot be taken
    finally:
        env.close()


# -- 2. laundering ---------------------------------------------------------------------------------------------
# At import in the grading sandbox: fork until the process limit is reached, every child forking again
# whenever a pid frees up, then fail the import: the runner cannot start the next test's worker.
TAKE_EVERY_PID = """
import os, time

def _grab():
    end = time.time() + 120
    while time.time() < end:
        try:
            if os.fork() == 0:
                time.sleep(120)
                os._exit(0)
        except OSError:
            time.sleep(0.0005)

for _ in range(4000):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.setsid()
        _grab()
        os._exit(0)
raise SystemExit(0)
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_solution_that_takes_every_pid_while_graded_is_scored(backend: str) -> None:
    env = make_env("CodeDebug-v0", backend)
    try:
        fix = [write("/workspace/solution.py", FUNCTION_TASK.fixed_code)]
        reward, terminated, _, info = run_episode(env, FUNCTION_TASK.task_id, fix)  # the control
        assert_scored(info, terminated, reward, 1.0)
        hog = [write("/workspace/solution.py", TAKE_EVERY_PID + FUNCTION_TASK.fixed_code)]
        reward, terminated, _, info = run_episode(env, FUNCTION_TASK.task_id, hog)
        assert_scored(info, terminated, reward, 0.0)
    finally:
        env.close()


# Every process forks again as fast as it can, in a session of its own, left running at submit.
RACING_BOMB = """
import os, time
os.setsid()
end = time.time() + 60
while time.time() < end:
    try:
        os.fork()
    except OSError:
        time.sleep(0.0002)
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_fork_bomb_racing_kill_all_at_submit_leaves_the_fix_graded(backend: str) -> None:
    """kill_all at submit dies the sandbox if any process survives its rounds: a bomb that forks faster than
    one round kills would launder the episode. It is killed, and the fix beside it earns 1.0."""
    env = make_env("CodeDebug-v0", backend)
    try:
        actions = [
            write("/workspace/solution.py", FUNCTION_TASK.fixed_code),
            write("/tmp/bomb.py", RACING_BOMB),
            bash("(python3 /tmp/bomb.py > /dev/null 2>&1 &); sleep 2; echo started"),
        ]
        reward, terminated, _, info = run_episode(env, FUNCTION_TASK.task_id, actions)
        assert_scored(info, terminated, reward, 1.0)
    finally:
        env.close()


# -- 3. unbounded observations, host memory ----------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_many_calls_each_flooding_both_streams_stay_bounded(backend: str) -> None:
    """120 calls in one message, each writing 300 kB to stdout and to stderr: the turn's observation, each
    tool message and the host's memory stay bounded, and the episode ends by the context budget, graded."""
    env = make_env("CodeDebug-v0", backend)
    try:
        env.reset(options={"task_id": FUNCTION_TASK.task_id})
        limit = env.unwrapped.max_observation_chars
        flood = bash("head -c 300000 /dev/zero | tr '\\0' y; head -c 300000 /dev/zero | tr '\\0' z >&2")
        before = rss()
        observation, _, terminated, truncated, info = env.step(flood * 120)
        grown = rss() - before
        assert len(info["tool_calls"]) == 120 and len(observation) <= limit + 100
        assert all(len(m["content"] or "") <= limit + 100 for m in info["messages"] if m["role"] == "tool")
        assert grown < 64 * MiB, grown
        assert truncated and info["end_reason"] == "context_budget" and "error" not in info, info.get("error")
        # The control: the next episode on the same env, with the fix, earns 1.0.
        fix = [write("/workspace/solution.py", FUNCTION_TASK.fixed_code)]
        reward, terminated, _, info = run_episode(env, FUNCTION_TASK.task_id, fix)
        assert_scored(info, terminated, reward, 1.0)
    finally:
        env.close()


def nested(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


@pytest.mark.parametrize(
    "arguments",
    [
        '{"command": "echo hi", "x": ' + "[" * 990 + "]" * 990 + "}",
        '{"command": "echo hi", "x": ' + nested(990) + "}",
        '{"command": ' + nested(990) + "}",
        '{"command": "echo hi", "timeout": ' + nested(200_000) + "}",
    ],
    ids=["list 990 deep", "object 990 deep", "command 990 deep", "timeout 150,000 deep"],
)
def test_deeply_nested_arguments_as_text_or_json_are_tool_errors(arguments: str) -> None:
    """Nesting just under what json decodes, as the model's text and as a message whose arguments are the
    decoded object (what a JSON-speaking client sends): a tool error, and the episode goes on."""
    env = make_env("CodeDebug-v0", "local", max_turns=10, max_context_chars=10**7)
    try:
        env.reset(options={"task_id": FUNCTION_TASK.task_id})
        try:
            decoded: Any = json.loads(arguments)
        except RecursionError:
            decoded = arguments  # too deep to decode here: sent as the string a client would send
        for action in (
            '<tool_call>{"name": "bash", "arguments": ' + arguments + "}</tool_call>",
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "abcdefghi", "type": "function",
                             "function": {"name": "bash", "arguments": decoded}}]},
        ):  # fmt: skip
            observation, _, terminated, truncated, info = env.step(action)
            assert not (terminated or truncated) and "error" not in info, info.get("error")
            assert observation and observation.strip() != "hi"
            json.dumps(info["messages"], ensure_ascii=False)
        assert env.step(bash("echo alive"))[0] == "alive"
        fix = [write("/workspace/solution.py", FUNCTION_TASK.fixed_code)]
        reward, terminated, _, info = run_episode(env, FUNCTION_TASK.task_id, fix)  # the control
        assert_scored(info, terminated, reward, 1.0)
    finally:
        env.close()


def test_a_message_with_arguments_nested_past_the_recursion_limit_is_a_tool_error() -> None:
    env = make_env("CodeDebug-v0", "local", max_turns=10)
    try:
        env.reset(options={"task_id": FUNCTION_TASK.task_id})
        deep: dict[str, Any] = {}
        inner = deep
        for _ in range(5000):  # as a caller holding Python objects (not JSON) could pass them
            inner["a"] = {}
            inner = inner["a"]
        for arguments in ({"command": "echo hi", "x": deep}, {"command": deep}):
            action = {"role": "assistant", "content": None,
                      "tool_calls": [{"id": "abcdefghi", "type": "function",
                                      "function": {"name": "bash", "arguments": arguments}}]}  # fmt: skip
            observation, _, terminated, truncated, _info = env.step(action)
            assert not (terminated or truncated) and observation
        assert env.step(bash("echo alive"))[0] == "alive"
    finally:
        env.close()


# -- 4. proxy starvation -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tokenizer():  # type: ignore[no-untyped-def]
    pytest.importorskip("aiohttp")
    from tests.rollout.test_proxy import tokenizer_for

    return tokenizer_for("tiny-bpe")


def exchange(path: str, raw: bytes, timeout: float = 30) -> int:
    """Send ``raw`` on a new connection to the unix socket ``path``; the status of the first reply (0: none)."""
    connection = socket.socket(socket.AF_UNIX)
    connection.settimeout(timeout)
    connection.connect(path)
    try:
        try:
            connection.sendall(raw)
        except OSError:
            pass  # the proxy may answer and close before it has read everything
        reply = b""
        try:
            while b"\r\n" not in reply:
                chunk = connection.recv(65536)
                if not chunk:
                    break
                reply += chunk
        except OSError:
            return 0
        return int(reply.split()[1]) if reply else 0
    finally:
        connection.close()


def request_head(rollout_id: str, secret: str | None, extra: str = "", length: int | None = None) -> bytes:
    lines = [f"POST /rollout/{rollout_id}/v1/chat/completions HTTP/1.1", "Host: localhost",
             "Content-Type: application/json"]  # fmt: skip
    if secret is not None:
        lines.append(f"Authorization: Bearer {secret}")
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n" + extra + "\r\n").encode()


def gzip_bomb(megabytes: int) -> bytes:
    """``megabytes`` MiB of spaces, gzipped (about a thousandth of that), made without holding them."""
    packer, block = zlib.compressobj(9, zlib.DEFLATED, 31), b" " * MiB
    return b"".join(packer.compress(block) for _ in range(megabytes)) + packer.flush()


class HonestHarness(threading.Thread):
    """An OpenAI-SDK harness playing ``turns`` requests over the proxy's socket while the attacks run."""

    def __init__(self, path: str, rollout: Any, turns: int) -> None:
        super().__init__(daemon=True)
        self.path, self.rollout, self.turns, self.failure = path, rollout, turns, None

    def run(self) -> None:
        from tests.rollout.test_proxy import play_over_socket

        try:
            play_over_socket(self.path, self.rollout, self.turns)
        except BaseException as error:  # reported by the test
            self.failure = error


def test_request_smuggling_and_header_bombs_starve_no_rollout(tokenizer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """From a client of the proxy's socket, one after another while an honest harness plays: a Content-Length
    of a petabyte that never comes, an endless chunked body, a 1 MB header line, 100,000 headers, 3,000
    pipelined requests to an unknown rollout in one write, a header trickled forever, and gzip bombs with no
    secret. Each gets its error; the honest rollout gets every turn with its exact ids, and memory stays put."""
    from gym_swe.rollout.generators.base import SamplingParams
    from gym_swe.rollout.proxy import ProxyServer
    from gym_swe.rollout.proxy.recorder import sampled_ids
    from tests.redteam.test_load import memory_watch
    from tests.rollout.test_proxy import OPENING, RecordingGenerator, commands

    path = str(tmp_path / "proxy.sock")
    generator = RecordingGenerator(tokenizer, commands(8))
    bomb = gzip_bomb(1024)
    with ProxyServer(generator, SamplingParams(max_tokens=64), unix_socket=path, idle_timeout=2) as proxy:
        attacker, honest = proxy.open_rollout("attacker"), proxy.open_rollout("honest")
        body = json.dumps({"messages": OPENING}).encode()
        cases = {
            "a petabyte promised": (request_head(attacker.id, attacker.secret, length=10**15) + body, {408}),
            "endless chunks": (
                request_head(attacker.id, attacker.secret, "Transfer-Encoding: chunked\r\n")
                + (b"100000\r\n" + b" " * 0x100000 + b"\r\n") * 200,
                {413},
            ),
            "a 1 MB header line": (request_head("x", None, "X-A: " + "a" * MiB + "\r\n"), {400, 431}),
            "100,000 headers": (request_head("x", None, "X-A: b\r\n" * 100_000), {400, 431}),
            "3,000 pipelined": (
                (request_head("feedface", attacker.secret, length=2) + b"{}") * 3000,
                {404},
            ),
            "a gzip bomb without the secret": (
                request_head("feedface", None, "Content-Encoding: gzip\r\n", len(bomb)) + bomb,
                {404},
            ),
            "a gzip bomb with another's secret": (
                request_head(honest.id, attacker.secret, "Content-Encoding: gzip\r\n", len(bomb)) + bomb,
                {401},
            ),
        }
        harness = HonestHarness(path, honest, turns=4)
        before = rss()
        with memory_watch() as memory:
            harness.start()
            statuses = {name: exchange(path, raw) for name, (raw, _) in cases.items()}
            harness.join(120)
        assert not harness.is_alive() and harness.failure is None, harness.failure
        assert {name: statuses[name] in allowed for name, (_, allowed) in cases.items()} == dict.fromkeys(
            cases, True
        ), statuses
        assert memory["peak_rss"] - before < 256 * MiB, memory["peak_rss"] - before
        trajectory = honest.finish()
        assert len(trajectory.turns) == 4 and sampled_ids(trajectory)
        assert trajectory.forks == 0
        # The attacker's own rollout is still served afterwards (nothing of its share is left held).
        assert exchange(path, request_head(attacker.id, attacker.secret, length=len(body)) + body) == 200


def test_a_gzip_bomb_with_the_rollouts_own_secret_is_bounded(tokenizer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from gym_swe.rollout.generators.base import SamplingParams
    from gym_swe.rollout.proxy import ProxyServer
    from tests.redteam.test_load import memory_watch
    from tests.rollout.test_proxy import RecordingGenerator, commands

    path = str(tmp_path / "proxy.sock")
    bomb = gzip_bomb(1024)
    with ProxyServer(RecordingGenerator(tokenizer, commands(4)), SamplingParams(max_tokens=64),
                     unix_socket=path, idle_timeout=5) as proxy:  # fmt: skip
        attacker, honest = proxy.open_rollout("attacker"), proxy.open_rollout("honest")
        harness = HonestHarness(path, honest, turns=2)
        before = rss()
        with memory_watch() as memory:
            harness.start()
            status = exchange(path, request_head(attacker.id, attacker.secret, "Content-Encoding: gzip\r\n",
                                                 len(bomb)) + bomb)  # fmt: skip
            harness.join(120)
        assert harness.failure is None and len(honest.finish().turns) == 2, harness.failure
        assert status in (413, 415), status
        # the body itself, once read and once decoded, and some room: not twelve times the cap
        assert memory["peak_rss"] - before < 2 * proxy.max_body_bytes + 64 * MiB, memory["peak_rss"] - before


def test_a_body_nested_too_deep_gets_a_clear_400(tokenizer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from gym_swe.rollout.generators.base import SamplingParams
    from gym_swe.rollout.proxy import ProxyServer
    from tests.rollout.test_proxy import RecordingGenerator, commands

    path = str(tmp_path / "proxy.sock")
    with ProxyServer(RecordingGenerator(tokenizer, commands(4)), SamplingParams(max_tokens=64),
                     unix_socket=path) as proxy:  # fmt: skip
        attacker, honest = proxy.open_rollout("attacker"), proxy.open_rollout("honest")
        deep = b'{"messages": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
        statuses = [exchange(path, request_head(attacker.id, attacker.secret, length=len(deep)) + deep)]
        harness = HonestHarness(path, honest, turns=2)
        harness.run()
        assert harness.failure is None and len(honest.finish().turns) == 2, harness.failure
        assert statuses == [400], statuses
