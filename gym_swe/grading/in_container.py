"""gym_swe's own grader, run as the verifier of an exported Harbor task (`integrations.harbor_export`).

Harbor runs ``tests/test.sh`` inside the agent's own container, after the agent, as root. test.sh runs
``python -m gym_swe.grading.in_container /tests/task.json`` with gym_swe's venv, which grades as the env
would, with what this container allows:

1. Every process of the agent's user is killed, and /tmp, /var/tmp and /dev/shm emptied: nothing the agent
   left behind runs or is read while grading (the env grades in a fresh sandbox; here there is none).
2. The agent's work dir is taken as it stands. A function task: its solution file (a regular file only, at
   most 1 MiB) is graded by `grade_function` in a fresh, empty directory. A repository task: the work dir is
   moved aside, a copy of the pristine tree the image keeps (``/opt/gym_swe/pristine``, made when the image
   was built) takes its place, and the agent's diff is taken against it by `take_diff` and graded by
   `grade_repository` there, protected paths dropped, exactly as `SWEGymEnv` does; its sealed checks are
   first learned from the gold patch in /tests (three runs of the tests in fresh copies of the pristine
   tree, as the env's first grade of a task does), unless /tests holds them already.
3. Commands run in `InPlaceSandbox` es, as unprivileged users (``gymswe-grader`` runs the tests,
   ``gymswe-reader`` reads the agent's tree): the code under test cannot read /tests (root's, mode 700),
   nor this process's memory, so the gold patch, the hidden tests' sealed expectations and the decoys' key
   stay out of its reach, as on the host.
4. ``/logs/verifier/reward.txt`` gets the reward (under ``integrity="protected"``, a grade the env would not
   pay is 0, as ``Grade.error`` "not graded"); ``/logs/verifier/grade.json`` the whole `Grade`.

What this cannot give (docs/harbor.md, "Export"): the agent's own user must be an unprivileged one (the task
says so in task.toml, ``[agent] user``); a runtime that runs the agent as root anyway gives it the grader,
the pristine tree and everything here to rewrite, and then the reward means nothing.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Any

from gym_swe.grading.base import Grade
from gym_swe.sandbox.in_place import InPlaceSandbox, kill_user_processes

LOGS = Path("/logs/verifier")
GRADER_USER = "gymswe-grader"
READER_USER = "gymswe-reader"
AGENT_USER = "agent"
STATE = Path("/opt/gym_swe/run")
"""Root's working area: the agent's tree moved aside, the fresh directories grading runs in."""
PRISTINE = Path("/opt/gym_swe/pristine")
MAX_SOLUTION_BYTES = 1024 * 1024
SCRATCH_DIRS = ("/tmp", "/var/tmp", "/dev/shm")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--calibrate"]:
        return calibrate_only(Path(argv[1]), Path(argv[2]))
    spec = json.loads(Path(argv[0]).read_text())
    start = time.monotonic()
    try:
        quiet_the_agent(spec.get("agent_user", AGENT_USER))
        own_logs()
        function = spec["kind"] == "function"
        grade = grade_function_task(spec) if function else grade_repository_task(spec)
    except Exception:  # the grader's own failure: reward 0, and the reason where a person reads it
        grade = Grade(tests=(), resolved=False, reward=0.0, error=traceback.format_exc()[-4000:])
    grade = replace(grade, duration=time.monotonic() - start)
    own_logs()  # again: whatever the grade's commands left there goes (their processes are gone by now)
    write_new(LOGS / "grade.json", json.dumps(grade.to_dict()))
    write_new(LOGS / "reward.txt", f"{grade.reward}\n")
    why = (grade.rejection or grade.error or "").strip().splitlines()
    verdict = "resolved" if grade.resolved else "not resolved"
    print(f"gym_swe: reward {grade.reward} ({verdict}{'; ' + why[-1] if why else ''})")  # test.sh's log
    return 0


def quiet_the_agent(agent_user: str) -> None:
    """Kill what the agent's user still runs, and empty the shared scratch directories."""
    try:
        agent = pwd.getpwnam(agent_user)
    except KeyError:
        agent = None
    if agent is not None and agent.pw_uid != 0:
        kill_user_processes(agent.pw_uid, agent.pw_gid)
    for name in (GRADER_USER, READER_USER):
        entry = pwd.getpwnam(name)
        kill_user_processes(entry.pw_uid, entry.pw_gid)  # planted nothing (they have no shell), but be sure
    for directory in SCRATCH_DIRS:
        for child in Path(directory).glob("*"):
            remove(child)
        for child in Path(directory).glob(".*"):
            remove(child)


def own_logs() -> None:
    """/logs/verifier as root's alone and empty: Harbor may leave it writable by all, and a reward.json
    written there by the agent or the code under test would be read in place of ours."""
    if LOGS.is_symlink() or (LOGS.exists() and not LOGS.is_dir()):
        LOGS.unlink()
    LOGS.mkdir(parents=True, exist_ok=True)
    os.chown(LOGS, 0, 0)
    os.chmod(LOGS, 0o755)
    for child in [*LOGS.glob("*"), *LOGS.glob(".*")]:
        remove(child)


def write_new(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as file:
        file.write(text)


def remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)


def give_to(path: Path, user: str) -> None:
    """Make ``path`` (a tree that root made or took) the user's: owner, and read/write for it, links
    untouched (never followed)."""
    entry = pwd.getpwnam(user)
    for root, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            child = os.path.join(root, name)
            os.lchown(child, entry.pw_uid, entry.pw_gid)
            mode = os.lstat(child).st_mode
            if not stat.S_ISLNK(mode):
                os.chmod(child, stat.S_IMODE(mode) | (0o700 if stat.S_ISDIR(mode) else 0o600))
    os.lchown(path, entry.pw_uid, entry.pw_gid)
    os.chmod(path, 0o755)


# -- function tasks (CodeDebug) ---------------------------------------------------------------------------
def grade_function_task(spec: dict[str, Any]) -> Grade:
    from gym_swe.grading.functions import grade_function
    from gym_swe.tasks.functions import FunctionTask

    task = FunctionTask(**spec["task"])
    code = read_solution(Path(spec["workdir"]) / spec["solution"])
    if code is None:
        reason = f"{spec['solution']} is larger than {MAX_SOLUTION_BYTES // 1024} KiB"
        return Grade(tests=(), resolved=False, reward=0.0, rejection=reason)
    workdir = fresh_dir("function")
    with InPlaceSandbox(str(workdir), GRADER_USER) as grader:
        return grade_function(
            grader, task, code, reward=spec["reward"], test_timeout=spec["test_timeout"],
            total_timeout=spec["grade_timeout"], solution_name=spec["solution"],
        )  # fmt: skip


def read_solution(path: Path) -> bytes | None:
    """The solution's bytes (b"" where it is not a regular file: a link, a FIFO, gone), None when too large.
    A link is never followed: root reads it, and it could name a file of /tests."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b""
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        data = file.read(MAX_SOLUTION_BYTES + 1)
    return None if len(data) > MAX_SOLUTION_BYTES else data


def fresh_dir(name: str) -> Path:
    path = STATE / name
    remove(path)
    path.mkdir(parents=True)
    give_to(path, GRADER_USER)
    return path


# -- repository tasks (SWE) ------------------------------------------------------------------------------
def swe_task(data: dict[str, Any]) -> Any:
    """The `SWETask` a spec holds (as `task_json` wrote it)."""
    from gym_swe.tasks.swe import Environment, SWETask

    def tuples(value: Any) -> Any:
        return tuple(tuples(v) for v in value) if isinstance(value, list) else value

    environment = Environment(**{k: tuples(v) for k, v in data["environment"].items()})
    values = {f.name: tuples(data[f.name]) for f in fields(SWETask) if f.name in data}
    return SWETask(**{**values, "environment": environment})


def task_json(task: Any) -> dict[str, Any]:
    """A `SWETask` as JSON-able data (`swe_task` reads it back)."""
    return asdict(task)


def grade_repository_task(spec: dict[str, Any]) -> Grade:
    from gym_swe.grading import seals
    from gym_swe.grading.changes import manifest, take_diff
    from gym_swe.grading.diffs import protection_reason, split_diff
    from gym_swe.grading.environment import probe_environment
    from gym_swe.grading.repository import grade_repository
    from gym_swe.grading.runners import runner_named

    task = swe_task(spec["task"])
    workdir = spec["workdir"]
    agent_tree = STATE / "agent"
    remove(agent_tree)
    STATE.mkdir(parents=True, exist_ok=True)
    # The agent's tree, as it stands (cp -a: links as links, a FIFO as a FIFO, nothing opened; a rename
    # fails across overlayfs layers); the work dir then holds fresh pristine copies.
    subprocess.run(["cp", "-a", "--", workdir, str(agent_tree)], check=True, capture_output=True)
    remove(Path(workdir))
    give_to(agent_tree, READER_USER)
    runner = runner_named(task.test_runner)
    files = runner.test_files([*task.fail_to_pass, *task.pass_to_pass], task.test_patch)
    new_sandbox = pristine_sandboxes(task, workdir)
    sealed, inputs = sealed_checks(spec, task, new_sandbox) if seals.SEAL_CHECKS else ({}, {})
    with new_sandbox() as grader:
        environment = probe_environment(grader, workdir, files, runner.needs_pytest)
        pristine = manifest(grader, workdir)
        test_paths = {path for part in split_diff(task.test_patch) for path in part.paths}

        def reason_to_drop(path: str, new: bool) -> str | None:
            return protection_reason(
                path, test_paths, environment.shadowable, new=new, editable=environment.editable,
                runner_paths=runner.protected,
            )  # fmt: skip

        # "." is each sandbox's own work dir: the agent's tree aside, the pristine copy in place
        with InPlaceSandbox(str(agent_tree), READER_USER) as agent:
            taken = take_diff(agent, grader, pristine, ".", reason_to_drop)
        grade = grade_repository(
            grader, task, taken.diff, reward=spec["reward"], timeout=spec["test_timeout"], workdir=workdir,
            environment=environment, pristine=pristine, sealed=sealed, inputs=inputs,
        )  # fmt: skip
    dropped = "".join(f"\ndropped {path}: {reason}" for path, reason in taken.dropped)
    return paid(replace(grade, log=grade.log + dropped, diff=taken.diff), spec["integrity"])


def pristine_sandboxes(task: Any, workdir: str) -> Callable[[], InPlaceSandbox]:
    """Sandboxes of the tests' user, each on a fresh copy of the pristine tree at the work dir."""
    env = sandbox_env(task)

    def new_sandbox() -> InPlaceSandbox:
        remove(Path(workdir))
        shutil.copytree(PRISTINE / "tree", workdir, symlinks=True)
        give_to(Path(workdir), GRADER_USER)
        return InPlaceSandbox(workdir, GRADER_USER, env=env)

    return new_sandbox


def calibrate_only(spec_path: Path, out: Path) -> int:
    """``--calibrate SPEC OUT``: what `sealed_checks` learns from the gold patch, written to ``OUT`` as JSON
    (``{"sealed": ..., "inputs": ...}``), for the export to keep in /tests: run once, in a container of the
    task's own image, where the verifier would otherwise learn it at every verification."""
    spec = json.loads(spec_path.read_text())
    task = swe_task(spec["task"])
    STATE.mkdir(parents=True, exist_ok=True)
    sealed, inputs = sealed_checks(spec, task, pristine_sandboxes(task, spec["workdir"]))
    out.write_text(json.dumps({"sealed": sealed, "inputs": inputs}))
    return 0


def sandbox_env(task: Any) -> dict[str, str]:
    """What every command of the grade gets besides the sandbox's own: this container's PATH (the task's
    environment first on it, as the image set it) and the task's variables."""
    path = os.pathsep.join(
        part for part in os.environ.get("PATH", "").split(os.pathsep) if not part.startswith("/opt/gym_swe/")
    )
    return {"PATH": path, **task.environment.variables}


def sealed_checks(spec: dict[str, Any], task: Any, new_sandbox: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The sealed checks and decoy inputs: from /tests when the export calibrated them, else learned here from
    the gold patch, as `SWEGymEnv` learns them on a task's first grade (calibrate, protection, inputs)."""
    from gym_swe.grading.calibration import calibrate, probe_inputs, protection
    from gym_swe.grading.changes import manifest
    from gym_swe.grading.environment import probe_environment
    from gym_swe.grading.runners import runner_named

    if "sealed" in spec:
        return spec["sealed"], spec.get("inputs", {})
    workdir, timeout = spec["workdir"], spec["test_timeout"]
    runner = runner_named(task.test_runner)
    files = runner.test_files([*task.fail_to_pass, *task.pass_to_pass], task.test_patch)
    with new_sandbox() as sandbox:
        environment = probe_environment(sandbox, workdir, files, runner.needs_pytest)
        pristine = manifest(sandbox, workdir)
        grade, sealable = calibrate(
            sandbox, task, timeout=timeout, workdir=workdir, environment=environment, pristine=pristine
        )
    if not grade.resolved:
        return {}, {}  # the env, too, grades with decoys alone when its gold patch does not resolve the task
    with new_sandbox() as unfixed:
        sealable = protection(
            unfixed, task, sealable, timeout=timeout, workdir=workdir, environment=environment,
            pristine=pristine,
        )  # fmt: skip
    inputs = probe_inputs(
        new_sandbox, task, sealable, timeout=timeout, workdir=workdir, environment=environment,
        pristine=pristine,
    )  # fmt: skip
    return sealable, inputs


def paid(grade: Grade, integrity: str) -> Grade:
    """The grade as ``integrity`` pays it (`SWEGymEnv`'s rule): one it does not pay earns 0, as an error."""
    if grade.error is not None or grade.rejection is not None or not grade.integrity:
        return grade
    if integrity == "sealed" and grade.integrity != "sealed":
        why = "no FAIL_TO_PASS check of this task can be sealed against a forged test report"
    elif integrity == "protected" and grade.integrity == "unprotected":
        why = f"its decoys leave a forged test report a chance of {grade.chance:.1%}, and no check is sealed"
    else:
        return grade
    return replace(grade, resolved=False, reward=0.0, error=f"not graded: integrity={integrity!r}, and {why}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
