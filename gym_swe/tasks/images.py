"""Docker images for SWE tasks that have none of their own (the bundled tasks, your files).

Each image starts from gym_swe's base image and holds the task's pristine checkout at ``/testbed`` and its
environment (a virtual environment with the task's requirements, first on PATH, and its install commands
run in the repository). Named ``gym-swe-task:<instance_id>``, labelled with a recipe hash so an unchanged
task is not built twice.

The venv is made with the task's own Python, as its local environment is (``environment.python``). Where that
is the base image's (Debian 12's 3.11, `BASE_PYTHON`, or no version asked for), the venv is the base image's
python3's, with its site-packages (its pytest). Any other version is found on this host as the local sandbox
finds it (`find_interpreter`: pyenv's, uv's) and its installation (``sys.base_prefix``, without its
site-packages) is copied into the image at the same path, the Debian packages of the shared libraries it
links to (``ldd``, then ``dpkg -S`` on this host) are installed from the base image's Debian mirror where the
image lacks one, and the venv is made with it, after a check that it imports ``ssl``, ``sqlite3``, ``ctypes``
and the compression modules there. Such a venv holds only the task's requirements and a pinned pytest, as a
local one does. The host's interpreter is Debian-built like the base image (pyenv builds on Debian 12 here);
one built elsewhere may link to libraries Debian 12 has under other names, which the check then names. A
version this host lacks fails the build in one line naming it; a system interpreter (under ``/usr``) of
another version cannot be copied and fails the same way. The recipe holds the interpreter's path, version,
libraries and a hash of its executable and ``libpython``, so a changed interpreter means a rebuild. A UTF-8
locale the task's variables name (``LANG=en_US.UTF-8``) is made in the image (`LOCALE`), as SWE-bench's
images make it.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import os
import shlex
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_swe.errors import TaskError
from gym_swe.sandbox.docker import BASE_IMAGE, docker_client
from gym_swe.sandbox.images import existing_recipe
from gym_swe.tasks.conda_env import JAIL_PATH as CONDA_ENV_PATH
from gym_swe.tasks.conda_env import SETUP_COMMIT_TREE
from gym_swe.tasks.dated_index import honoured
from gym_swe.tasks.environments import (
    CONDA_ENV_SCRIPT,
    SETTLE_INSTALL,
    UTF8_LOCALE,
    build_requirement_commands,
    build_requirements,
    dated_index,
    own_runner,
    pip_upgrade_commands,
    setup_commit_tree,
)
from gym_swe.tasks.interpreters import VERSION, find_interpreter
from gym_swe.tasks.repos import RepoSource, checkout
from gym_swe.tasks.swe import SWETask, docker_image

VENV = "/opt/gym_swe-venv"
BASE_PYTHON = (3, 11)
"""The Python of gym_swe's base image, either recipe (`gym_swe.sandbox.images`: Debian 12's python3, or
``python:3.11-slim``): a task whose environment asks for this version (or none) uses it."""
PYTHON_CHECK = "import ssl, sqlite3, ctypes, zlib, bz2, lzma"
"""What a copied interpreter must import in the image: pip needs ``ssl``; the rest are what tests and
packages load most often from the shared libraries the base image may lack."""


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

LOCALE = (
    "(apt-get update -qq && apt-get install -y -qq --no-install-recommends locales >/dev/null "
    "&& rm -rf /var/lib/apt/lists/* && localedef -i {name} -f UTF-8 {locale}) "
    "|| echo 'gym_swe: the locale {locale} could not be made (apt-get failed): Python < 3.7 reads ASCII'"
)
"""Makes a UTF-8 locale the task's variables name (``LANG=en_US.UTF-8``: SWE-bench's Django 3.0-3.2), as
SWE-bench's images do (``locale-gen``) and local environments do in their venv: the base image has C.UTF-8
only, and under a locale that is not there Python 3.6 takes ASCII for every file it opens."""

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


@dataclass(frozen=True)
class ImagePython:
    """A Python of this host that a task image gets a copy of (`image_python`)."""

    executable: str
    prefix: str
    """Its installation (``sys.base_prefix``), copied to the same path in the image."""
    version: tuple[int, int, int]
    libraries: tuple[str, ...]
    """The Debian packages of the shared libraries it links to (`debian_libraries`)."""
    fingerprint: str
    """A hash of its executable and ``libpython``: a rebuilt interpreter is a new recipe."""


def image_python(task: SWETask) -> ImagePython | None:
    """The interpreter ``task``'s image copies from this host; None where the base image's python3 serves
    (``environment.python`` asks for none, or for `BASE_PYTHON`'s version). Fails naming the version when
    this host has none of it, or only a system one (under ``/usr``, which cannot be copied)."""
    wanted = task.environment.python
    version = VERSION.fullmatch(wanted)
    if wanted == "python3" or (version and tuple(map(int, version.groups()[:2])) == BASE_PYTHON):
        return None
    try:
        found = find_interpreter(wanted)
    except TaskError as error:
        raise TaskError(f"{task.instance_id}: its image needs Python {wanted}: {error}") from None
    if found.version[:2] == BASE_PYTHON:
        return None
    name = ".".join(map(str, found.version))
    if found.prefix is None:
        raise TaskError(
            f"{task.instance_id}: its image needs Python {wanted}, and this host's ({found.executable}, "
            f"{name}) is the system's, which cannot be copied into an image; install {name} with pyenv or "
            f"uv (uv python install {name})"
        )
    digest = hashlib.sha256(found.executable.encode())
    for path in [Path(found.executable), *sorted(Path(found.prefix, "lib").glob("libpython*.so*"))]:
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    libraries = debian_libraries(found.prefix)
    return ImagePython(found.executable, found.prefix, found.version, libraries, digest.hexdigest()[:16])


def debian_libraries(prefix: str) -> tuple[str, ...]:
    """The Debian packages (this host's ``dpkg -S``) of the shared libraries outside ``prefix`` that the
    interpreter installed there links to (``ldd`` of its executables, ``libpython`` and extension modules;
    ``_tkinter`` left out: no test here draws windows, and Tk would pull in X11). Empty on a host without
    ``ldd`` or ``dpkg``: the image's import check then says what is missing."""
    root = Path(prefix)
    found = [*root.glob("bin/python*"), *root.glob("lib/libpython*.so*")]
    found += root.glob("lib/python*/lib-dynload/*.so")
    files = sorted({str(path.resolve()) for path in found if path.is_file() and "_tkinter" not in path.name})
    try:
        linked = subprocess.run(["ldd", *files], capture_output=True, text=True, timeout=120).stdout
        paths = sorted({os.path.realpath(line.split("=>")[1].split()[0]) for line in linked.splitlines()
                        if "=>" in line and line.split("=>")[1].strip().startswith("/")})  # fmt: skip
        paths = [path for path in paths if not path.startswith(str(root.resolve()) + "/")]
        owners = subprocess.run(["dpkg", "-S", *paths], capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(sorted({line.split(":")[0] for line in owners.splitlines() if ": /" in line}))


def dockerfile(
    task: SWETask,
    base: str,
    ca: bool = False,
    python: ImagePython | None = None,
    pytest_is_the_repository: bool = False,
    rebuild_requires: tuple[str, ...] = (),
) -> str:
    """The task image's Dockerfile (``ca``: the build context holds the host's CA bundle for pip;
    ``python``: the interpreter it copies as ``python/``, None for the base image's;
    ``pytest_is_the_repository``: the task's install puts its own pytest in, `own_runner`;
    ``rebuild_requires``: the repository's build requirements, kept in the venv for the offline rebuild of a
    task with ``rebuild`` commands, as a local venv keeps them)."""
    spec = task.environment
    lines = [f"FROM {base}", "COPY repo /testbed"]
    if spec.index_date:  # the build passes the dated index's address (`build_task_image`): no recipe
        lines += [f'LABEL gym_swe.index_date="{spec.index_date}"', "ARG PIP_INDEX_URL", "ARG PIP_CONFIG_FILE"]
    if python is None:
        # The base image's python and pytest serve: a pytest is asked for only by name, so the one the
        # image has satisfies it without a download.
        pin = "pytest" if spec.pytest_requirement(BASE_PYTHON) else None
        lines.append(f"RUN python3 -m venv --system-site-packages {VENV}")
    else:
        pin = None if pytest_is_the_repository else spec.pytest_requirement(python.version[:2])
        packages = " ".join(python.libraries)
        lines.append(f"COPY python {python.prefix}")
        if packages:
            lines.append(
                f"RUN dpkg -s {packages} >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq "
                f"--no-install-recommends {packages} >/dev/null && rm -rf /var/lib/apt/lists/*)"
            )
        executable = shlex.quote(python.executable)
        lines.append(f'RUN {executable} -c "{PYTHON_CHECK}" && {executable} -m venv {VENV}')
    if spec.packages or spec.install:
        lines.append(f"RUN {BUILD_TOOLS}")
    named = {value for key, value in spec.env if key in ("LANG", "LC_ALL", "LC_CTYPE")}
    for found in sorted(filter(None, map(UTF8_LOCALE.match, named)), key=lambda match: match.string):
        lines.append("RUN " + LOCALE.format(name=found["name"], locale=found.string))
    if ca and (spec.packages or spec.install or pin):
        lines += [f"COPY pip-ca.crt {IMAGE_CA}", f"ENV PIP_CERT={IMAGE_CA}"]
    requirements = spec.packages + ((pin,) if pin else ())
    lines += [f"ENV {name}={json.dumps(value)}" for name, value in spec.env]
    pip = f"{VENV}/bin/python -m pip install --quiet --disable-pip-version-check"
    if python is not None:
        lines += [f"RUN {command}" for command in pip_upgrade_commands(pip, python.version)]
    if requirements:
        packages = " ".join(shlex.quote(p) for p in requirements)
        lines.append(f"RUN {pip} {packages}")
    lines += [f"ENV PATH={VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
              f"ENV VIRTUAL_ENV={VENV}", "WORKDIR /testbed"]  # fmt: skip
    helpers = reads_setup_commit(task)
    if helpers:  # what install commands made from a conda file read, as in the local prepare jail
        lines += [f"COPY conda_env.py {CONDA_ENV_PATH}", f"COPY setup_commit {SETUP_COMMIT_TREE}"]
    lines += [f"RUN {command}" for command in spec.install]
    if spec.rebuild:
        lines += [
            f"RUN {command}"
            for command in build_requirement_commands(f"{VENV}/bin/python", list(rebuild_requires))
        ]
    if helpers:
        lines.append(f"RUN rm -rf {CONDA_ENV_PATH} {SETUP_COMMIT_TREE}")
    if spec.install:
        script = base64.b64encode(SETTLE_INSTALL.encode()).decode()  # a RUN line is one line
        lines.append(f"RUN echo {script} | base64 -d | sh")
    return "\n".join(lines) + "\n"


def reads_setup_commit(task: SWETask) -> bool:
    """Whether ``task``'s install commands read the repository at its environment_setup_commit and
    gym_swe's conda file reader (SWE-bench's xarray and matplotlib, `swebench_specs`): the build context
    then holds both, and the image has them at the local prepare jail's paths while it installs."""
    return any(
        SETUP_COMMIT_TREE in command or CONDA_ENV_PATH in command for command in task.environment.install
    )


def recipe(task: SWETask, base_id: str, python: ImagePython | None = None, own_pytest: bool = False,
           rebuild_requires: tuple[str, ...] = ()) -> str:  # fmt: skip
    """A short hash of what goes into ``task``'s image (the CA bundle is no part of it)."""
    text = dockerfile(task, base_id, python=python, pytest_is_the_repository=own_pytest,
                      rebuild_requires=rebuild_requires)  # fmt: skip
    parts = [task.instance_id, task.base_commit, text, base_id]
    if python is not None:  # the interpreter itself: a rebuilt one at the same path is a new image
        parts.append(python.fingerprint)
    if reads_setup_commit(task):
        parts += [task.environment_setup_commit, hashlib.sha256(CONDA_ENV_SCRIPT.read_bytes()).hexdigest()]
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
    python = image_python(task)
    repo = checkout(task, source)
    own_pytest = python is not None and own_runner(task, repo)
    rebuild_requires = tuple(build_requirements(repo)) if task.environment.rebuild else ()
    wanted = recipe(task, base_id, python, own_pytest, rebuild_requires)
    if not force and existing_recipe(name) == wanted:
        log(f"{name} is up to date")
        return name
    ca = host_ca_bundle()
    text = dockerfile(task, base, ca=ca is not None, python=python, pytest_is_the_repository=own_pytest,
                      rebuild_requires=rebuild_requires)  # fmt: skip
    text += f'LABEL gym_swe.recipe="{wanted}" gym_swe.task="{task.instance_id}"\n'
    with tempfile.TemporaryFile() as context:  # an interpreter is 100-300 MB: not in memory
        _write_context(context, task, text, repo, python, ca, source or RepoSource())
        log(f"building {name}" + (f" (Python {python.prefix})" if python else ""))
        from docker.errors import BuildError

        try:
            with contextlib.ExitStack() as stack:
                dated = dated_index(task.environment, text.split())  # its exact pins: the Dockerfile's
                options: dict[str, Any] = {}
                if dated is not None:  # on the host's network, to reach the index on its loopback
                    index = stack.enter_context(dated)
                    options = {"network_mode": "host", "buildargs": {
                        "PIP_INDEX_URL": index.url, "PIP_CONFIG_FILE": os.devnull}}  # fmt: skip
                client.images.build(fileobj=context, custom_context=True, tag=name, rm=True, pull=False,
                                    **options)  # fmt: skip
                if dated is not None:
                    honoured(index)
        except BuildError as error:
            # docker-py's message names the failed RUN line only; what went wrong is in the build's own output
            log_lines = (chunk.get("stream") or chunk.get("error") or "" for chunk in error.build_log)
            output = "".join(map(str, log_lines))
            raise TaskError(f"building {name} failed: {error.msg}\n{output[-3000:]}") from None
    return name


def _write_context(context: Any, task: SWETask, text: str, repo: Path, python: ImagePython | None,
                   ca: Path | None, source: RepoSource) -> None:  # fmt: skip
    """The build context of ``task``'s image (its Dockerfile: ``text``) into ``context`` (a file), rewound."""
    with tarfile.open(fileobj=context, mode="w") as archive:
        if ca is not None:
            archive.add(str(ca), arcname="pip-ca.crt")
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(text.encode())
        archive.addfile(info, io.BytesIO(text.encode()))
        archive.add(repo, arcname="repo")
        if python is not None:
            archive.add(python.prefix, arcname="python", filter=_without_site_packages)
        if reads_setup_commit(task):
            archive.add(str(CONDA_ENV_SCRIPT), arcname="conda_env.py")
            with tempfile.TemporaryDirectory() as scratch:
                archive.add(str(setup_commit_tree(task, Path(scratch), source)), arcname="setup_commit")
    context.seek(0)


def _without_site_packages(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """An interpreter's installation without what was installed into it (``lib/pythonX.Y/site-packages/*``):
    the task's venv does not see it, and it may hold this host's own ``.pth`` hooks."""
    parts = member.name.split("/")
    inside = len(parts) > 4 and parts[1] == "lib" and parts[3] == "site-packages"
    return None if inside else member


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
