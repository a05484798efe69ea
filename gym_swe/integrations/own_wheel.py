"""gym_swe's own wheel, for images that install it offline (`gym-swe tasks export --format harbor`).

Where gym_swe runs from a source tree (a checkout, ``pip install -e .``), the wheel is built from it. A
pip-installed gym_swe has no source tree, but its installed files are its wheel's, byte for byte: the wheel
is packed again from them (the files pip listed in the distribution's RECORD, less what pip itself added:
compiled bytecode, the console scripts, INSTALLER, REQUESTED, direct_url.json), with a RECORD of its own.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from gym_swe.errors import TaskError

DISTRIBUTION = "gym_swe"
ADDED_BY_THE_INSTALLER = ("INSTALLER", "REQUESTED", "direct_url.json", "RECORD")


def source_tree() -> Path | None:
    """The source tree gym_swe runs from, if it runs from one."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "gym_swe").is_dir() else None


def own_wheel(dest: Path) -> Path:
    """gym_swe's wheel, written into ``dest``: built from the source tree, else packed from the install."""
    dest.mkdir(parents=True, exist_ok=True)
    root = source_tree()
    return built_wheel(root, dest) if root is not None else packed_wheel(dest)


def built_wheel(root: Path, dest: Path) -> Path:
    # Built from a copy: setuptools builds in the tree's own build/, which two exports at once would share.
    copy = dest.parent / f"{dest.name}-source"
    shutil.copytree(root / "gym_swe", copy / "gym_swe", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(root / name, copy / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    done = subprocess.run(
        [*pip, "wheel", "--no-deps", "--wheel-dir", str(dest), str(copy)], capture_output=True, text=True
    )
    shutil.rmtree(copy)
    if done.returncode != 0:
        raise TaskError(f"could not build gym_swe's wheel: {(done.stderr or done.stdout).strip()[-800:]}")
    (wheel,) = dest.glob("gym_swe-*.whl")
    return wheel


def packed_wheel(dest: Path) -> Path:
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise TaskError("gym_swe runs from neither a source tree nor an installed distribution") from None
    info = f"{DISTRIBUTION}-{dist.version}.dist-info"
    members = []
    for file in dist.files or ():
        parts = file.parts
        if parts[0] == ".." or "__pycache__" in parts or file.suffix == ".pyc":
            continue  # the console scripts (pip makes them from entry_points.txt) and bytecode
        if parts[0] == info and file.name in ADDED_BY_THE_INSTALLER:
            continue
        members.append((file.as_posix(), Path(str(dist.locate_file(file)))))
    if not any(name == f"{info}/WHEEL" for name, _ in members):
        raise TaskError(f"gym_swe's installed distribution has no {info}/WHEEL: it cannot be packed again")
    tags = [
        line.split(":", 1)[1].strip()
        for line in (dict(members)[f"{info}/WHEEL"]).read_text().splitlines()
        if line.startswith("Tag:")
    ]
    wheel = dest / f"{DISTRIBUTION}-{dist.version}-{tags[0] if tags else 'py3-none-any'}.whl"
    record = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, path in sorted(members):
            data = path.read_bytes()
            archive.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{name},sha256={digest},{len(data)}")
        record.append(f"{info}/RECORD,,")
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel
