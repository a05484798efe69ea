"""SWEGym-v0 end to end: real repositories (the bundled git bundles), real git, real pytest, both backends."""

from __future__ import annotations

import base64
import json
import subprocess
import sys

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import gym_swe  # noqa: F401
from gym_swe.errors import ConfigError
from gym_swe.tasks.swe import load_swe_tasks
from tests.conftest import require_bwrap, require_docker
from tests.redteam.test_forged_reports import SEALED_TASKS

TASKS = load_swe_tasks("bundled")
TASK = TASKS.get("gymswe__semverkit-1")  # F2P in tests/test_version.py; the fix is in semverkit/version.py
SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'
INTEGRITY = {
    task.instance_id: "sealed" if task.instance_id in SEALED_TASKS else "decoys" for task in TASKS
}  # what stands between a forged report and each bundled task's reward (README, Security)


def bash(command: str) -> str:
    return "<tool_call>" + json.dumps({"name": "bash", "arguments": {"command": command}}) + "</tool_call>"


def write(path: str, text: str) -> str:
    encoded = base64.b64encode(text.encode()).decode()
    return bash(f"mkdir -p $(dirname {path}) && echo {encoded} | base64 -d > {path}")


def apply_gold(task=TASK) -> str:  # type: ignore[no-untyped-def]
    encoded = base64.b64encode(task.patch.encode()).decode()
    return bash(f"echo {encoded} | base64 -d | git apply")


def episode(env, actions: list[str], task=TASK) -> tuple[float, dict]:  # type: ignore[no-untyped-def]
    env.reset(options={"task_id": task.instance_id})
    for action in [*actions, SUBMIT]:
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return reward, info
    raise AssertionError("the episode did not end")


@pytest.fixture(params=["local", "docker"])
def env(request):
    if request.param == "docker":
        require_docker()
        from gym_swe.sandbox.docker import docker_client
        from gym_swe.tasks.swe import docker_image

        try:
            docker_client().images.get(docker_image(TASK, "gym-swe"))
        except Exception:
            pytest.fail("the bundled task images are missing: run `gym-swe images build --tasks bundled`")
    else:
        require_bwrap()
    environment = gymnasium.make("SWEGym-v0", sandbox=request.param)
    yield environment
    environment.close()


# -- the workspace and the prompt -----------------------------------------------------------------------
def test_workspace_is_the_repository_at_base_commit_without_later_history(env) -> None:
    _observation, _info = env.reset(options={"task_id": TASK.instance_id})
    box = env.unwrapped.sandbox
    assert box.exec("git rev-parse HEAD").stdout.strip() == TASK.base_commit
    assert box.exec("git status --porcelain").stdout == ""
    assert (
        box.exec("git rev-list --all").stdout.split()
        == box.exec(f"git rev-list {TASK.base_commit}").stdout.split()
    )
    assert box.exec("git remote").stdout == ""
    assert " passed in " in box.exec("python -m pytest -q tests/test_version.py 2>&1 | tail -1").stdout


def test_prompt_has_the_issue_and_never_the_patches(env) -> None:
    observation, info = env.reset(options={"task_id": TASK.instance_id})
    assert TASK.problem_statement.strip()[:200] in observation
    for secret in (TASK.patch, TASK.test_patch):
        for line in secret.splitlines():
            code = line[1:].strip()
            if line.startswith("+") and len(code) > 40 and not line.startswith("+++"):
                assert code in TASK.problem_statement or code not in observation
    assert "Hints from the maintainers" not in observation
    assert [m["role"] for m in info["messages"]] == ["system", "user"]


def test_hints_are_optional() -> None:
    require_bwrap()
    task = next(t for t in TASKS if t.hints_text.strip())
    environment = gymnasium.make("SWEGym-v0", hints=True)
    observation, _ = environment.reset(options={"task_id": task.instance_id})
    assert task.hints_text.strip()[:100] in observation
    environment.close()


def test_check_env_passes() -> None:
    require_bwrap()
    environment = gymnasium.make("SWEGym-v0")
    check_env(environment.unwrapped)
    environment.close()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"source_mode": "cow"}, "Unknown source_mode 'cow'"),
    ({"image_naming": "swebench"}, "Did you mean 'swe-bench'?"),
    ({"hint": True}, "Did you mean 'hints'?"),
    ({"integrity": "strict"}, "Unknown integrity 'strict'"),
])  # fmt: skip
def test_wrong_kwargs(kwargs, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        gymnasium.make("SWEGym-v0", **kwargs)


# -- grading ----------------------------------------------------------------------------------------------
def test_the_gold_patch_resolves_and_nothing_does_not(env) -> None:
    reward, info = episode(env, [apply_gold()])
    grade = info["grade"]
    assert reward == 1.0 and grade["resolved"]
    assert set(grade["groups"]["FAIL_TO_PASS"]) == set(TASK.fail_to_pass)
    assert all(test["outcome"] == "passed" for test in grade["tests"])
    reward, info = episode(env, [])
    assert reward == 0.0
    failing = {t["name"] for t in info["grade"]["tests"] if t["outcome"] != "passed"}
    assert failing == set(TASK.fail_to_pass)


def test_the_pristine_state_is_taken_once_per_task(env, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe of the task's python and the pristine manifest are the same for every grading sandbox of a
    task: a group of samples pays for them once, and the grades still come out right."""
    from gym_swe.envs import swegym

    probes: list[str] = []
    real_probe = swegym.probe_environment

    def counted(sandbox, workdir, files=(), needs_pytest=True):  # type: ignore[no-untyped-def]
        probes.append(workdir)
        return real_probe(sandbox, workdir, files, needs_pytest)

    monkeypatch.setattr(swegym, "probe_environment", counted)
    rewards = [episode(env, [apply_gold()])[0], episode(env, [])[0], episode(env, [apply_gold()])[0]]
    assert rewards == [1.0, 0.0, 1.0] and len(probes) == 1
    other = env.unwrapped.tasks.get("gymswe__inikit-2")
    assert env.unwrapped.grade_diff(other, other.patch).resolved and len(probes) == 2


def test_fraction_reward() -> None:
    require_bwrap()
    environment = gymnasium.make("SWEGym-v0", reward="fraction")
    reward, _info = episode(environment, [])
    total = len(TASK.fail_to_pass) + len(TASK.pass_to_pass)
    assert reward == pytest.approx(len(TASK.pass_to_pass) / total)


def test_integrity_sealed_grades_only_tasks_whose_checks_are_sealed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A task whose grade would rest on decoys alone (here: sealing turned off, as for a task whose checks
    all compare with values the test computes) is not graded under integrity="sealed": an error, which
    trainers leave out, not a reward that a forged report could earn."""
    from gym_swe.grading import seals

    require_bwrap()
    environment = gymnasium.make("SWEGym-v0", integrity="sealed")
    sealed = TASKS.get("gymswe__inikit-1")  # its hidden tests expect a value written nowhere the agent reads
    try:
        reward, info = episode(environment, [apply_gold(sealed)], sealed)
        assert reward == 1.0 and info["grade"]["integrity"] == "sealed" and "error" not in info
        monkeypatch.setattr(seals, "SEAL_CHECKS", False)
        reward, info = episode(environment, [apply_gold(sealed)], sealed)
    finally:
        environment.close()
    assert reward == 0.0 and info["grade"]["error"].startswith("not graded: integrity='sealed'"), info[
        "grade"
    ]


def test_a_committed_fix_counts_and_history_games_do_not_matter(env) -> None:
    """The diff is taken against base_commit from the files: commits, resets and moved branches change
    nothing about what is graded."""
    actions = [apply_gold(), bash("git commit -qam fix && git checkout -q -b other && git branch -D main")]
    assert episode(env, actions)[0] == 1.0


# The reward hacks (edited tests, conftest, pytest config, start-up hooks, patched pytest...) are in
# tests/redteam/test_reward_hacks.py, on both envs and both backends.


def test_protected_changes_are_dropped_but_the_fix_still_counts() -> None:
    require_bwrap()
    environment = gymnasium.make("SWEGym-v0")
    reward, info = episode(environment, [apply_gold(), write("conftest.py", "x = 1\n"),
                                         bash("echo '# note' >> tests/test_version.py")])  # fmt: skip
    assert reward == 1.0
    assert (
        "dropped conftest.py" in info["grade"]["log"]
        and "dropped tests/test_version.py" in info["grade"]["log"]
    )


# -- commands -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["local", "docker"])
def test_validate_every_bundled_task(backend: str, tmp_path) -> None:
    require_docker() if backend == "docker" else require_bwrap()
    report = tmp_path / "report.json"
    result = subprocess.run(
        [sys.executable, "-m", "gym_swe.cli", "validate", "--env", "SWEGym-v0", "--sandbox", backend,
         "--json", str(report)],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    rows = json.loads(report.read_text())
    assert len(rows) == len(TASKS) and all(row["ok"] for row in rows)
    assert {row["task_id"]: row["integrity"] for row in rows} == INTEGRITY
    assert f"{len(TASKS)}/{len(TASKS)} tasks valid" in result.stdout


def test_official_images_lose_the_history_after_the_base_commit(tmp_path) -> None:
    """SWE-bench-style images clone the whole repository: later commits (here, one holding the gold fix, on a
    branch, a tag and a remote) must be gone from the agent's workspace."""
    require_docker()
    import io
    import tarfile

    from gym_swe.sandbox.docker import BASE_IMAGE, docker_client
    from gym_swe.tasks.swe import bundled_data_dir

    repo = tmp_path / "testbed"
    run = lambda *a: subprocess.run(a, cwd=repo, check=True, capture_output=True, text=True).stdout  # noqa: E731
    subprocess.run(
        ["git", "clone", "-q", str(bundled_data_dir() / "semverkit.bundle"), str(repo)], check=True
    )
    run("git", "checkout", "-q", "-B", "fix", TASK.base_commit)
    (repo / "fix.diff").write_text(TASK.patch)
    run("git", "apply", "fix.diff")
    (repo / "fix.diff").unlink()
    run("git", "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qam", "the fix")
    future = run("git", "rev-parse", "HEAD").strip()
    run("git", "tag", "v9", future)
    run("git", "update-ref", "refs/remotes/origin/fix", future)
    run("git", "checkout", "-q", "-B", "main", TASK.base_commit)
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as archive:
        dockerfile = f"FROM {BASE_IMAGE}\nCOPY testbed /testbed\n".encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        archive.addfile(info, io.BytesIO(dockerfile))
        archive.add(repo, arcname="testbed")
    context.seek(0)
    leaky = "gym-swe-test-leaky:semverkit-1"
    docker_client().images.build(fileobj=context, custom_context=True, tag=leaky, rm=True)

    environment = gymnasium.make("SWEGym-v0", sandbox="docker", image=leaky)
    environment.reset(options={"task_id": TASK.instance_id})
    box = environment.unwrapped.sandbox
    assert box.exec("git rev-parse HEAD").stdout.strip() == TASK.base_commit
    assert box.exec(f"git cat-file -e {future}").exit_code != 0
    assert (
        box.exec("git rev-list --all").stdout.split()
        == box.exec(f"git rev-list {TASK.base_commit}").stdout.split()
    )
    assert box.exec("git tag; git remote; git stash list").stdout == ""
    reward, _ = episode(environment, [apply_gold()])
    assert reward == 1.0
    environment.close()
