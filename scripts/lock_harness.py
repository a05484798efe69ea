#!/usr/bin/env python3
"""Pin every package an npm harness installs: write its lockfile beside gym_swe's harness modules.

``gym-swe harnesses install NAME`` installs a harness with ``npm ci`` from
``gym_swe/integrations/harnesses/locks/NAME/{package.json,package-lock.json}`` when they exist, so every
transitive package comes at the version and hash the lockfile says, on every machine. This script makes
them: it resolves the harness's pinned packages (`Harness.packages`) with ``npm install --package-lock-only``
in a temporary folder (npm's cache under gym_swe's cache, as the installs use) and copies the two files in.
npm writes the platform packages of this machine's kind into the lockfile (OpenCode's native binary for
linux-x64, say): the lockfiles in the repository were made on Linux x86_64. Run it when a
harness's version changes, and commit what it wrote; the next install then goes to a new folder (its name
hashes the lockfile).

Usage::

    python scripts/lock_harness.py pi opencode
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from gym_swe.integrations.harnesses.install import npm_cache
from gym_swe.integrations.harnesses.registry import harness_named

LOCKS = Path(__file__).resolve().parents[1] / "gym_swe" / "integrations" / "harnesses" / "locks"


def lock(name: str) -> Path:
    harness = harness_named(name)
    npm = shutil.which("npm")
    if npm is None:
        sys.exit("lock_harness.py: npm is needed (apt-get install npm)")
    with tempfile.TemporaryDirectory(prefix=f"gym_swe-lock-{name}-") as work:
        manifest = {"name": f"gym_swe-harness-{name}", "private": True,
                    "dependencies": {p.name: p.version for p in harness.packages}}  # fmt: skip
        (Path(work) / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        subprocess.run([npm, "install", "--package-lock-only", "--prefix", work, "--cache", str(npm_cache()),
                        "--no-audit", "--no-fund", "--loglevel=error"], check=True)  # fmt: skip
        folder = LOCKS / name
        folder.mkdir(parents=True, exist_ok=True)
        for file_name in ("package.json", "package-lock.json"):
            shutil.copyfile(Path(work) / file_name, folder / file_name)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("names", nargs="+", metavar="NAME", help="npm harnesses (gym-swe harnesses list)")
    for name in parser.parse_args().names:
        print(f"{name}: {lock(name)}")


if __name__ == "__main__":
    main()
