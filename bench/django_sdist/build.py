"""One git repository holding each chosen release's sdist commit and, per instance, a commit on top of it with
the instance's test_patch and patch reversed (the release less the fix and its tests); records copied with
base_commit set to that commit; then a `git clone --mirror` of it as mirrors/django__django.git."""

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

ROOT = os.environ.get("DJANGO_SDIST_ROOT", "/work/runs/django")
CHOSEN = [
    line.split()
    for line in Path(f"{ROOT}/chosen.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
]
cand = json.loads(Path(f"{ROOT}/candidates.json").read_text())
rows = {}
for s in ["Lite", "Verified"]:
    for r in pq.read_table(f"/work/shared/data/swe-bench/SWE-bench_{s}-test.parquet").to_pylist():
        rows.setdefault((s, r["instance_id"]), r)
work = f"{ROOT}/work/django"


def git(*args, **kw):
    return subprocess.run(
        ["git", "-C", work, *args], check=True, capture_output=True, text=True, **kw
    ).stdout.strip()


GIT_ID = ["-c", "user.name=gym-swe", "-c", "user.email=gym-swe@localhost"]
if not os.path.isdir(work):
    os.makedirs(work)
    git("init", "-q")
releases = {}
for iid_set in CHOSEN:
    s, iid = iid_set
    rel = cand[iid]["release"]
    if rel not in releases:
        branch = f"release/{rel}"
        if subprocess.run(
            ["git", "-C", work, "rev-parse", "-q", "--verify", branch], capture_output=True
        ).returncode:
            git("fetch", "-q", f"{ROOT}/repos/{rel}", f"HEAD:{branch}")
        releases[rel] = git("rev-parse", branch)
out = {"Lite": [], "Verified": []}
for s, iid in CHOSEN:
    r = dict(rows[(s, iid)])
    rel = cand[iid]["release"]
    branch = f"swe/{iid}"
    if subprocess.run(
        ["git", "-C", work, "rev-parse", "-q", "--verify", branch], capture_output=True
    ).returncode:
        git("checkout", "-q", "-f", "-B", branch, releases[rel])
        for name in ("test_patch", "patch"):
            with tempfile.NamedTemporaryFile("w", suffix=".diff", delete=False) as f:
                f.write(r[name])
            git("apply", "-R", "--index", f.name)
            os.unlink(f.name)
        env = dict(
            os.environ, GIT_AUTHOR_DATE="2000-01-01T00:00:00", GIT_COMMITTER_DATE="2000-01-01T00:00:00"
        )
        subprocess.run(
            [
                "git",
                "-C",
                work,
                *GIT_ID,
                "commit",
                "-qm",
                f"{iid}: Django {rel} (PyPI sdist) without the instance's fix and test patch (both reversed)",
            ],
            check=True,
            env=env,
        )
    base = git("rev-parse", branch)
    git("checkout", "-q", "-f", branch)
    # both patches apply to it
    for name in ("test_patch", "patch"):
        with tempfile.NamedTemporaryFile("w", suffix=".diff", delete=False) as f:
            f.write(r[name])
        git("apply", "--check", f.name)
        os.unlink(f.name)
    r["base_commit"] = base
    out[s].append(r)
    print(s, iid, rel, base)
git("checkout", "-q", "-f", "--detach")
for s, recs in out.items():
    with open(f"{ROOT}/{s.lower()}.jsonl", "w") as f:
        for r in recs:
            f.write(json.dumps(r, default=str) + "\n")
mirror = f"{ROOT}/mirrors/django__django.git"
if os.path.isdir(mirror):  # tasks in flight read it: new branches are fetched into the mirror
    subprocess.run(
        ["git", "--git-dir", mirror, "fetch", "-q", work, "+refs/heads/*:refs/heads/*"], check=True
    )
else:
    subprocess.run(["git", "clone", "-q", "--mirror", work, mirror], check=True)
