"""What verifiers' Harbor taskset fetches from the internet at run time, made here from local images and wheels,
as an air-gapped cluster would provide it (docs/integrations/harbor-export.md, "verifiers"):

- its docker runtime's egress-control image, ``localhost/verifiers-network:1`` (looked up by that tag, built
  ``FROM docker.io/library/alpine:3.22`` only when missing): what it runs there is ``sh``, ``ip``, ``awk`` and
  ``iptables``, so the same tag built from gym_swe's Debian base with ``iproute2`` and ``iptables`` serves;
- its harnesses' chat program, a PEP 723 script that it ``uv sync``s inside the task's container before the
  network is cut (uv found on PATH, else ``pip install --user uv``, else astral.sh's installer): a task image
  derived from the exported one holds ``uv`` and a package index of the program's dependencies for the
  image's ``python3`` (a PEP 503 "simple" folder beside their wheels, as a cluster's own mirror would be), and
  tells uv (its ``ENV``) to use that interpreter and that index, no Python downloads. (Not ``UV_NO_INDEX`` with
  ``UV_FIND_LINKS``: uv 0.13's ``sync --script`` still asks PyPI then.)
- a downloader: with an ``[agent] user`` it first makes sure, as root, that ``curl`` or ``wget`` is there for
  that user's uv bootstrap, ``apt-get install curl`` where neither is (gym_swe's base image has neither), so the
  derived image has ``curl`` (installed with the host's network when it is built).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import tomllib

NETWORK_IMAGE = "localhost/verifiers-network:1"
OFFLINE = "/opt/verifiers-offline"
"""Where a derived image keeps the chat program's wheels (``wheels/``) and their index (``simple/``)."""
DERIVED = "gym-swe-vf-offline"
"""The repository of the derived task images (one tag per exported image, wheelhouse and uv)."""


def docker(*argv: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["docker", *argv], capture_output=True, text=True, input=input, timeout=1200)
    if check and done.returncode != 0:
        raise RuntimeError(f"docker {' '.join(argv[:3])} failed: {(done.stderr or done.stdout)[-2000:]}")
    return done


def network_image(base: str = "gym-swe-base:latest") -> str:
    """verifiers' egress-control image, built from ``base`` (Debian) with the host's network for apt when the
    tag is missing; kept, like verifiers keeps its own."""
    if docker("image", "inspect", NETWORK_IMAGE, check=False).returncode != 0:
        dockerfile = (
            f"FROM {base}\nUSER root\n"
            "RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "
            "iproute2 iptables gawk && rm -rf /var/lib/apt/lists/*\n"
        )
        docker("build", "-q", "--network", "host", "-t", NETWORK_IMAGE, "-", input=dockerfile)
    return NETWORK_IMAGE


def chat_program_requirements(vf_python: Path) -> list[str]:
    """The dependencies verifiers' chat program (its ``bash`` and ``null`` harnesses) declares, read from the
    installed verifiers (its PEP 723 block)."""
    source = subprocess.run(
        [str(vf_python), "-c", "from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM; print(CHAT_PROGRAM)"],
        capture_output=True, text=True, check=True, timeout=300,
    ).stdout  # fmt: skip
    block = re.search(r"^# /// script\n((?:#.*\n)*?)^# ///$", source, re.MULTILINE)
    assert block, source
    metadata = tomllib.loads("".join(line[2:] + "\n" for line in block.group(1).splitlines()))
    return list(metadata["dependencies"])


def image_python(image: str) -> tuple[str, str]:
    """The path and ``X.Y`` of the ``python3`` the image's PATH finds."""
    probe = "command -v python3; python3 -c \"import sys; print('%d.%d' % sys.version_info[:2])\""
    path, version = docker(
        "run", "--rm", "--network", "none", "--entrypoint", "sh", image, "-c", probe
    ).stdout.split()
    return path, version


def wheelhouse(dest: Path, python_version: str, requirements: list[str]) -> Path:
    """The wheels of ``requirements`` and their dependencies for CPython ``python_version`` on x86-64 Linux."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--dest", str(dest),
         "--only-binary=:all:", "--python-version", python_version, "--platform", "manylinux2014_x86_64",
         "--platform", "manylinux_2_28_x86_64", *requirements],
        check=True, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    return dest


def simple_index(wheels: Path, dest: Path) -> None:
    """A PEP 503 index of the wheels in ``wheels`` at ``dest`` (a sibling folder): a page per project."""
    for wheel in sorted(wheels.glob("*.whl")):
        project = re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower()
        (dest / project).mkdir(parents=True, exist_ok=True)
        with (dest / project / "index.html").open("a") as page:
            page.write(f'<a href="../../{wheels.name}/{wheel.name}">{wheel.name}</a>\n')


def derived_image(image: str, uv: Path, wheels: Path, python: str) -> str:
    """``image`` with ``uv`` on PATH and ``wheels`` in it, its ``ENV`` pointing uv at them and at ``python``;
    tagged by the content of all three."""
    dockerfile = (
        f"FROM {image}\n"
        "USER root\n"
        "RUN command -v curl >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive "
        "apt-get install -y -qq --no-install-recommends curl ca-certificates && rm -rf /var/lib/apt/lists/*; }\n"
        "COPY uv /usr/local/bin/uv\n"
        f"COPY wheels/ {OFFLINE}/wheels/\n"
        f"COPY simple/ {OFFLINE}/simple/\n"
        # uv from that index alone (UV_OFFLINE=false, which verifiers sets for the sync, then changes nothing),
        # on the image's own interpreter
        f"ENV UV_DEFAULT_INDEX=file://{OFFLINE}/simple UV_PYTHON={python} UV_PYTHON_DOWNLOADS=never\n"
    )
    digest = hashlib.sha256(docker("image", "inspect", "--format", "{{.Id}}", image).stdout.encode())
    digest.update(dockerfile.encode() + uv.read_bytes())
    for wheel in sorted(wheels.glob("*.whl")):
        digest.update(wheel.name.encode())
    tag = f"{DERIVED}:{image.rpartition(':')[2][:80]}-{digest.hexdigest()[:12]}"
    if docker("image", "inspect", tag, check=False).returncode == 0:
        return tag
    with tempfile.TemporaryDirectory(prefix="gym_swe-vf-offline-") as context:
        shutil.copy2(uv, Path(context) / "uv")
        shutil.copytree(wheels, Path(context) / "wheels")
        simple_index(Path(context) / "wheels", Path(context) / "simple")
        (Path(context) / "Dockerfile").write_text(dockerfile)
        docker("build", "-q", "--network", "host", "-t", tag, context)
    return tag


def offline_copy(exported: Path, dest: Path, vf_python: Path, scratch: Path, tags: list[str]) -> Path:
    """The exported task folders (made with ``--build``) copied to ``dest``, each task.toml's ``docker_image``
    now its derived image, whose tag is added to ``tags`` as soon as it is built (the caller removes them)."""
    requirements = chat_program_requirements(vf_python)
    uv = vf_python.with_name("uv")
    wheelhouses: dict[str, Path] = {}
    for toml in sorted(exported.glob("*/task.toml")):
        image = tomllib.loads(toml.read_text())["environment"]["docker_image"]
        python, version = image_python(image)
        if version not in wheelhouses:
            wheelhouses[version] = wheelhouse(scratch / f"wheels-{version}", version, requirements)
        tag = derived_image(image, uv, wheelhouses[version], python)
        tags.append(tag)
        folder = dest / toml.parent.name
        shutil.copytree(toml.parent, folder, ignore=shutil.ignore_patterns("wheels"))
        text = toml.read_text().replace(f'docker_image = "{image}"', f'docker_image = "{tag}"')
        assert tag in text, text
        (folder / "task.toml").write_text(text)
    return dest
