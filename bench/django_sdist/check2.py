import collections
import json
import os
import subprocess
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

REPOS = os.environ.get("DJANGO_SDIST_ROOT", "/work/runs/django") + "/repos"
rows = {}
for s in ["Lite", "Verified"]:
    for r in pq.read_table(f"/work/shared/data/swe-bench/SWE-bench_{s}-test.parquet").to_pylist():
        if r["repo"] == "django/django":
            rows.setdefault(r["instance_id"], (r, []))[1].append(s)


def check(repo, patch, *args):
    with tempfile.NamedTemporaryFile("w", suffix=".diff", delete=False) as f:
        f.write(patch)
    p = subprocess.run(["git", "-C", repo, "apply", "--check", *args, f.name], capture_output=True, text=True)
    os.unlink(f.name)
    return p.returncode == 0


out = {}
for iid, (r, sets) in sorted(rows.items()):
    v = r["version"]
    for rel in (v + "a1", v):
        repo = f"{REPOS}/{rel}"
        if not os.path.isdir(repo):
            continue
        # both reverse-apply together: reverse the combined diff
        if check(repo, r["test_patch"], "-R") and check(repo, r["patch"], "-R"):
            f2p = json.loads(r["FAIL_TO_PASS"])
            p2p = json.loads(r["PASS_TO_PASS"])
            doc = sum(1 for t in f2p + p2p if not t.endswith(")"))
            out[iid] = dict(sets=sets, version=v, release=rel, f2p=len(f2p), p2p=len(p2p), doc=doc)
            print(iid, "+".join(sets), v, rel, len(f2p), len(p2p), doc, flush=True)
            break
Path(os.environ.get("DJANGO_SDIST_ROOT", "/work/runs/django") + "/candidates.json").write_text(
    json.dumps(out, indent=1)
)
c = collections.Counter((o["version"], o["release"]) for o in out.values())
print(sorted(c.items()))
