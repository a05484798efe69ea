"""The container image of ``gym-swe serve``: gym_swe as an OpenEnv environment, built offline from the base.

The image is the OpenEnv package in ``openenv_env/`` (``openenv.yaml``, ``server/app.py``,
``server/Dockerfile``, the client and the models: the layout ``openenv build`` and ``openenv push`` read)
plus what its Dockerfile installs without a network: ``wheels/`` (gym_swe, built from this checkout, and its
serve and docker dependencies, downloaded on this host for the base image's Python and platform) and
``debs/`` (bubblewrap, for the local sandbox, from the Debian mirror of the base image's release). The build
itself runs with no network, like the harness image's, and the image is labelled with a recipe hash: an
unchanged recipe is not built twice.

The local sandbox works inside the container: bubblewrap makes its jail's namespaces there as on a host,
given two options the default container profile withholds, ``--security-opt seccomp=unconfined`` (Docker's
default seccomp profile refuses the new user namespace) and ``--security-opt systempaths=unconfined`` (Docker
masks parts of /proc, so the jail's own /proc cannot be mounted); where AppArmor confines containers, also
``--security-opt apparmor=unconfined``. Without them, mount the Docker socket and serve ``sandbox=docker``.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from gym_swe.errors import SandboxUnavailableError
from gym_swe.integrations.harness_image import download_wheels
from gym_swe.sandbox.docker import BASE_IMAGE, docker_client
from gym_swe.sandbox.images import DEBIAN_MIRROR, existing_recipe

SERVE_IMAGE = "gym-swe-serve:latest"
EXTRAS = ("serve", "serve-client", "docker")
"""gym_swe's extras the image installs: the server (OpenEnv), its client's needs, and the docker SDK."""
DEBIAN_PACKAGES = ("bubblewrap",)
"""Debian packages the image adds to the base (their dependencies are in it already)."""
RUN_OPTIONS = ("--security-opt", "seccomp=unconfined", "--security-opt", "systempaths=unconfined")
"""``docker run`` options the local sandbox needs inside the container (module docstring)."""
# Asked of the base image once per build: its Python, platform and C library (the wheels that fit it), and its
# Debian release and architecture (the packages that fit it).
PROBE = (
    "python3 -c \"import json, platform, sys; print(json.dumps({'version': '%d.%d' % sys.version_info[:2], "
    "'abi': sys.implementation.cache_tag, 'machine': platform.machine(), 'libc': platform.libc_ver()}))\"; "
    ". /etc/os-release; echo $VERSION_CODENAME; dpkg --print-architecture"
)


def layout() -> Path:
    """The OpenEnv package folder shipped with gym_swe (openenv.yaml, server/, client.py, models.py)."""
    return Path(str(resources.files("gym_swe.integrations") / "openenv_env"))


def base_facts(base: str) -> dict[str, Any]:
    """What the base image is (see PROBE), from a container with no network."""
    output = docker_client().containers.run(
        base, ["sh", "-c", PROBE], network_mode="none", remove=True, entrypoint=[]
    )
    python, codename, architecture = output.decode().strip().splitlines()[-3:]
    found: dict[str, Any] = json.loads(python)
    found["libc"] = list(found["libc"])
    found.update(codename=codename.strip(), architecture=architecture.strip())
    return found


def requirements() -> list[str]:
    """The requirements of gym_swe's core and of ``EXTRAS``, as the checkout's pyproject.toml declares them
    (the image's gym_swe is built from it; an install's metadata may be older), else as the install does."""
    declared = _declared_requirements()
    if declared is None:  # no TOML reader (Python 3.10): the installed metadata
        declared = []
        for requirement in metadata.requires("gym-swe") or []:
            name, _, marker = requirement.partition(";")
            extra = marker.split("extra ==")[-1].strip().strip("'\"") if "extra ==" in marker else None
            if extra is None or extra in EXTRAS:
                declared.append(name.strip())
    return sorted({r for r in declared if not r.replace(" ", "").startswith("gym-swe")})


def _declared_requirements() -> list[str] | None:
    if sys.version_info >= (3, 11):
        import tomllib

        project = tomllib.loads((source_root() / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        extras = project["optional-dependencies"]
        return [*project["dependencies"], *(requirement for extra in EXTRAS for requirement in extras[extra])]
    return None


def source_root() -> Path:
    """The checkout gym_swe is installed from (the image gets a wheel built from it)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file():
        raise SandboxUnavailableError(
            f"building the serve image needs gym_swe's source (a checkout with pyproject.toml): not {root}"
        )
    return root


def build_wheel(dest: str) -> None:
    """gym_swe's own wheel, from its source, into ``dest``."""
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
               "--wheel-dir", dest, str(source_root())]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SandboxUnavailableError(f"building gym_swe's wheel failed: {done.stderr.strip()[-1500:]}")


def debian_packages(names: tuple[str, ...], found: dict[str, Any], mirror: str, dest: str) -> None:
    """Download the .debs of ``names`` for the base image's release and architecture from the Debian mirror
    (its package index, then the files it names)."""
    import httpx

    index_url = f"{mirror}/dists/{found['codename']}/main/binary-{found['architecture']}/Packages.xz"
    try:
        index = lzma.decompress(
            httpx.get(index_url, timeout=120, follow_redirects=True).raise_for_status().content
        )
    except (httpx.HTTPError, lzma.LZMAError) as error:
        raise SandboxUnavailableError(
            f"the Debian package index {index_url} could not be read: {error}"
        ) from None
    stanzas = {}
    for stanza in index.decode("utf-8", errors="replace").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and line[0] != " ")
        if fields.get("Package") in names:
            stanzas[fields["Package"]] = fields
    os.makedirs(dest, exist_ok=True)
    for name in names:
        if name not in stanzas:
            raise SandboxUnavailableError(f"the Debian package {name!r} is not in {index_url}")
        url = f"{mirror}/{stanzas[name]['Filename']}"
        try:
            content = httpx.get(url, timeout=300, follow_redirects=True).raise_for_status().content
        except httpx.HTTPError as error:
            raise SandboxUnavailableError(f"downloading {url} failed: {error}") from None
        if hashlib.sha256(content).hexdigest() != stanzas[name].get("SHA256"):
            raise SandboxUnavailableError(f"{url} does not match the SHA256 its package index gives")
        Path(dest, os.path.basename(url)).write_bytes(content)


def recipe(base_id: str, packages: list[str], found: dict[str, Any]) -> str:
    """A short hash of what goes into the image: the base, the requirements, the layout's files and the
    gym_swe source the wheel is built from (a changed line of gym_swe means a new image)."""
    digest = hashlib.sha256(
        json.dumps([base_id, packages, found, list(DEBIAN_PACKAGES)], sort_keys=True).encode()
    )
    root = source_root()
    for folder in (root / "gym_swe", layout()):
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(root)).encode())
                digest.update(path.read_bytes())
    digest.update((root / "pyproject.toml").read_bytes())
    return digest.hexdigest()[:16]


def prepare(
    dest: str,
    base: str,
    found: dict[str, Any],
    mirror: str = DEBIAN_MIRROR,
    log: Callable[[str], None] = print,
) -> None:
    """Write the OpenEnv package folder, with its wheels and debs, to ``dest`` (what ``openenv build`` and
    ``openenv push`` take); ``found``: what `base_facts` says of ``base``."""
    shutil.copytree(layout(), dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    wheels = os.path.join(dest, "wheels")
    log(f"wheels of gym_swe and its serve dependencies for Python {found['version']} in {base}")
    build_wheel(wheels)
    download_wheels(tuple(requirements()), found, wheels)
    log(f"Debian packages {', '.join(DEBIAN_PACKAGES)} for {found['codename']} ({found['architecture']})")
    debian_packages(DEBIAN_PACKAGES, found, mirror, os.path.join(dest, "debs"))


def build_serve_image(
    name: str = SERVE_IMAGE,
    base: str = BASE_IMAGE,
    force: bool = False,
    keep: str | None = None,
    mirror: str = DEBIAN_MIRROR,
    log: Callable[[str], None] = print,
) -> str:
    """Build the serve image from ``base`` unless an up-to-date one exists; returns its name. ``keep``: also
    write the OpenEnv package folder there, wheels and all (for ``openenv build`` / ``openenv push``)."""
    client = docker_client()
    try:
        base_id = client.images.get(base).id
    except Exception as error:
        raise SandboxUnavailableError(
            f"the base image {base!r} is missing ({error}); build it first with: gym-swe images build"
        ) from error
    found = base_facts(base)
    wanted = recipe(base_id, requirements(), found)
    up_to_date = not force and existing_recipe(name) == wanted
    if up_to_date and keep is None:
        log(f"{name} is up to date")
        return name
    with tempfile.TemporaryDirectory(prefix="gym_swe-serve-image-") as work:
        folder = keep or os.path.join(work, "gym_swe_env")
        prepare(folder, base, found, mirror, log)
        if up_to_date:
            log(f"{name} is up to date; the OpenEnv package is in {folder}")
            return name
        log(f"building {name} (installing offline, no network)")
        from docker.errors import BuildError  # the client above is the docker SDK's: it is installed

        try:  # network_mode="none": the install can only use the wheels and debs in the folder
            client.images.build(path=folder, dockerfile="server/Dockerfile", tag=name, rm=True, pull=False,
                                network_mode="none", buildargs={"BASE_IMAGE": base},
                                labels={"gym_swe.recipe": wanted, "gym_swe.serve": "image"})  # fmt: skip
        except BuildError as error:
            lines = "".join(str(part.get("stream", "")) for part in error.build_log)
            raise SandboxUnavailableError(f"building {name} failed: {error}\n{lines[-2000:]}") from None
    # The classic builder keeps the install stage as an untagged image: a dangling one with the label.
    client.images.prune(filters={"dangling": True, "label": "gym_swe.serve"})
    log(f"built {name} (recipe {wanted})")
    return name
