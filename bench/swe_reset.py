"""SWEGym-v0 reset and grading against their naive baselines, measured in one run (local sandbox).

    python bench/swe_reset.py [--repeats 10]

- reset: ``env.reset()`` on a bundled task (a copy-on-write workspace over the prepared checkout, the
  prepared venv bound read-only)  vs  a naive ``cp -r`` of the prepared checkout;
- growth: the same for a repository 50x larger (the bundled one with 49 more copies of its package, made
  here as a real git repository with a local mirror), with ``source_mode="overlay"`` and ``"copy"``;
- grading: grading the gold patch (a fresh sandbox, the filtered diff and the test patch applied, pytest
  with decoys, the JUnit report read back)  vs  a fresh sandbox running bare ``python -m pytest`` on the
  same test files.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import gymnasium
from timing import median_ms, timed  # bench/timing.py

import gym_swe
from gym_swe.grading.test_ids import files_to_run
from gym_swe.tasks.repos import checkout
from gym_swe.tasks.swe import load_swe_tasks

TASK_ID = "gymswe__semverkit-1"


def run(*args: str, cwd: Path) -> str:
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True).stdout


def large_task(work: Path, factor: int) -> Path:
    """A tasks.jsonl for a copy of the bundled task whose repository is ``factor`` times larger."""
    task = load_swe_tasks("bundled").get(TASK_ID)
    repo = work / "gymswe__semverkit-large"
    shutil.copytree(checkout(task), repo, symlinks=True)
    entries = [entry for entry in repo.iterdir() if entry.name != ".git"]
    for index in range(1, factor):  # the whole tree again, factor - 1 times, in subdirectories
        for entry in entries:
            target = repo / f"copy{index}" / entry.name
            if entry.is_dir():
                shutil.copytree(entry, target)
            else:
                target.parent.mkdir(exist_ok=True)
                shutil.copy2(entry, target)
    run("git", "add", "-A", cwd=repo)
    run("git", "-c", "user.name=bench", "-c", "user.email=bench@invalid", "commit", "-qm", "grow", cwd=repo)
    base = run("git", "rev-parse", "HEAD", cwd=repo).strip()
    record = json.loads(next(line for line in (Path(gym_swe.__file__).parent / "tasks/data/swe/tasks.jsonl")
                             .read_text().splitlines() if TASK_ID in line))  # fmt: skip
    record.update(instance_id="gymswe__semverkit-large-1", repo="gymswe/semverkit-large", base_commit=base,
                  environment_setup_commit=base)  # fmt: skip
    path = work / "tasks.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--factor", type=int, default=50)
    args = parser.parse_args()

    task = load_swe_tasks("bundled").get(TASK_ID)
    rows = []
    with tempfile.TemporaryDirectory(prefix="gym_swe-bench-") as scratch:
        work = Path(scratch)
        tasks_file = large_task(work, args.factor)
        large = load_swe_tasks(str(tasks_file))[0]
        for label, source, the_task, options in [
            ("small", "bundled", task, {}),
            (f"{args.factor}x", str(tasks_file), large, {"repo_source": str(work)}),
        ]:
            for mode in ("overlay", "copy"):
                env = gymnasium.make("SWEGym-v0", tasks=source, source_mode=mode, **options)
                reset_options = {"task_id": the_task.instance_id}
                env.reset(options=reset_options)  # the first one prepares the checkout and venv once
                reset = median_ms(timed(lambda env=env, o=reset_options: env.reset(options=o), args.repeats))
                env.close()
                pristine = checkout(the_task, env.unwrapped.repo_source)
                tree = [p for p in pristine.rglob("*") if p.is_file() and ".git" not in p.parts]
                size = f"{len(tree)} files, {sum(p.stat().st_size for p in tree) / 1e6:.1f} MB"

                def naive(pristine: Path = pristine) -> None:
                    target = work / "naive"
                    subprocess.run(["cp", "-r", str(pristine), str(target)], check=True)
                    shutil.rmtree(target)

                copy = median_ms(timed(naive, args.repeats))
                rows.append((f"reset {label} ({size}), {mode}", reset, "cp -r of the checkout", copy))

        env = gymnasium.make("SWEGym-v0").unwrapped
        grade = median_ms(timed(lambda: env.grade_diff(task, task.patch), max(3, args.repeats // 2)))
        tests = " ".join(files_to_run([*task.fail_to_pass, *task.pass_to_pass]))

        def bare_pytest() -> None:
            with env.new_sandbox(task) as box:
                box.exec(f"git apply - <<'EOF'\n{task.test_patch}\nEOF", timeout=60)
                box.exec(f"python -m pytest -q -p no:cacheprovider {tests}", timeout=600)

        bare = median_ms(timed(bare_pytest, max(3, args.repeats // 2)))
        rows.append(("grade the gold patch", grade, "fresh sandbox + bare pytest", bare))

    print(f"{'measure':<50} {'ms':>9}   {'baseline':<28} {'ms':>9}   ratio")
    for name, ours, base_name, base in rows:
        print(f"{name:<50} {ours:9.1f}   {base_name:<28} {base:9.1f}   {ours / base:5.2f}x")


if __name__ == "__main__":
    main()
