"""The table of bench/real_instances_docker.md, from build_validate.sh's outputs:
``python table.py OUT ID...`` (OUT holds b-ID.log, dv-ID.json and times.txt); ``LOCAL_JSON`` names
validate's JSON reports of the same instances on local (space-separated), for the "local" column."""

import json
import os
import re
import sys
from pathlib import Path

out, ids = Path(sys.argv[1]), sys.argv[2:]
times = (out / "times.txt").read_text()
local = {}
for path in os.environ.get("LOCAL_JSON", "").split():
    rows = json.loads(Path(path).read_text())
    for row in rows if isinstance(rows, list) else [rows]:
        valid = "" if row["ok"] else " (not valid)"
        local[row["task_id"]] = f"{row['fix_passed']}, {row['no_fix_passed']}{valid}"
for instance in ids:
    repo = instance.rsplit("-", 1)[0].replace("__", "/")
    logs = [out / f"b-{instance}.log", out / "first" / f"b-{instance}.log"]  # first: a run made again later
    text = "".join(log.read_text() for log in logs if log.exists())
    built = re.search(r"\(Python /root/\.pyenv/versions/([\d.]+)\)", text)
    python = built.group(1) if built else "3.11.2 (base image's)"
    # the last run of each step (a task validated again after a fix has two)
    steps = ("build", "validate")
    seconds = [re.findall(rf"^{instance} {step} rc=\d+ (\d+)s", times, re.M) for step in steps]
    took = "/".join(found[-1] if found else "-" for found in seconds)
    report = out / f"dv-{instance}.json"
    if not report.exists():
        there = local.get(instance, "-")
        print(f"| {instance} | {repo} | {python} | build failed | - | - | - | {there} | {took} | see below |")
        continue
    row = json.loads(report.read_text())[0]
    kind, chance = row.get("integrity") or "", row.get("chance")
    protected = (
        kind
        if kind == "sealed"
        else ("decoys" if kind == "decoys" else "no") + (f" ({chance:.0%})" if chance is not None else "")
    )
    cause = "" if row["ok"] else (row.get("problem") or row.get("error") or "").splitlines()[0][:400]
    print(
        f"| {instance} | {repo} | {python} | {'yes' if row['ok'] else 'NO'} | "
        f"{row['fix_passed']} | {row['no_fix_passed']} | {protected} | {local.get(instance, '-')} | {took} | "
        f"{cause} |"
    )
