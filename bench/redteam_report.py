"""Runs the red-team suite and prints its scoreboard: attacks tried / blocked, faults injected / survived,
bad inputs handled, soak episodes / leaks.

    python bench/redteam_report.py [PYTEST TARGETS]   (default: tests/redteam, the 500-episode soak too)

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
    "test_load.py": "load: 48 episodes at once, a third hostile",
}


def main() -> int:
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
