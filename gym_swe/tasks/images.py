"""Docker images for SWE tasks that have none of their own (the bundled tasks, your files).

Each image starts from gym_swe's base image and holds the task's pristine checkout at ``/testbed`` and its
environment (a virtual environment with the task's requirements, first on PATH, and its install commands
run in the repository). Named ``gym-swe-task:<instance_id>``, labelled with a recipe hash so an unchanged
task is not built twice.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shlex
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gym_swe.errors import TaskError
from gym_swe.sandbox.docker import BASE_IMAGE, docker_client
from gym_swe.sandbox.images import existing_recipe
from gym_swe.tasks.environments import SETTLE_INSTALL
from gym_swe.tasks.repos import RepoSource, checkout
from gym_swe.tasks.swe import SWETask, docker_image

VENV = "/opt/gym_swe-venv"


BUILD_TOOLS = (
    "if ! command -v cc >/dev/null; then (apt-get update -qq && apt-get install -y -qq "
    "--no-install-recommends build-essential python3-dev >/dev/null && rm -rf /var/lib/apt/lists/*) "
    "|| echo 'gym_swe: no C compiler could be installed (apt-get failed): a requirement built from source "
    "will fail'; fi"
)
"""A C compiler and Python's headers for a task image that installs anything, as SWE-bench's images have
(its base image installs ``build-essential``): gym_swe's base image has none, and a requirement that PyPI
has as an sdist only is built from it (Django's ``tests/requirements/py3.txt`` names ``pywatchman``, which has
no wheel). From the base image's own Debian mirror; where apt cannot reach it the image is built without,
saying so."""

IMAGE_CA = "/etc/gym_swe/pip-ca.crt"
"""Where a task image keeps the host's CA bundle for pip (`host_ca_bundle`)."""


def host_ca_bundle() -> Path | None:
    """The CA bundle this host's pip trusts, when it names one (``PIP_CERT``, ``REQUESTS_CA_BUNDLE``,
    ``SSL_CERT_FILE``): behind a proxy that re-signs TLS, an image's pip must trust it too to reach the index
    its packages and install commands come from."""
    for variable in ("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"):
        value = os.environ.get(variable)
        if value and Path(value).is_file():
            return Path(value)
    return None


def dockerfile(task: SWETask, base: str, ca: bool = False) -> str:
    """The task image's Dockerfile (``ca``: the build context holds the host's CA bundle for pip)."""
    spec = task.environment
    lines = [
        f"FROM {base}",
        "COPY repo /testbed",
        f"RUN python3 -m venv --system-site-packages {VENV}",
    ]
    if spec.packages or spec.install:
        lines.append(f"RUN {BUILD_TOOLS}")
    if ca and (spec.packages or spec.install or spec.pytest_requirement((3, 11))):
        lines += [f"COPY pip-ca.crt {IMAGE_CA}", f"ENV PIP_CERT={IMAGE_CA}"]
    # The base image's python and pytest serve (environment.python is for local sandboxes): a pytest is
    # asked for only by name, so the one the image has satisfies it without a download.
    requirements = spec.packages + (("pytest",) if spec.pytest_requirement((3, 11)) else ())
    lines += [f"ENV {name}={json.dumps(value)}" for name, value in spec.env]
    if requirements:
        packages = " ".join(shlex.quote(p) for p in requirements)
        lines.append(f"RUN {VENV}/bin/python -m pip install --quiet --disable-pip-version-check {packages}")
    lines += [f"ENV PATH={VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
              f"ENV VIRTUAL_ENV={VENV}", "WORKDIR /testbed"]  # fmt: skip
    lines += [f"RUN {command}" for command in spec.install]
    if spec.install:
        script = base64.b64encode(SETTLE_INSTALL.encode()).decode()  # a RUN line is one line
        lines.append(f"RUN echo {script} | base64 -d | sh")
    return "\n".join(lines) + "\n"


def recipe(task: SWETask, base_id: str) -> str:
    parts = [task.instance_id, task.base_commit, dockerfile(task, base_id), base_id]  # the CA is no recipe
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


def build_task_image(
    task: SWETask,
    source: RepoSource | None = None,
    base: str = BASE_IMAGE,
    force: bool = False,
    log: Callable[[str], None] = print,
) -> str:
    """Build ``task``'s image unless an up-to-date one exists; returns its name."""
    client = docker_client()
    name = docker_image(task, "gym-swe")
    base_id = client.images.get(base).id
    wanted = recipe(task, base_id)
    if not force and existing_recipe(name) == wanted:
        log(f"{name} is up to date")
        return name
    repo = checkout(task, source)
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as archive:
        ca = host_ca_bundle()
        text = dockerfile(task, base, ca=ca is not None)
        text += f'LABEL gym_swe.recipe="{wanted}" gym_swe.task="{task.instance_id}"\n'
        if ca is not None:
            archive.add(str(ca), arcname="pip-ca.crt")
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(text.encode())
        archive.addfile(info, io.BytesIO(text.encode()))
        archive.add(repo, arcname="repo")
    context.seek(0)
    log(f"building {name}")
    from docker.errors import BuildError

    try:
        client.images.build(fileobj=context, custom_context=True, tag=name, rm=True, pull=False)
    except BuildError as error:
        # docker-py's message names the failed RUN line only; what went wrong is in the build's own output
        output = "".join(str(chunk.get("stream") or chunk.get("error") or "") for chunk in error.build_log)
        raise TaskError(f"building {name} failed: {error.msg}\n{output[-3000:]}") from None
    return name


# Removes every way to reach commits after the checked-out one: remotes, other branches, tags, stashes,
# replace refs, reflogs, and (gc --prune=now) the objects themselves.
STRIP_HISTORY = r"""set -e
cd /testbed
base=$(git rev-parse HEAD)
for remote in $(git remote); do git remote remove "$remote"; done
git for-each-ref --format='%(refname)' | while read -r ref; do
  case "$ref" in refs/heads/*) [ "$(git rev-parse "$ref")" = "$base" ] && continue ;; esac
  git update-ref -d "$ref"
done
git reflog expire --expire=now --all
git gc --prune=now --quiet
git rev-list --all | wc -l
"""


def stripped_image(task: SWETask, image: str, log: Callable[[str], None] = print) -> str:
    """``image`` with the history after the checked-out commit removed from ``/testbed`` (made once, cached
    as ``gym-swe-stripped:<instance_id>``). Official SWE-bench and SWE-Gym images clone whole repositories,
    whose later commits hold the fix."""
    from gym_swe.errors import SandboxError
    from gym_swe.sandbox.docker import DockerSandbox

    client = docker_client()
    source_id = _local_image(client, image, task).id
    tag = "".join(c if c.isalnum() or c in "_.-" else "_" for c in task.instance_id)[:128]
    name = f"gym-swe-stripped:{tag}"
    try:
        if (client.images.get(name).labels or {}).get("gym_swe.stripped_from") == source_id:
            return name
    except Exception:
        pass
    log(f"removing the history after the base commit from {image} (once)")
    with DockerSandbox(image=image, workdir="/testbed", pull=False) as box:
        result = box.exec(STRIP_HISTORY, timeout=3600)
        if not result.ok:
            raise SandboxError(f"could not strip the history of {image}: {result.output[-2000:]}")
        box.kill_processes()
        box.container.commit(repository="gym-swe-stripped", tag=tag,
                             conf={"Labels": {"gym_swe.stripped_from": source_id}})  # fmt: skip
    return name


def _local_image(client: Any, image: str, task: SWETask) -> Any:
    """``image``, pulled if it is not here; a missing one that cannot be pulled is the task's
    SandboxUnavailableError (one line: the image, why, and how to get one), not docker-py's ImageNotFound,
    which took `gym-swe validate --sandbox docker` down with a traceback (a SWE-bench record names its
    official image in ``image``, which no registry here serves)."""
    from docker.errors import APIError, ImageNotFound

    from gym_swe.errors import SandboxUnavailableError

    try:
        return client.images.get(image)
    except ImageNotFound:
        pass
    try:
        client.images.pull(image)
        return client.images.get(image)
    except APIError as error:
        reason = str(getattr(error, "explanation", None) or error).splitlines()[0][:300]
    raise SandboxUnavailableError(
        f"{task.instance_id}: Docker image {image!r} is not here and pulling it failed ({reason}). "
        "The record's `image` (else its source's naming) names it: pull it where a registry is reachable, "
        "or build gym_swe's image of the task (gym-swe images build --tasks SOURCE --task-id "
        f"{task.instance_id}) and grade with image_naming='gym-swe' (or a record without `image`)"
    )
