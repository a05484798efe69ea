"""Episodes in a row, of every kind (submitted, cut at max_turns, sandbox killed; both envs, both backends):
nothing may be left behind, no container, process, temp dir, cgroup or open file.

500 episodes in `bench/redteam_report.py`; ``GYM_SWE_TEST_SCALE`` scales the mix (`tests.conftest.long_run_scale`),
and `make test` plays a quarter of it (every kind still played, each at least once)."""

from __future__ import annotations

import itertools
import json
import os
from collections import Counter
from pathlib import Path

import pytest

from gym_swe.sandbox.cgroups import jail_cgroup_parents
from gym_swe.sandbox.local import WORKSPACE_PREFIX, workspace_root
from gym_swe.tasks.functions import load_function_tasks
from gym_swe.tasks.swe import load_swe_tasks
from tests.conftest import kill_jail, scaled
from tests.redteam.scripted import SUBMIT, bash, make_env, write

FULL = 500
# (env, backend, kind): how many episodes of each, of FULL
FULL_MIX = {
    ("CodeDebug-v0", "local", "fix"): 200,
    ("CodeDebug-v0", "local", "max_turns"): 50,
    ("CodeDebug-v0", "local", "killed"): 30,
    ("SWEGym-v0", "local", "fix"): 100,
    ("CodeDebug-v0", "docker", "fix"): 80,
    ("CodeDebug-v0", "docker", "killed"): 10,
    ("SWEGym-v0", "docker", "fix"): 30,
}
MIX = {key: scaled(count) for key, count in FULL_MIX.items()}


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                parent = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(proc.name))
    found, stack = set(), [root]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def footprint(owner: int | None = None) -> dict[str, int]:
    """What the sandboxes of process ``owner`` (default: this one) could leave behind, counted: other gym_swe
    users on the host (a second test run, a training job) have their own workspaces, cgroups and containers,
    named by their pid. Open files are this process's."""
    owner = os.getpid() if owner is None else owner
    prefix = f"{WORKSPACE_PREFIX}{owner}-"
    cgroups = [
        child
        for parent in jail_cgroup_parents()
        if parent.is_dir()
        for child in parent.iterdir()
        if child.is_dir() and child.name.startswith(prefix)
    ]
    in_cgroups: set[int] = set()
    for group in cgroups:
        try:
            in_cgroups.update(int(pid) for pid in (group / "cgroup.procs").read_text().split())
        except (OSError, ValueError):
            continue
    processes = set(in_cgroups)
    for pid in _descendants(owner):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"bwrap" in command or b"gym_swe/executor.py" in command or b"gym_swe-jail" in command:
            processes.add(pid)
    containers = 0
    try:
        from gym_swe.sandbox.docker import LABEL, docker_client

        labels = [LABEL, f"gym_swe.owner_pid={owner}"]
        containers = len(docker_client().containers.list(all=True, filters={"label": labels}))
    except Exception:
        pass
    return {
        "containers": containers,
        "processes": len(processes),
        "temp_dirs": len(list(workspace_root().glob(f"{prefix}*"))),
        "cgroups": len({group.name for group in cgroups}),  # one per jail (per controller on cgroup v1)
        "open_files": len(os.listdir("/proc/self/fd")),
    }


def leftovers(owner: int) -> dict[str, int]:
    """What a process that has exited left of its sandboxes (nonzero counts only): {} when nothing."""
    counts = footprint(owner)
    return {name: count for name, count in counts.items() if name != "open_files" and count}


@pytest.mark.slow
def test_soak_episodes() -> None:
    """Long by design: many whole episodes of every env x sandbox x task kind, hostile ones among them, one
    after another on shared envs (a quarter of the mix in make test: GYM_SWE_TEST_SCALE; make bench plays it
    whole)."""
    function_tasks = list(load_function_tasks("bundled"))
    swe_tasks = list(load_swe_tasks("bundled"))
    envs = {}
    for env_id, backend, kind in MIX:
        key = (env_id, backend, kind)
        envs[key] = make_env(env_id, backend, **({"max_turns": 2} if kind == "max_turns" else {}))
    # Warm up every env once (the docker client's connection pool, prepared environments), then measure.
    for key, env in envs.items():
        env.reset(options={"task_id": (function_tasks if key[0] == "CodeDebug-v0" else swe_tasks)[0].task_id})
        env.step(SUBMIT)
    before = footprint()

    outcomes: Counter[str] = Counter()
    schedule = [key for key, count in MIX.items() for _ in range(count)]
    cycle = {"CodeDebug-v0": itertools.cycle(function_tasks), "SWEGym-v0": itertools.cycle(swe_tasks)}
    for number, key in enumerate(schedule):
        env_id, backend, kind = key
        env = envs[key]
        task = next(cycle[env_id])
        env.reset(seed=number, options={"task_id": task.task_id})
        if kind == "killed":
            box = env.unwrapped.sandbox
            if backend == "local":
                kill_jail(box)
            else:
                box.container.kill()
            actions = [bash("echo after")]
        elif kind == "max_turns":
            actions = [bash("echo a"), bash("sleep 0.01 & echo b")]
        elif env_id == "CodeDebug-v0":
            actions = [
                write("/workspace/solution.py", task.fixed_code),
                bash("(sleep 30 &) ; echo bg"),
                SUBMIT,
            ]
        else:
            actions = [write("/tmp/fix.diff", task.patch), bash("git apply /tmp/fix.diff"), SUBMIT]
        for action in actions:
            _, reward, terminated, truncated, _info = env.step(action)
            if terminated or truncated:
                break
        assert terminated or truncated, (key, number)
        outcomes[f"{kind}:{'ok' if (reward == 1.0) == (kind == 'fix') else 'unexpected'}"] += 1
    for env in envs.values():
        env.close()
    after = footprint()

    leaks = {name: after[name] - before[name] for name in before if after[name] > before[name]}
    report = {
        "episodes": len(schedule),
        "outcomes": dict(outcomes),
        "before": before,
        "after": after,
        "leaks": leaks,
    }
    if os.environ.get("GYM_SWE_SOAK_REPORT"):
        Path(os.environ["GYM_SWE_SOAK_REPORT"]).write_text(json.dumps(report, indent=2))
    assert not [k for k in outcomes if k.endswith("unexpected")], report
    assert after["containers"] <= before["containers"] and after["processes"] <= before["processes"], report
    assert after["temp_dirs"] <= before["temp_dirs"] and after["cgroups"] <= before["cgroups"], report
    assert after["open_files"] <= before["open_files"] + 2, (
        report
    )  # the docker client may keep a pooled socket


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_the_footprint_sees_a_leaked_sandbox(backend: str) -> None:
    """The leak check must be able to fail: a sandbox left open shows in every count it owns."""
    from tests.conftest import require_bwrap, require_docker

    (require_docker if backend == "docker" else require_bwrap)()
    from gym_swe.sandbox import make_sandbox

    before = footprint()
    leaked = make_sandbox(backend)
    leaked.exec("sleep 60 > /dev/null 2>&1 &")
    during = footprint()
    leaked.close()
    after = footprint()
    if backend == "docker":
        assert during["containers"] == before["containers"] + 1
    else:
        assert during["processes"] > before["processes"] and during["temp_dirs"] == before["temp_dirs"] + 1
        if os.geteuid() == 0:
            assert during["cgroups"] == before["cgroups"] + 1
    assert {k: after[k] for k in ("containers", "processes", "temp_dirs", "cgroups")} == {
        k: before[k] for k in ("containers", "processes", "temp_dirs", "cgroups")
    }
