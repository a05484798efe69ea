"""gym_swe's own wheel (what `gym-swe tasks export --format harbor` installs in an image): built from this
source tree, and packed again from a pip-installed gym_swe, which has no source tree: the two are the same
files, byte for byte, and the packed one installs."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from gym_swe.integrations.own_wheel import own_wheel, source_tree

PACK = "from pathlib import Path; import sys; from gym_swe.integrations import own_wheel as o; " \
    "assert o.source_tree() is None, o.source_tree(); print(o.own_wheel(Path(sys.argv[1])))"  # fmt: skip


def pip_install(wheel: Path, target: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", "install", "--no-deps",
                    "--no-index", "--target", str(target), str(wheel)], check=True)  # fmt: skip


def test_a_pip_installed_gym_swe_packs_the_wheel_it_was_installed_from(tmp_path: Path) -> None:
    assert source_tree() is not None  # this checkout: the wheel is built
    built = own_wheel(tmp_path / "built")
    pip_install(built, tmp_path / "site")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}  # the installed copy, before this checkout's
    done = subprocess.run([sys.executable, "-c", PACK, str(tmp_path / "packed")], capture_output=True, text=True,
                          env=env, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    packed = Path(done.stdout.strip().splitlines()[-1])
    assert packed.parent == tmp_path / "packed" and packed.name == built.name
    with zipfile.ZipFile(built) as one, zipfile.ZipFile(packed) as two:
        names = set(one.namelist())
        assert names == set(two.namelist()) and any(
            name.endswith(".dist-info/entry_points.txt") for name in names
        )
        assert [
            name for name in names if not name.endswith("RECORD") and one.read(name) != two.read(name)
        ] == []
        assert two.testzip() is None
    pip_install(packed, tmp_path / "site2")  # pip checks every file against the packed RECORD
    check = subprocess.run([sys.executable, "-c", "import gym_swe.integrations.harbor_export, gym_swe; "
                            "print(gym_swe.__file__)"], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(tmp_path / "site2")}, cwd=tmp_path)  # fmt: skip
    assert check.returncode == 0 and check.stdout.strip() == str(
        tmp_path / "site2" / "gym_swe" / "__init__.py"
    )
