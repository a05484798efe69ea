"""Rows of bench/real_instances_sympy.md's tables: python table.py v|dv "ID ...", in the scratch directory of
run.sh/docker.sh, from out/prep-ID.log and out/v-ID.json (docker: out/dv-ID.json); sympy_rows.json lists
the sympy records of both parquet files (id, set, version), written when the instances were picked."""

import json
import re
import sys
from pathlib import Path

records = json.loads(Path("sympy_rows.json").read_text())
rows = {r["id"]: r for r in records}
sets = {}
for r in records:
    sets.setdefault(r["id"], []).append(r["set"])
prefix = sys.argv[1] if len(sys.argv) > 1 else "v"
for ids in sys.argv[2:]:
    for tid in ids.split():
        report = Path(f"out/{prefix}-{tid}.json")
        if not report.exists():
            continue
        (row,) = json.loads(report.read_text())
        prep = Path(f"out/prep-{tid}.log").read_text() if prefix == "v" else ""
        secs = re.search(r"prepare ([0-9.]+) s", prep)
        prepared = (
            ("yes" + (f" ({float(secs.group(1)):.0f} s)" if secs else ""))
            if ("ready" in prep or prefix != "v")
            else "no"
        )
        kind, chance = row.get("integrity") or "", row.get("chance")
        protected = (
            "sealed"
            if kind == "sealed"
            else (
                f"{'decoys' if kind == 'decoys' else 'no'} ({chance:.0%})"
                if chance is not None
                else (kind or "-")
            )
        )
        cause = (
            ""
            if row["ok"]
            else re.sub(
                r": (\d+) test\(s\) did not pass with it: .*",
                r": \1 test(s) fail with the fix",
                row["problem"].split("What to do:")[0].strip().splitlines()[0],
            )
        )
        v = rows[tid]["version"]
        print(
            f"| {tid} | {'+'.join(sorted(set(sets[tid])))} | {v} | {prepared} | "
            f"{'ok' if row['ok'] else 'FAIL'} | "
            f"{row['fix_passed']} | {row['no_fix_passed']} | {protected} | {row['seconds']:.0f} | {cause} |"
        )
