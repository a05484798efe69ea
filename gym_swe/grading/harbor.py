"""Running a Harbor task's verifier (``tests/test.sh``) the way gym_swe grades: after the agent's last
command, in a fresh sandbox holding the agent's work dir, with the tests copied in only then.

What is carried from the agent's sandbox is its work dir: files and directories (links dropped, setuid bits
dropped), replacing the pristine work dir of the fresh sandbox. State outside the work dir (packages the agent
installed, files it wrote under /etc or /root) is not carried: a task whose verifier needs it cannot be graded
this way (docs/harbor.md).

The reward is the verifier's (``/logs/verifier/reward.json``, else ``reward.txt``), read with a size bound
after every process of the run is killed. Code under test runs inside test.sh's process tree and can write
that file itself, so the reward alone protects nothing; what protects it is **sealed checks**: a verifier that
also writes ``/logs/verifier/checks.json`` (name -> value) has those values compared on the host with the
values the task's oracle (``solution/solve.sh``) produced, which the run never sees. See `HarborEnv` for which
grades the default pays.
"""

from __future__ import annotations

import json
import math
import shlex
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gym_swe.errors import FileTooLargeError, SandboxError
from gym_swe.grading.base import Grade, TestResult
from gym_swe.grading.changes import SubmissionRejected
from gym_swe.sandbox import Sandbox
from gym_swe.tasks.harbor import HarborTask

TESTS_PATH = "/tests"
SOLUTION_PATH = "/solution"
VERIFIER_DIR = "/logs/verifier"
REWARD_TEXT_BYTES = 4096
REWARD_JSON_BYTES = 64 * 1024
CHECKS_BYTES = 1024 * 1024
WORKDIR_BYTES = 512 * 1024 * 1024
SOLVE_TIMEOUT = 1800.0
LOG_CHARS = 6000
VERIFIER_TEST = "tests/test.sh"
"""The one test of a Harbor grade: the task's verifier."""


@dataclass(frozen=True)
class VerifierRun:
    """What one run of a task's verifier left."""

    reward: float | None
    """The verifier's reward, clipped to [0, 1]; None when it wrote none that can be read."""
    problem: str | None
    """Why there is no reward (a missing or malformed reward file), or None."""
    checks: dict[str, Any] | None
    """The verifier's ``checks.json``, or None when it wrote none (or one that cannot be read)."""
    log: str
    duration: float


def carry_workdir(agent: Sandbox, grader: Sandbox, workdir: str) -> None:
    """The agent's work dir into ``grader`` in place of its pristine one: files and directories, with their
    executable bits (links and setuid bits dropped by the download). Over `WORKDIR_BYTES` it is rejected: the
    agent's doing."""
    with tempfile.TemporaryDirectory(prefix="gym_swe-harbor-") as scratch:
        try:
            carried = agent.download(workdir, scratch, max_bytes=WORKDIR_BYTES)  # type: ignore[call-arg]
        except FileTooLargeError:
            raise SubmissionRejected(
                f"the work dir {workdir} holds over {WORKDIR_BYTES // (1024 * 1024)} MB: too large to grade"
            ) from None
        if carried.is_symlink() or not carried.is_dir():  # it replaced the work dir by a link or a file
            raise SubmissionRejected(f"the work dir {workdir} is not a directory any more: nothing to grade")
        cleared = grader.exec(f"find {shlex.quote(workdir)} -mindepth 1 -delete", timeout=300)
        if not cleared.ok:
            raise SandboxError(f"clearing the grading sandbox's {workdir} failed: {cleared.output[-500:]}")
        grader.upload(carried, workdir)


def stage_verifier(sandbox: Sandbox, task: HarborTask) -> None:
    """``tests/`` at /tests and an empty /logs/verifier, where the sandbox did not get them as mounts (the
    local backend binds them when it starts: see `HarborEnv`)."""
    if getattr(sandbox, "backend", "") != "docker":
        return
    made = sandbox.exec(
        f"rm -rf {TESTS_PATH} {VERIFIER_DIR} && mkdir -p {TESTS_PATH} {VERIFIER_DIR}", timeout=60
    )
    if not made.ok:
        raise SandboxError(f"making {TESTS_PATH} and {VERIFIER_DIR} failed: {made.output[-500:]}")
    sandbox.upload(task.tests_dir, TESTS_PATH)


def run_verifier(sandbox: Sandbox, task: HarborTask, timeout: float | None = None) -> VerifierRun:
    """Run ``bash /tests/test.sh`` from the work dir (tests staged by `stage_verifier`), kill what it left,
    then read its reward and checks."""
    started = time.monotonic()
    env = {**task.environment_env, **task.verifier_env}
    result = sandbox.exec(
        f"bash {TESTS_PATH}/test.sh", timeout=timeout or task.verifier_timeout, cwd=task.workdir, env=env
    )
    sandbox.kill_processes()  # nothing the run left behind may write the reward after it ended
    log = result.output[-LOG_CHARS:]
    if result.timed_out:
        log += f"\n[the verifier ran past its timeout of {timeout or task.verifier_timeout:.0f} s]"
    reward, problem, note = read_reward(sandbox)
    if note:
        log += f"\n{note}"
    checks, checks_note = read_checks(sandbox)
    if checks_note:
        log += f"\n{checks_note}"
    return VerifierRun(reward, problem, checks, log, time.monotonic() - started)


def run_oracle(sandbox: Sandbox, task: HarborTask, timeout: float | None = None) -> VerifierRun:
    """The task's own solution (``solution/`` staged at /solution, ``solve.sh`` run from the work dir), then
    its verifier, in one fresh sandbox."""
    if getattr(sandbox, "backend", "") == "docker":
        assert task.solution_dir is not None
        made = sandbox.exec(f"rm -rf {SOLUTION_PATH} && mkdir -p {SOLUTION_PATH}", timeout=60)
        if not made.ok:
            raise SandboxError(f"making {SOLUTION_PATH} failed: {made.output[-500:]}")
        sandbox.upload(task.solution_dir, SOLUTION_PATH)
    solved = sandbox.exec(
        f"bash {SOLUTION_PATH}/solve.sh", timeout=SOLVE_TIMEOUT, cwd=task.workdir,
        env={**task.environment_env, **task.solution_env},
    )  # fmt: skip
    sandbox.kill_processes()
    stage_verifier(sandbox, task)
    run = run_verifier(sandbox, task, timeout)
    solve_log = f"[solution/solve.sh exited {solved.exit_code}]\n{solved.output[-2000:]}\n"
    return VerifierRun(run.reward, run.problem, run.checks, solve_log + run.log, run.duration)


def read_reward(sandbox: Sandbox) -> tuple[float | None, str | None, str | None]:
    """(reward clipped to [0, 1] or None, why there is none, a note on clipping): reward.json first, as Harbor
    reads it (its ``reward`` key, else its only key), else reward.txt (one number)."""
    for name, limit in (("reward.json", REWARD_JSON_BYTES), ("reward.txt", REWARD_TEXT_BYTES)):
        try:
            data = sandbox.read_file(f"{VERIFIER_DIR}/{name}", max_bytes=limit)
        except FileTooLargeError:
            return None, f"{VERIFIER_DIR}/{name} is over {limit} bytes", None
        except FileNotFoundError:
            continue
        text = data.decode("utf-8", errors="replace").strip()
        value, problem = reward_value(name, text)
        if value is None:
            return None, problem, None
        if not 0.0 <= value <= 1.0:
            clipped = min(max(value, 0.0), 1.0)
            return clipped, None, f"[the verifier's reward {value!r} is outside [0, 1]: clipped to {clipped}]"
        return value, None, None
    return None, f"the verifier wrote no reward ({VERIFIER_DIR}/reward.txt or reward.json)", None


def reward_value(name: str, text: str) -> tuple[float | None, str | None]:
    where = f"{VERIFIER_DIR}/{name}"
    if not text:
        return None, f"{where} is empty"
    if name == "reward.txt":
        try:
            value = float(text)
        except ValueError:
            return None, f"{where} is not a number: {text[:80]!r}"
    else:
        try:
            rewards = json.loads(text)
        except ValueError:
            return None, f"{where} is not JSON: {text[:80]!r}"
        if isinstance(rewards, Mapping):
            if "reward" in rewards:
                rewards = rewards["reward"]
            elif len(rewards) == 1:
                rewards = next(iter(rewards.values()))
            else:
                return None, f"{where} has several rewards and none named 'reward': {sorted(rewards)[:8]}"
        if isinstance(rewards, bool) or not isinstance(rewards, (int, float)):
            return None, f"{where}: the reward is not a number: {str(rewards)[:80]!r}"
        value = float(rewards)
    if not math.isfinite(value):
        return None, f"{where}: the reward {value!r} is not finite"
    return value, None


def read_checks(sandbox: Sandbox) -> tuple[dict[str, Any] | None, str | None]:
    """The verifier's ``checks.json`` (a JSON object), or None with a note when it is there but unusable."""
    where = f"{VERIFIER_DIR}/checks.json"
    try:
        data = sandbox.read_file(where, max_bytes=CHECKS_BYTES)
    except FileTooLargeError:
        return None, f"[{where} is over {CHECKS_BYTES} bytes]"
    except FileNotFoundError:
        return None, None
    try:
        checks = json.loads(data.decode("utf-8", errors="replace"))
    except ValueError:
        return None, f"[{where} is not JSON]"
    if not isinstance(checks, dict):
        return None, f"[{where} is not a JSON object]"
    return checks, None


def verifier_grade(run: VerifierRun, sealed: Mapping[str, Any] | None, mode: str) -> Grade:
    """The grade of one verifier run. ``sealed``: the oracle's checks (None: nothing sealed, the verifier's
    reward alone). Resolved needs the reward 1 and, when sealed, every sealed check equal to the oracle's;
    ``mode`` "binary" pays 1.0 for resolved, "fraction" the verifier's reward (0 when a seal is broken)."""
    if run.reward is None:
        return Grade(
            tests=(TestResult(VERIFIER_TEST, "error", run.problem or ""),), resolved=False, reward=0.0,
            rejection=f"no reward: {run.problem}", log=run.log, duration=run.duration,
            integrity="sealed" if sealed else "unprotected", chance=0.0 if sealed else None,
        )  # fmt: skip
    broken: list[str] = []
    if sealed:
        given = run.checks or {}
        broken = sorted(name for name, value in sealed.items() if name not in given or given[name] != value)
    log = run.log
    if broken:
        log += f"\n[sealed checks that differ from the oracle's: {len(broken)} of {len(sealed or {})}]"
    resolved = run.reward >= 1.0 and not broken
    outcome = "passed" if resolved else "failed"
    paid = 0.0 if broken else run.reward  # "fraction": the verifier's own share, unless a seal is broken
    reward = (1.0 if resolved else 0.0) if mode == "binary" else paid
    return Grade(
        tests=(TestResult(VERIFIER_TEST, outcome, f"reward {run.reward:g}"),), resolved=resolved,
        reward=reward, log=log, duration=run.duration,
        integrity="sealed" if sealed else "unprotected", chance=0.0 if sealed else None,
    )  # fmt: skip
