"""A Docker image with mini-swe-agent installed, for running its own CLI inside a docker sandbox.

Derived from gym_swe's base image: mini-swe-agent and its dependencies in a virtual environment of their own
(``HARNESS_VENV``, off the agent's PATH, so the task's Python stays what it was). The container build may not
reach PyPI (none of gym_swe's sandboxes has a network, and CI machines often have no registry), so the wheels
are downloaded on the host, for the base image's Python and platform, into the build context, and installed
offline in a build with no network. Labelled with a recipe hash: an unchanged recipe is not built twice.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from importlib import metadata
from typing import Any

from gym_swe.errors import SandboxUnavailableError
from gym_swe.sandbox.docker import BASE_IMAGE, docker_client
from gym_swe.sandbox.images import existing_recipe

HARNESS_IMAGE = "gym-swe-harness:mini-swe-agent"
HARNESS_VENV = "/opt/mini-swe-agent"
HARNESS_PYTHON = f"{HARNESS_VENV}/bin/python"
# litellm (mini-swe-agent's model client) imports mcp whenever a request carries tools.
EXTRA_REQUIREMENTS = ("mcp>=1.0",)
# Asked of the base image once per build: its Python's version and ABI, its machine and its glibc, which
# decide the wheels that fit it.
PLATFORM_PROBE = (
    "import json, platform, sys; "
    "print(json.dumps({'version': '%d.%d' % sys.version_info[:2], 'abi': sys.implementation.cache_tag, "
    "'machine': platform.machine(), 'libc': platform.libc_ver()}))"
)


def requirements() -> tuple[str, ...]:
    """mini-swe-agent at the version installed here (the one gym_swe is tested with), else the supported
    range, plus what litellm needs for tool calls."""
    try:
        agent = f"mini-swe-agent=={metadata.version('mini-swe-agent')}"
    except metadata.PackageNotFoundError:
        agent = "mini-swe-agent>=2.4,<2.5"
    return (agent, *EXTRA_REQUIREMENTS)


def dockerfile(base: str, packages: tuple[str, ...]) -> str:
    """Two stages: the wheels (about 160 MB) are a layer of the first only; the image gets the venv. The
    first is labelled so that what the build leaves of it is pruned (see `build_harness_image`)."""
    quoted = " ".join(json.dumps(p) for p in packages)
    return (
        f"FROM {base} AS install\n"
        "LABEL gym_swe.harness=install-stage\n"
        "COPY wheels /tmp/gym_swe-wheels\n"
        f"RUN python3 -m venv {HARNESS_VENV} && {HARNESS_PYTHON} -m pip install --quiet --no-index "
        f"--disable-pip-version-check --find-links /tmp/gym_swe-wheels {quoted}\n"
        f"FROM {base}\n"
        f"COPY --from=install {HARNESS_VENV} {HARNESS_VENV}\n"
    )


def base_platform(base: str) -> dict[str, Any]:
    """What the base image's python3 is (see PLATFORM_PROBE), from a container with no network."""
    output = docker_client().containers.run(
        base, ["python3", "-c", PLATFORM_PROBE], network_mode="none", remove=True, entrypoint=[]
    )
    found: dict[str, Any] = json.loads(output.decode().strip().splitlines()[-1])
    found["libc"] = list(found["libc"])
    return found


def platform_tags(found: dict[str, Any]) -> list[str]:
    """The pip ``--platform`` tags the image can run: manylinux up to its glibc (and the legacy aliases)."""
    machine = found["machine"]
    library, version = found["libc"]
    if library != "glibc":
        raise SandboxUnavailableError(
            f"the base image's C library is {library or 'unknown'}, not glibc: no manylinux wheels fit it"
        )
    minor = int(str(version).split(".")[1])
    tags = [f"manylinux_2_{m}_{machine}" for m in range(5, minor + 1)]
    return [*tags, f"manylinux1_{machine}", f"manylinux2010_{machine}", f"manylinux2014_{machine}"]


def download_wheels(packages: tuple[str, ...], found: dict[str, Any], dest: str) -> None:
    """``pip download`` on the host, binary wheels only, for the image's Python and platform."""
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
               "--only-binary=:all:", "--dest", dest, "--python-version", found["version"],
               "--implementation", "cp", "--abi", found["abi"].replace("cpython-", "cp")]  # fmt: skip
    for tag in platform_tags(found):
        command += ["--platform", tag]
    done = subprocess.run([*command, *packages], capture_output=True, text=True)
    if done.returncode != 0:
        raise SandboxUnavailableError(
            f"downloading the wheels of {' '.join(packages)} failed (pip download needs a package index "
            f"reachable from this host): {done.stderr.strip()[-1500:]}"
        )


def recipe(base_id: str, packages: tuple[str, ...], found: dict[str, Any]) -> str:
    """A short hash of what goes into the image: a new base image, requirement or recipe means a rebuild."""
    parts = [base_id, dockerfile("base", packages), found]
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def require_harness_image(name: str = HARNESS_IMAGE) -> None:
    """A clear error, with the command that builds it, when the harness image is missing."""
    try:
        docker_client().images.get(name)
    except Exception as error:
        raise SandboxUnavailableError(
            f"the harness image {name!r} is missing ({error}); build it with: "
            "gym-swe images build --harness mini-swe-agent"
        ) from None


def build_harness_image(
    name: str = HARNESS_IMAGE,
    base: str = BASE_IMAGE,
    force: bool = False,
    log: Callable[[str], None] = print,
) -> str:
    """Build the mini-swe-agent image from ``base`` unless an up-to-date one exists; returns its name."""
    client = docker_client()
    try:
        base_id = client.images.get(base).id
    except Exception as error:
        raise SandboxUnavailableError(
            f"the base image {base!r} is missing ({error}); build it first with: gym-swe images build"
        ) from error
    packages = requirements()
    found = base_platform(base)
    wanted = recipe(base_id, packages, found)
    if not force and existing_recipe(name) == wanted:
        log(f"{name} is up to date")
        return name
    with tempfile.TemporaryDirectory(prefix="gym_swe-harness-") as work:
        wheels = os.path.join(work, "wheels")
        log(f"downloading the wheels of {' '.join(packages)} for Python {found['version']} in {base}")
        download_wheels(packages, found, wheels)
        context = os.path.join(work, "context.tar")
        with tarfile.open(context, mode="w") as archive:
            text = dockerfile(base, packages)
            text += f'LABEL gym_swe.recipe="{wanted}" gym_swe.harness="mini-swe-agent"\n'
            info = tarfile.TarInfo("Dockerfile")
            info.size = len(text.encode())
            archive.addfile(info, io.BytesIO(text.encode()))
            archive.add(wheels, arcname="wheels")
        log(f"building {name} (installing offline, no network)")
        from docker.errors import BuildError  # the client above is the docker SDK's: it is installed

        with open(context, "rb") as stream:
            try:  # network_mode="none": the install can only use the wheels in the context
                client.images.build(fileobj=stream, custom_context=True, tag=name, rm=True, pull=False,
                                    network_mode="none")  # fmt: skip
            except BuildError as error:
                lines = "".join(str(part.get("stream", "")) for part in error.build_log)
                raise SandboxUnavailableError(f"building {name} failed: {error}\n{lines[-2000:]}") from None
    # The classic builder keeps the install stage as an untagged image, and a rebuild untags the last
    # harness image: both are dangling images with the gym_swe.harness label.
    client.images.prune(filters={"dangling": True, "label": "gym_swe.harness"})
    log(f"built {name} (recipe {wanted})")
    return name
