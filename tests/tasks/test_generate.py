"""`gym-swe tasks generate` end to end on a bundled repository's source (semverkit, cloned from its git
bundle): real git, real bubblewrap, real pytest, the real grader. Generated tasks load and play in SWEGym-v0
as they are written (gold fix 1.0, no change 0.0), hide the fix from the workspace (no later history, no
object of the fixed code), keep the hidden tests out of the statement, and a run resumes and survives Ctrl-C."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium
import pytest

import gym_swe  # noqa: F401
from gym_swe.cli import main
from gym_swe.generate.statements import fix_lines
from gym_swe.tasks.repos import cache_root
from gym_swe.tasks.swe import bundled_data_dir, load_swe_tasks
from tests.conftest import require_bwrap
from tests.envs.test_swegym import SUBMIT, apply_gold, bash

pytestmark = pytest.mark.usefixtures("bwrap")


@pytest.fixture(scope="module")
def bwrap() -> None:
    require_bwrap()


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working copy of the bundled semverkit, as a user's repository would be."""
    path = tmp_path_factory.mktemp("src") / "semverkit"
    bundle = bundled_data_dir() / "semverkit.bundle"
    subprocess.run(["git", "clone", "--quiet", "-b", "main", str(bundle), str(path)], check=True)
    return path


def generate(source: Path, out: Path, *flags: str) -> int:
    return main(["tasks", "generate", "--repo", str(source), "--out", str(out), *flags])


def generate_command(source: Path, out: Path, *flags: str) -> list[str]:
    """`generate` as a command line, for a run in a process of its own."""
    return [sys.executable, "-m", "gym_swe.cli", "tasks", "generate", "--repo", str(source), "--out", str(out),
            *flags]  # fmt: skip


@pytest.fixture(scope="module")
def generated(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "tasks.jsonl"
    assert generate(source, out, "--max-tasks", "4", "--workers", "2") == 0
    return out


def git(mirror: str, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", mirror, *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_records_are_validated_with_provenance_and_difficulty(generated: Path) -> None:
    records = rows(generated)
    assert len(records) >= 4
    methods = {record["provenance"]["method"] for record in records}
    assert methods == {"history", "mutate"}, methods  # both methods, taken in turn
    for record in records:
        assert record["validation"]["integrity"] in ("sealed", "decoys")
        assert record["difficulty"]["fail_to_pass"] == len(record["FAIL_TO_PASS"]) >= 1
        assert record["difficulty"]["fix_lines"] >= 1
        assert not Path(record["repo_mirror"]).is_absolute()  # moves with the task file
    tasks = load_swe_tasks(str(generated))
    assert len(tasks) == len(records) and not tasks.refused
    rejected = rows(generated.with_name("tasks.rejected.jsonl"))
    assert all(row["reason"] for row in rejected)


def test_a_task_not_kept_leaves_no_checkout_calibration_or_ref_behind(generated: Path) -> None:
    """Validation makes a checkout and calibrations in the gym_swe cache, and a mutation's commit a ref in
    the mirror: a run leaves those of the tasks it kept and none of the others (hundreds on a real repository)."""
    kept = rows(generated)
    validated_not_kept = [
        row["task_id"]
        for row in rows(generated.with_name("tasks.rejected.jsonl"))
        if row["reason"].startswith("valid but")
    ]
    assert validated_not_kept  # the run validated some tasks it did not keep (chance 1.0)
    checkouts = [path.name for path in (cache_root() / "checkouts").iterdir()]
    seals = [path.name for path in (cache_root() / "seals").iterdir()]
    mirror = str(generated.parent / kept[0]["repo_mirror"])
    refs = git(mirror, "for-each-ref", "--format=%(refname:lstrip=-1)", "refs/gym-swe/tasks/")
    for task_id in validated_not_kept:
        assert not [name for name in checkouts if name.startswith(task_id + "-")], task_id
        assert not [name for name in seals if name.startswith(task_id + "-")], task_id
        assert task_id not in refs.split()
    for row in kept:  # the control: what is kept keeps them
        assert any(name.startswith(row["instance_id"] + "-") for name in checkouts), row["instance_id"]
        assert any(name.startswith(row["instance_id"] + "-") for name in seals), row["instance_id"]
    assert {row["instance_id"] for row in kept if row["provenance"]["method"] == "mutate"} <= set(
        refs.split()
    )


def test_statements_name_no_hidden_test_and_hold_no_line_of_the_fix(generated: Path) -> None:
    for record in rows(generated):
        statement = record["problem_statement"]
        for test_id in record["FAIL_TO_PASS"]:
            path, _, name = test_id.partition("::")
            assert path not in statement and path.rsplit("/", 1)[-1] not in statement
            assert name.split("::")[-1].split("[")[0] not in statement
        for line in fix_lines(record["patch"]):
            assert line not in statement, (record["instance_id"], line)


def episode(env, task, actions: list[str]) -> tuple[float, list[str]]:  # type: ignore[no-untyped-def]
    env.reset(options={"task_id": task.instance_id})
    seen = []
    for action in [*actions, SUBMIT]:
        observation, reward, terminated, truncated, info = env.step(action)
        seen.append(str(observation))
        if terminated or truncated:
            assert info.get("error") is None, info.get("error")
            return float(reward), seen
    raise AssertionError("the episode did not end")


@pytest.mark.parametrize("method", ["history", "mutate"])
def test_swegym_plays_a_generated_task_gold_one_and_no_change_zero(generated: Path, method: str) -> None:
    record = next(row for row in rows(generated) if row["provenance"]["method"] == method)
    env = gymnasium.make("SWEGym-v0", tasks=str(generated))
    try:
        task = env.unwrapped.tasks.get(record["instance_id"])
        assert episode(env, task, [apply_gold(task)])[0] == 1.0
        assert episode(env, task, [])[0] == 0.0
        # the workspace: the history up to the base commit only, and no object holding the fixed code
        mirror = str(generated.parent / record["repo_mirror"])
        fixed = record["provenance"].get("commit") or record["provenance"]["source_commit"]
        path = (
            record["provenance"].get("file") or next(p for p in task.patch.split() if p.startswith("a/"))[2:]
        )
        blob = git(mirror, "rev-parse", f"{fixed}:{path}")  # the fixed file, as the fix leaves it
        _, seen = episode(
            env,
            task,
            [
                bash(
                    f"git rev-list --all | wc -l; for o in {fixed} {blob}; do "
                    "git cat-file -e $o 2>/dev/null && echo PRESENT || echo ABSENT; done"
                )
            ],
        )
        assert seen[0].split() == [git(mirror, "rev-list", "--count", task.base_commit), "ABSENT", "ABSENT"]
        if method == "mutate":
            assert git(mirror, "rev-list", "--count", task.base_commit) == "1"  # a commit of its own

            # an agent that searches every file it can see for the fixed file finds none: not in the
            # workspace, the venv, a cache or a temporary directory
            def digest(commit: str) -> str:
                return hashlib.sha256(git(mirror, "show", f"{commit}:{path}").encode() + b"\n").hexdigest()

            name = path.rsplit("/", 1)[-1]
            search = (f"find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o -type f -name {name} "
                      "-print0 2>/dev/null | xargs -0 sha256sum; echo searched")  # fmt: skip
            _, seen = episode(env, task, [bash(search)])
            assert "searched" in seen[0] and "/testbed/" + path in seen[0], seen[0]  # the search ran
            assert digest(task.base_commit) in seen[0], seen[0]  # the search sees the workspace's file
            assert digest(fixed) not in seen[0], seen[0]
    finally:
        env.close()


def test_a_rerun_skips_what_is_done_and_a_cut_line_is_made_again(
    generated: Path, source: Path, tmp_path: Path
) -> None:
    out = tmp_path / "tasks.jsonl"
    for name in ("tasks.jsonl", "tasks.rejected.jsonl"):
        shutil.copy(generated.with_name(name), tmp_path / name)
    shutil.copytree(generated.with_name("tasks.repos"), tmp_path / "tasks.repos")
    before = out.read_bytes()
    count = len(rows(generated))
    assert generate(source, out, "--max-tasks", str(count)) == 0
    assert out.read_bytes() == before  # nothing redone, nothing added
    lines = before.decode().splitlines(keepends=True)
    cut = lines[-1][: len(lines[-1]) // 2]  # a crash in the middle of writing the last task
    out.write_text("".join(lines[:-1]) + cut)
    # one worker: the first candidate not done, the one cut short, is the one made again (and the one the
    # worker had started by then is finished too)
    assert generate(source, out, "--max-tasks", str(count), "--workers", "1") == 0
    ids = [r["instance_id"] for r in rows(out)]
    assert ids[: len(lines)] == [json.loads(line)["instance_id"] for line in lines] and len(ids) <= count + 1


def test_ctrl_c_loses_at_most_what_is_in_flight(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "tasks.jsonl"
    command = generate_command(source, out, "--method", "mutate")
    # SIGINT as a terminal gives it: a pytest-xdist worker ignores SIGINT, and a child inherits that (Python
    # then installs no KeyboardInterrupt handler), as a command started with & from a script does
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and not (out.exists() and out.read_text().count("\n") >= 1):
        time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 130
    done = rows(out)  # every line whole
    assert len(done) >= 1
    rejected = out.with_name("tasks.rejected.jsonl")
    before = len(done) + (len(rows(rejected)) if rejected.exists() else 0)
    assert generate(source, out, "--method", "mutate", "--max-tasks", str(len(done) + 1)) == 0
    after = rows(out)
    assert [r["instance_id"] for r in after[: len(done)]] == [r["instance_id"] for r in done]
    assert len(after) > len(done) and len({r["instance_id"] for r in after}) == len(after)
    assert len(after) + len(rows(rejected)) > before


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--workers", "0"], "--workers must be at least 1"),
        (["--model", "m"], "--model does nothing without --method rewrite"),
        (["--method", "rewrite"], "--method rewrite and --model-statements need --generator and --model"),
        (["--method", "mutate", "--max-commits", "3"], "--max-commits applies to --method history only"),
        (["--test-timeout", "0"], "--test-timeout must be a positive number"),
    ],
)
def test_bad_flags_fail_at_once_and_write_nothing(
    flags: list[str], message: str, tmp_path: Path, source: Path
) -> None:
    out = tmp_path / "tasks.jsonl"
    done = subprocess.run(generate_command(source, out, *flags), capture_output=True, text=True)
    assert done.returncode == 2
    assert message in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_path_that_is_no_repository_is_refused(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gym_swe.cli",
            "tasks",
            "generate",
            "--repo",
            str(tmp_path / "plain"),
            "--out",
            str(tmp_path / "t.jsonl"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)},
    )
    assert done.returncode == 2 and "is not a git repository" in done.stderr
    assert not (tmp_path / "t.jsonl").exists() and not (tmp_path / "t.repos").exists()


def test_the_readme_section_runs_as_written(tmp_path: Path) -> None:
    """The shell block, then the Python block, in a fresh directory, as a newcomer would paste them."""
    from tests.test_readme import run, snippet

    shell = snippet("Tasks from your own repository", "bash")
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"  # gym-swe and python of this environment
    done = subprocess.run(["bash", "-e", "-c", shell], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PATH": path}, timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    count = len(rows(tmp_path / "tasks.jsonl"))
    assert count >= 4
    assert run(snippet("Tasks from your own repository"), tmp_path).stdout.strip() == f"{count} tasks"


def test_the_trainer_runs_a_step_on_generated_tasks(generated: Path, tmp_path: Path) -> None:
    """trainers/grpo.py, as a user runs it, one step on the generated task file (a tiny random model: it fixes
    nothing, so the point is that the tasks load, play and are graded in training, each episode graded)."""
    pytest.importorskip("transformers")
    from gym_swe.rollout.tiny import make_tiny_bpe_model
    from gym_swe.rollout.trajectory import load_jsonl
    from tests.rollout.conftest import MODELS
    from tests.trainers.runs import metrics, train

    model = make_tiny_bpe_model(MODELS)
    train("--env", "SWEGym-v0", "--tasks", str(generated), "--model", str(model), "--steps", "1",
          "--tasks_per_step", "2", "--group_size", "2", "--max_turns", "2", "--max_new_tokens", "16",
          "--eval_every", "0", "--output_dir", str(tmp_path), "--run_name", "gen")  # fmt: skip
    assert [row["step"] for row in metrics(tmp_path / "gen")] == [0]
    episodes = load_jsonl(tmp_path / "gen" / "trajectories" / "step_0.jsonl")
    ids = {row["instance_id"] for row in rows(generated)}
    assert len(episodes) == 4 and all(t.task_id in ids and t.grade is not None for t in episodes)


def test_a_real_repository_mirror_where_one_is_here(tmp_path: Path) -> None:
    """GYM_SWE_GENERATE_MIRROR: a real repository's git mirror (more-itertools was used, as `git clone
    --mirror` makes it); skipped without one. Minutes: its whole suite runs for the baseline (twice) and for
    the one commit tried."""
    mirror = os.environ.get("GYM_SWE_GENERATE_MIRROR", "")
    if not mirror or not Path(mirror).is_dir():
        pytest.skip("no real repository mirror here (GYM_SWE_GENERATE_MIRROR)")
    out = tmp_path / "tasks.jsonl"
    argv = [
        "tasks",
        "generate",
        "--repo",
        mirror,
        "--out",
        str(out),
        "--method",
        "history",
        "--max-candidates",
        "1",
    ]
    assert main(argv) == 0
    made = rows(out) if out.exists() else []
    rejected = rows(tmp_path / "tasks.rejected.jsonl") if (tmp_path / "tasks.rejected.jsonl").exists() else []
    assert len(made) + len(rejected) == 1 and all(row["reason"] for row in rejected)
    if made:
        assert len(load_swe_tasks(str(out))) == len(made)
