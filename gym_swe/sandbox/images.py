"""Building the base Docker image (python3, git, patch, pytest) that ``sandbox="docker"`` runs by default.

Two recipes: where an image registry is reachable, a two-line Dockerfile on the official ``python`` image;
where none is (air-gapped clusters, this project's CI), a Debian root filesystem made with ``debootstrap``
from the Debian package mirror and turned into an image with ``docker import``. Either image carries a
``gym_swe.recipe`` label, so a second build with the same recipe is skipped.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from gym_swe.errors import ConfigError, SandboxUnavailableError, unknown_name
from gym_swe.sandbox.docker import BASE_IMAGE, docker_client

DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
DEBIAN_PACKAGES = ("python3", "python-is-python3", "python3-venv", "python3-pytest", "git", "patch", "procps")
PYTHON_BASE = "python:3.11-slim"
METHODS = ("auto", "debootstrap", "python")
# Parts of the root filesystem no sandbox needs: documentation, translations, package caches.
PRUNED = (
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "var/cache/apt",
    "var/lib/apt/lists",
)
IMAGE_CHANGES = [
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    "WORKDIR /workspace",
    'CMD ["sleep", "infinity"]',
]
PYTHON_DOCKERFILE = f"""FROM {PYTHON_BASE}
RUN apt-get update && apt-get install -y --no-install-recommends git patch procps \\
 && rm -rf /var/lib/apt/lists/* && pip install --no-cache-dir pytest
WORKDIR /workspace
CMD ["sleep", "infinity"]
"""


def recipe(method: str) -> str:
    """A short hash of what goes into the image; a change of recipe means a rebuild."""
    parts = (
        [method, DEBIAN_SUITE, *DEBIAN_PACKAGES, *IMAGE_CHANGES]
        if method == "debootstrap"
        else [method, PYTHON_DOCKERFILE]
    )
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def existing_recipe(name: str) -> str | None:
    """The recipe label of image ``name``, or None when there is no such image."""
    client = docker_client()
    try:
        image = client.images.get(name)
    except Exception:
        return None
    recipe: str = (image.labels or {}).get("gym_swe.recipe", "")  # docker's labels: text
    return recipe


def registry_reachable() -> bool:
    """Whether the official python image can be pulled (tried once, quickly)."""
    try:
        docker_client().images.pull(PYTHON_BASE)
    except Exception:
        return False
    return True


def build_base_image(
    name: str = BASE_IMAGE,
    method: str = "auto",
    mirror: str = DEBIAN_MIRROR,
    force: bool = False,
    log: Callable[[str], None] = print,
) -> str:
    """Build the base image unless one built with the same recipe is there already. Returns the image name.

    ``method``: ``"debootstrap"`` (needs root and the debootstrap command), ``"python"`` (needs a registry
    with the official python image), or ``"auto"``: python when the registry answers, else debootstrap.
    """
    if method not in METHODS:
        raise ConfigError(unknown_name("image build method", method, METHODS))
    if method == "auto":
        method = "python" if registry_reachable() else "debootstrap"
        log(f"build method: {method}")
    wanted = recipe(method)
    if not force and existing_recipe(name) == wanted:
        log(f"{name} is up to date (recipe {wanted}); nothing to build")
        return name
    if method == "python":
        _build_from_python_image(name, wanted)
    else:
        _build_with_debootstrap(name, wanted, mirror, log)
    log(f"built {name} (recipe {wanted})")
    return name


def _build_from_python_image(name: str, label: str) -> None:
    client = docker_client()
    dockerfile = PYTHON_DOCKERFILE + f'LABEL gym_swe.recipe="{label}"\n'
    client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=name, rm=True, pull=False)


def _build_with_debootstrap(name: str, label: str, mirror: str, log: Callable[[str], None]) -> None:
    if shutil.which("debootstrap") is None:
        raise SandboxUnavailableError(
            "debootstrap is not installed (Debian/Ubuntu: sudo apt-get install debootstrap); it builds the "
            "base image where no image registry is reachable."
        )
    if os.geteuid() != 0:
        raise SandboxUnavailableError("building the base image with debootstrap needs root (try sudo)")
    with tempfile.TemporaryDirectory(prefix="gym_swe-rootfs-") as work:
        rootfs = Path(work) / "rootfs"
        log(f"debootstrap {DEBIAN_SUITE} from {mirror} (about a minute)")
        command = [
            "debootstrap",
            "--variant=minbase",
            "--include=" + ",".join(DEBIAN_PACKAGES),
            DEBIAN_SUITE,
            str(rootfs),
            mirror,
        ]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise SandboxUnavailableError(f"debootstrap failed ({done.returncode}):\n{done.stdout[-3000:]}")
        for part in PRUNED:
            shutil.rmtree(rootfs / part, ignore_errors=True)
        (rootfs / "workspace").mkdir(exist_ok=True)
        archive = Path(work) / "rootfs.tar"
        subprocess.run(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(archive), "."], check=True)
        log(f"docker import ({archive.stat().st_size // (1 << 20)} MiB)")
        repository, tag = name.rsplit(":", 1) if ":" in name.rsplit("/", 1)[-1] else (name, "latest")
        docker_client().api.import_image_from_file(
            str(archive),
            repository=repository,
            tag=tag,
            changes=[*IMAGE_CHANGES, f"LABEL gym_swe.recipe={label}"],
        )
