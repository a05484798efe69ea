"""Runs the red-team suite and prints its scoreboard: attacks tried / blocked, faults injected / survived,
bad inputs handled, soak episodes / leaks.

    python bench/redteam_report.py [PYTEST TARGETS]   (default: tests/redteam, the 500-episode soak too)
    python bench/redteam_report.py --forger [N [TASK...]]  issue 32's decoy-aware forger: N grades (default
                                                      100) per task and backend, local and docker
    python bench/redteam_report.py --overhead [N]     the gold patch's grading time against a bare pytest
                                                      run of the same test files (median of N, default 5)

Each attack, fault and bad input is one test of tests/redteam; a passing test is a blocked attack, a
survived fault, a handled input. The soak test writes its own counts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GROUPS = {
    "test_reward_hacks.py::test_attack_earns_nothing": "reward hacks (attacks)",
    "test_reward_hacks.py::test_patching_unittest_alone_earns_nothing": "reward hacks (attacks)",
    "test_trust_boundaries.py": "trust boundaries: executor, grading inputs, test runner (attacks)",
    "test_answer_keys.py": "answer keys: code that reads the test calling it, 7 mechanisms (attacks)",
    "test_prepared_envs.py": "prepared SWE environments (attacks)",
    "test_containment.py": "sandbox containment (attacks)",
    "test_faults.py": "faults",
    "test_bad_input.py": "bad input",
    "test_fuzz_actions.py": "fuzzed actions (hypothesis) and the reported crashes",
    "test_protocol.py": "forged executor frames (faults)",
    "test_issue21_attacks.py": "crash, launder, starve: names, pids, nesting, proxy floods (attacks)",
    "test_issue20_attacks.py": "sealed checks: public answers, stuffed values, raises keys, false rejects",
    "test_forged_reports.py": "a report forged past every decoy, on every bundled task (attacks)",
    "test_decoy_forger.py": "issue 32's decoy-aware forger, sampled (attacks; xfails are findings)",
    "test_load.py": "load: 48 episodes at once, a third hostile",
}


def forger_board(grades: int, backends: list[str], names: list[str] | None = None) -> int:
    """Issue 32's scoreboard (tests/redteam/decoy_forger.py): per task and backend, under the default
    integrity, the gold patch's paid reward and grade, no change's, and the forger's wins in ``grades`` grades
    (the strategy it forges with, as graded; every strategy as its picks against the planted originals)."""
    import gymnasium

    import gym_swe  # noqa: F401
    from gym_swe.tasks.swe import load_swe_tasks
    from tests.redteam import decoy_forger

    print(f"| task | backend | gold (paid) | gold grade | no change | forger wins / {grades} | "
          + " | ".join(f"{s} / {grades}" for s in decoy_forger.STRATEGIES) + " |")  # fmt: skip
    print("|---|---|---|---|---|---|" + "---|" * len(decoy_forger.STRATEGIES))
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        tasks_file = decoy_forger.write_tasks(scratch)
        tasks = load_swe_tasks(str(tasks_file))
        for backend in backends:
            env = gymnasium.make("SWEGym-v0", sandbox=backend, tasks=str(tasks_file))
            try:
                for name in names or list(decoy_forger.TASKS):
                    task = tasks.get(decoy_forger.task_id(name))
                    gold = env.unwrapped.grade_diff(task, task.patch)
                    unfixed = env.unwrapped.grade_diff(task, "")
                    diff = decoy_forger.forged_diff(name, scratch)
                    wins: Counter[str] = Counter()
                    for _ in range(grades):
                        grade = env.unwrapped.grade_diff(task, diff)
                        wins["forger"] += int(decoy_forger.paid(grade))
                        scored = decoy_forger.score(grade.log) or {}
                        for strategy, won in scored.items():
                            wins[strategy] += int(
                                won and grade.integrity in ("sealed", "decoys")
                            )  # paid ones
                    print(
                        f"| {name} | {backend} | {decoy_forger.paid(gold):.1f} | {gold.integrity} "
                        f"({gold.chance:.4f}) | {decoy_forger.paid(unfixed):.1f} | {wins['forger']} | "
                        + " | ".join(str(wins[s]) for s in decoy_forger.STRATEGIES)
                        + " |",
                        flush=True,
                    )
            finally:
                env.close()
    return 0


def overhead(repeats: int, backends: list[str]) -> int:
    """The gold patch's grading time (``grade_diff``: a fresh sandbox, the diff applied, seals and decoys
    planted, the run, the stream read) against a bare pytest run of the same test files in a fresh sandbox
    of the same backend with the same patched files: the median of ``repeats`` each, calibration done."""
    import shlex
    import statistics
    import time

    import gymnasium

    import gym_swe  # noqa: F401
    from gym_swe.grading.test_ids import files_to_run
    from gym_swe.tasks.swe import load_swe_tasks
    from tests.redteam import decoy_forger

    print("| task | backend | grading (s) | bare pytest (s) | ratio |")
    print("|---|---|---|---|---|")
    ratios: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        tasks_file = decoy_forger.write_tasks(scratch)
        for backend in backends:
            env = gymnasium.make("SWEGym-v0", sandbox=backend, tasks=str(tasks_file))
            try:
                for task in [*load_swe_tasks("bundled"), *load_swe_tasks(str(tasks_file))]:
                    repo = task.instance_id.split("__")[1].rsplit("-", 1)[0]
                    if task.instance_id.startswith("gymswe__redteam-"):
                        repo = decoy_forger.PACKAGES[
                            decoy_forger._spec({"instance_id": task.instance_id})["base"]
                        ]
                    files = decoy_forger.patched_files(
                        repo, task.base_commit, [task.patch, task.test_patch], scratch
                    )
                    command = "cd /testbed && python -m pytest -p no:cacheprovider -q " + " ".join(
                        map(shlex.quote, files_to_run([*task.fail_to_pass, *task.pass_to_pass]))
                    )
                    env.unwrapped.grade_diff(task, task.patch)  # calibration, once per task
                    graded, bare = [], []
                    for _ in range(repeats):
                        start = time.monotonic()
                        env.unwrapped.grade_diff(task, task.patch)
                        graded.append(time.monotonic() - start)
                        start = time.monotonic()
                        with env.unwrapped.new_sandbox(task) as sandbox:
                            for path, text in files.items():
                                sandbox.write_file(f"/testbed/{path}", text.encode())
                            sandbox.exec(command, timeout=600)
                        bare.append(time.monotonic() - start)
                    grading, plain = statistics.median(graded), statistics.median(bare)
                    ratios.setdefault(backend, []).append(grading / plain)
                    ratio = grading / plain
                    print(
                        f"| {task.instance_id} | {backend} | {grading:.2f} | {plain:.2f} | {ratio:.2f}x |",
                        flush=True,
                    )
            finally:
                env.close()
    for backend, found in ratios.items():
        print(f"| all ({len(found)} tasks) | {backend} | | | median {statistics.median(found):.2f}x, "
              f"max {max(found):.2f}x |")  # fmt: skip
    return 0


def _backends() -> list[str]:
    import shutil

    return ["local", "docker"] if shutil.which("docker") else ["local"]


def main() -> int:
    sys.path.insert(0, str(ROOT))  # tests.redteam, for the forger's modes
    if sys.argv[1:2] == ["--forger"]:
        return forger_board(int(sys.argv[2]) if len(sys.argv) > 2 else 100, _backends(), sys.argv[3:])
    if sys.argv[1:2] == ["--overhead"]:
        return overhead(int(sys.argv[2]) if len(sys.argv) > 2 else 5, _backends())
    with tempfile.TemporaryDirectory() as scratch:
        report, soak = Path(scratch) / "report.xml", Path(scratch) / "soak.json"
        # The whole soak and load test (make test plays a quarter of each), unless asked otherwise.
        env = {"GYM_SWE_TEST_SCALE": "1", **os.environ, "GYM_SWE_SOAK_REPORT": str(soak)}
        targets = sys.argv[1:] or ["tests/redteam", "tests/sandbox/test_protocol.py"]
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={report}",
            *targets,
        ]
        done = subprocess.run(command, cwd=ROOT, env=env)
        tried: Counter[str] = Counter()
        held: Counter[str] = Counter()
        for case in ElementTree.parse(report).iter("testcase"):
            module = case.get("classname", "").split(".")[-1] + ".py"
            test = case.get("name", "").split("[")[0]
            group = GROUPS.get(f"{module}::{test}", GROUPS.get(module))
            if group is None:
                continue
            tried[group] += 1
            if case.find("failure") is None and case.find("error") is None and case.find("skipped") is None:
                held[group] += 1
        soak_counts = json.loads(soak.read_text()) if soak.exists() else None

    print("| what | tried | held |")
    print("|---|---|---|")
    for group in dict.fromkeys(GROUPS.values()):
        print(f"| {group} | {tried[group]} | {held[group]} |")
    if soak_counts:
        leaks = ", ".join(f"{k}: {v}" for k, v in soak_counts["leaks"].items()) or "none"
        print(f"| soak episodes (leaks) | {soak_counts['episodes']} | leaks: {leaks} |")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
