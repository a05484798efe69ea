import json
import os
import re
from pathlib import Path

import pyarrow.parquet as pq

ROOT = os.environ.get("DJANGO_SDIST_ROOT", "/work/runs/django")
chosen = [
    line.split()
    for line in Path(f"{ROOT}/chosen.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
]
cand = json.loads(Path(f"{ROOT}/candidates.json").read_text())
orig = {}
for s in ["Lite", "Verified"]:
    for r in pq.read_table(f"/work/shared/data/swe-bench/SWE-bench_{s}-test.parquet").to_pylist():
        orig[(s, r["instance_id"])] = r
new = {}
for s in ["lite", "verified"]:
    for line in Path(f"{ROOT}/{s}.jsonl").read_text().splitlines():
        r = json.loads(line)
        new[r["instance_id"]] = r
prep = ""
for s in ["lite", "verified", "lite2"]:
    prep += Path(f"{ROOT}/prep-{s}.log").read_text()


def load(path):
    if not os.path.exists(path):
        return None
    return json.loads(Path(path).read_text())[0]


def prot(row):
    if row is None:
        return ""
    return {"sealed": "yes (sealed)", "decoys": f"yes (decoys {row['chance']:.1%})"}.get(
        row["integrity"], f"no ({row['chance']:.0%})"
    )


def cause(row):
    if row is None or row["ok"]:
        return ""
    p = row["problem"] or row.get("error") or ""
    p = p.split(" What to do:")[0]
    m = re.search(r": (\d+) test\(s\) did not pass with it: ", p)
    if m:  # the list of failing tests cut to its first
        first = p[m.end() :].split("), ")[0].rstrip(".").rstrip(")") + ")"
        p = (
            p[: m.start()]
            + f": {m.group(1)} test(s) did not pass with it: {first}"
            + (", ..." if int(m.group(1)) > 1 else "")
        )
    return p if len(p) < 500 else p[:499] + "…"


notes = json.loads(Path(f"{ROOT}/notes.json").read_text()) if os.path.exists(f"{ROOT}/notes.json") else {}
HEADER = (
    "instance", "set", "version", "rebased onto (original base)", "prepared", "validated local",
    "validated docker", "fix", "no fix", "protected", "cause when not / note",
)  # fmt: skip
print("| " + " | ".join(HEADER) + " |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for s, iid in chosen:
    short = iid.split("-")[-1]
    r0 = orig[(s, iid)]
    r = new[iid]
    m = re.search(rf"\] {iid}: (ready|FAILED)[^\n]*", prep)
    prepared = "yes" if m and m.group(1) == "ready" else ("FAILED" if m else "?")
    v = load(f"{ROOT}/out/v-{short}.json")
    d = load(f"{ROOT}/out/dn-{short}.json")
    vl = "" if v is None else ("ok" if v["ok"] else "FAIL")
    vd = "-" if d is None else ("ok" if d["ok"] else "FAIL")
    fx = "" if v is None else v["fix_passed"]
    nf = "" if v is None else v["no_fix_passed"]
    if d is not None:
        fx += f" (docker {d['fix_passed']})"
        nf += f" (docker {d['no_fix_passed']})"
    causes = [(where, text) for where, text in (("local", cause(v)), ("docker", cause(d))) if text]
    if len(causes) == 2 and causes[0][1] == causes[1][1]:
        causes = [("local and docker", causes[0][1])]
    c = "; ".join(f"{where}: {text}" for where, text in causes)
    if notes.get(iid):
        c = (c + "; " if c else "") + notes[iid]
    onto = f"{cand[iid]['release']} `{r['base_commit'][:10]}` ({r0['base_commit'][:10]})"
    protected = prot(v) + (" / docker " + prot(d) if d else "")
    cells = (iid, s, r0["version"], onto, prepared, vl, vd, fx, nf, protected, c)
    print("| " + " | ".join(str(cell) for cell in cells) + " |")
