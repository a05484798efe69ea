"""A Docker image with an npm harness and its Node in it: ``gym-swe images build --harness NAME``.

Derived from gym_swe's base image: the harness's installed folder and Node's, as `install` put them on this
host, copied to `HARNESS_MOUNT` (where a sandbox finds them when they are bound instead), so a run sees the
same files at the same paths either way. The build has no network: it copies only what was installed here
(npm's registry is reached on this host, by `install`, never by the build). Labelled with a recipe hash: an
unchanged recipe is not built twice.

Where it is used: ``files="image"`` (`gym_swe.integrations.harnesses.runner.harness_sandbox_options`) runs
episodes of envs whose sandboxes run the base image (CodeDebug-v0) in this image instead, which needs no
bind mount of the host's files: for a Docker daemon on another host. SWE tasks run their own images, which
get the harness bound read-only instead (``files="bind"``, the default).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import tempfile
from collections.abc import Callable

from gym_swe.errors import SandboxUnavailableError
from gym_swe.integrations.harnesses.base import Harness
from gym_swe.integrations.harnesses.install import INSTALL_COMMAND, require_installed
from gym_swe.integrations.harnesses.runner import HARNESS_MOUNT
from gym_swe.sandbox.docker import BASE_IMAGE, docker_client
from gym_swe.sandbox.images import existing_recipe

LABEL = "gym_swe.harness"


def harness_image(harness: Harness) -> str:
    """The image's name: ``gym-swe-harness:NAME``."""
    return f"gym-swe-harness:{harness.name}"


def dockerfile(base: str, folders: list[str]) -> str:
    copies = "".join(f"COPY harnesses/{folder} {HARNESS_MOUNT}/{folder}\n" for folder in folders)
    return f"FROM {base}\n{copies}"


def require_harness_image(harness: Harness) -> None:
    """A clear error, with the command that builds it, when the harness's image is missing."""
    name = harness_image(harness)
    try:
        docker_client().images.get(name)
    except Exception as error:
        raise SandboxUnavailableError(
            f"the harness image {name!r} is missing ({error}); build it with: "
            f"gym-swe images build --harness {harness.name}"
        ) from None


def build_harness_image(
    harness: Harness, base: str = BASE_IMAGE, force: bool = False, log: Callable[[str], None] = print
) -> str:
    """Build ``harness``'s image from ``base`` unless an up-to-date one exists; returns its name. The harness
    must be installed here first (``gym-swe harnesses install NAME``)."""
    installed = require_installed(harness)
    client = docker_client()
    try:
        base_id = client.images.get(base).id
    except Exception as error:
        raise SandboxUnavailableError(
            f"the base image {base!r} is missing ({error}); build it first with: gym-swe images build"
        ) from error
    name = harness_image(harness)
    folders = [installed.node_dir.name, installed.harness_dir.name]  # names hash what is in them
    text = dockerfile(base, folders)
    wanted = hashlib.sha256(json.dumps([base_id, text]).encode()).hexdigest()[:16]
    if not force and existing_recipe(name) == wanted:
        log(f"{name} is up to date")
        return name
    text += f'LABEL gym_swe.recipe="{wanted}" {LABEL}="{harness.name}"\n'
    with tempfile.TemporaryDirectory(prefix="gym_swe-harness-image-") as work:
        context = os.path.join(work, "context.tar")
        log(f"packing {', '.join(folders)} for {name}")
        with tarfile.open(context, mode="w") as archive:
            info = tarfile.TarInfo("Dockerfile")
            info.size = len(text.encode())
            archive.addfile(info, io.BytesIO(text.encode()))
            for folder in (installed.node_dir, installed.harness_dir):
                archive.add(folder, arcname=f"harnesses/{folder.name}")
        log(f"building {name} (no network: it copies what {INSTALL_COMMAND} put here)")
        from docker.errors import BuildError  # the client above is the docker SDK's: it is installed

        with open(context, "rb") as stream:
            try:
                client.images.build(fileobj=stream, custom_context=True, tag=name, rm=True, pull=False,
                                    network_mode="none")  # fmt: skip
            except BuildError as error:
                lines = "".join(str(part.get("stream", "")) for part in error.build_log)
                raise SandboxUnavailableError(f"building {name} failed: {error}\n{lines[-2000:]}") from None
    # A rebuild leaves the image it replaced untagged: a dangling image with the harness label.
    client.images.prune(filters={"dangling": True, "label": LABEL})
    log(f"built {name} (recipe {wanted})")
    return name
