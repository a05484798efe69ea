"""gym_swe's tasks written as Harbor task folders, whose verifier is gym_swe's own grader.

One folder per task (``OUT/<task id>``, the id made safe for a path):

- ``instruction.md``: the env's opening user message (`ToolEnv.opening_messages`), what the agent is told;
- ``task.toml``: the env's timeouts, ``allow_internet = false``, the work dir, ``[agent] user = "agent"``
  (an unprivileged user: see docs/integrations/harbor-export.md for what that buys and what it cannot), a
  verifier box of its own (``environment_mode = "separate"``, the work dir carried over as the artifact);
- ``environment/``: a Dockerfile ``FROM`` the image the env's docker sandbox uses for the task
  (``gym-swe-base:latest`` for CodeDebug, the task's ``gym-swe-task:...`` image for SWE tasks), which installs
  gym_swe offline into its own venv (``/opt/gym_swe/venv``) from wheels put beside it now (gym_swe's, built
  from this source tree, and its dependencies for the image's Python), keeps a root-only pristine copy of
  the work dir (``/opt/gym_swe/pristine/tree``) and makes the users grading needs;
- ``tests/``: ``task.json`` (the task, with its hidden tests, test patch, gold patch and test ids, and how
  to grade it) and ``test.sh``, which runs `gym_swe.grading.in_container` and writes
  ``/logs/verifier/reward.txt``;
- ``solution/solve.sh``: writes the gold fix into the work dir.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gym_swe.errors import ConfigError, TaskError
from gym_swe.integrations.own_wheel import own_wheel

logger = logging.getLogger(__name__)

ENVS = ("CodeDebug-v0", "SWEGym-v0")
VENV = "/opt/gym_swe/venv"
AGENT_USER = "agent"
VERIFIER_TIMEOUT = {"CodeDebug-v0": 300.0}
"""Seconds the verifier may take, beyond the grade's own timeout (CodeDebug: its ``grade_timeout``)."""
AGENT_TIMEOUT = 3600.0
"""Seconds an agent may work: the env bounds turns, not time, so this is Harbor's usual hour."""


@dataclass(frozen=True)
class Exported:
    """One task folder written."""

    task_id: str
    path: Path


def folder_name(task_id: str) -> str:
    """A task id as a folder name (``HumanEval/3`` -> ``HumanEval__3``)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", task_id.replace("/", "__"))


def export_tasks(
    env_id: str,
    source: str,
    out: str | Path,
    task_ids: Sequence[str] = (),
    wheels: str | Path | None = None,
    build: bool = False,
) -> list[Exported]:
    """Write the tasks of ``env_id``/``source`` (all, or ``task_ids``) as Harbor task folders under ``out``.

    ``wheels``: a directory of wheels for gym_swe's dependencies (for an offline export); else they are
    downloaded for the image's Python with pip, from the index pip is configured with. ``build``: also
    build each folder's image here and name it in its task.toml (``[environment] docker_image``), for
    runtimes that run an image rather than build a Dockerfile (verifiers' Harbor taskset).
    """
    if env_id not in ENVS:
        raise ConfigError(f"env {env_id!r} cannot be exported; choose one of {', '.join(ENVS)}")
    import gymnasium

    import gym_swe  # noqa: F401  (registers the envs)

    env: Any = gymnasium.make(env_id, tasks=source, sandbox="docker").unwrapped
    unknown = [task_id for task_id in task_ids if task_id not in env.tasks]
    if unknown:
        raise ConfigError(f"unknown task id(s) {unknown} in {source!r}")
    tasks = [env.tasks.get(task_id) for task_id in task_ids] if task_ids else list(env.tasks)
    out = Path(out)
    written = []
    # Every task's image and its Python first: one that is missing fails before anything is written.
    images = [(task, image, image_python(image)) for task in tasks for image in [base_image(env, task)]]
    with tempfile.TemporaryDirectory(prefix="gym_swe-export-") as scratch:
        wheelhouses: dict[str, Path] = {}
        for python in sorted({python for _, _, python in images}):
            wheelhouses[python] = build_wheelhouse(Path(scratch) / python, python, wheels)
        out.mkdir(parents=True, exist_ok=True)
        for task, image, python in images:
            folder = out / folder_name(task.task_id)
            if folder.exists():
                shutil.rmtree(folder)
            write_task(env, env_id, task, image, wheelhouses[python], folder)
            if build:
                tag = build_image(folder)
                with (folder / "task.toml").open("a") as config:
                    config.write(f'docker_image = "{tag}"\n')
                if env_id == "SWEGym-v0":
                    calibrate_in_image(folder, tag)
            logger.info("exported %s -> %s", task.task_id, folder)
            written.append(Exported(task.task_id, folder))
    return written


# -- images and wheels -------------------------------------------------------------------------------------
def base_image(env: Any, task: Any) -> str:
    """The image the env's docker sandbox runs the task in (it must exist here: the export asks it which
    Python it has)."""
    from gym_swe.sandbox.docker import BASE_IMAGE

    if not hasattr(env, "image_for"):
        return BASE_IMAGE
    image: str = env.image_for(task)
    if env.strip_history and not image.startswith(("gym-swe-task:", "gym-swe-stripped:")):
        from gym_swe.tasks.images import stripped_image

        image = stripped_image(task, image, log=logger.info)
    return image


def image_python(image: str) -> str:
    """``X.Y`` of the image's ``python3``, which gym_swe's venv is made with."""
    run = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "--entrypoint", "python3", image, "-c",
         "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if run.returncode != 0:
        hint = " (build it: gym-swe images build --tasks SOURCE)" if image.startswith("gym-swe-task:") else ""
        raise TaskError(f"image {image}: cannot run its python3{hint}: {run.stderr.strip()[-300:]}")
    version = run.stdout.strip()
    if tuple(int(part) for part in version.split(".")) < (3, 10):
        raise TaskError(f"image {image}: its python3 is {version}; gym_swe's verifier needs 3.10 or later")
    return version


def build_wheelhouse(dest: Path, python: str, wheels: str | Path | None) -> Path:
    """gym_swe's wheel (`own_wheel`) and those of its dependencies for ``python``."""
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    wheel = own_wheel(dest)
    found = ["--no-index", "--find-links", str(wheels)] if wheels is not None else []
    run(
        [*pip, "download", "--dest", str(dest), "--only-binary=:all:", "--python-version", python,
         "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_28_x86_64", *found, str(wheel)],
        f"download gym_swe's dependencies for Python {python}",
    )  # fmt: skip
    return dest


def build_image(folder: Path) -> str:
    """Build ``folder``'s environment here; its tag (``gym-swe-harbor-export:<folder>-<content digest>``)."""
    digest = hashlib.sha256()
    for path in sorted((folder / "environment").rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    tag = f"gym-swe-harbor-export:{folder.name.lower()[:100]}-{digest.hexdigest()[:12]}"
    # no network: the wheels are beside the Dockerfile, and nothing else is fetched
    context = str(folder / "environment")
    run(["docker", "build", "-q", "--network", "none", "-t", tag, context], f"build {tag}")
    return tag


def calibrate_in_image(folder: Path, tag: str) -> None:
    """Learn the task's sealed checks and decoy inputs once, in a container of its built image with no
    network, by the verifier's own code (``in_container --calibrate``), and keep them in tests/task.json
    (root's alone in the container, as the gold patch is): each verification then grades at once instead
    of first running the tests three times and more with the gold patch."""
    spec_path = folder / "tests" / "task.json"
    with tempfile.TemporaryDirectory(prefix="gym_swe-calibrate-") as out:
        os.chmod(out, 0o777)  # the container's root writes there, whatever this process's user
        run(
            ["docker", "run", "--rm", "--network", "none", "-v", f"{folder / 'tests'}:/tests:ro",
             "-v", f"{out}:/out", "--entrypoint", f"{VENV}/bin/python", tag, "-I", "-m",
             "gym_swe.grading.in_container", "--calibrate", "/tests/task.json", "/out/seals.json"],
            f"learn {folder.name}'s sealed checks in {tag}",
        )  # fmt: skip
        learned = json.loads((Path(out) / "seals.json").read_text())
    spec = json.loads(spec_path.read_text())
    spec_path.write_text(json.dumps({**spec, "sealed": learned["sealed"], "inputs": learned["inputs"]}))


def run(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise TaskError(f"could not {what}: {(done.stderr or done.stdout).strip()[-800:]}")


# -- one folder ---------------------------------------------------------------------------------------------
def write_task(env: Any, env_id: str, task: Any, image: str, wheelhouse: Path, folder: Path) -> None:
    function = env_id == "CodeDebug-v0"
    workdir = "/workspace" if function else "/testbed"
    (folder / "environment" / "wheels").mkdir(parents=True)
    for wheel in wheelhouse.glob("*.whl"):
        shutil.copy2(wheel, folder / "environment" / "wheels" / wheel.name)
    (folder / "tests").mkdir()
    (folder / "solution").mkdir()
    user = env.opening_messages(task.task_id)[1]["content"]
    # A Harbor agent has no submit tool: its episode ends when it stops, and the work dir is graded then.
    user = user.replace("call submit.", "stop: the work dir is graded as you leave it.")
    (folder / "instruction.md").write_text(user.rstrip("\n") + "\n")
    if function:
        spec: dict[str, Any] = {
            "kind": "function", "task": asdict(task), "workdir": workdir, "solution": "solution.py",
            "reward": "binary", "test_timeout": env.test_timeout, "grade_timeout": env.grade_timeout,
        }  # fmt: skip
        verifier_timeout = env.grade_timeout + VERIFIER_TIMEOUT[env_id]
        starting = env.starting_files(task.task_id)
        solve = f"cat > {workdir}/solution.py <<'GYM_SWE_GOLD'\n{task.fixed_code}GYM_SWE_GOLD\n"
    else:
        from gym_swe.grading.in_container import task_json

        spec = {
            "kind": "repository", "task": task_json(task), "workdir": workdir, "reward": "binary",
            "test_timeout": env.test_timeout, "integrity": env.integrity,
        }  # fmt: skip
        # the gold patch and calibration (three test runs) and the grade: each within the test timeout
        verifier_timeout = 5 * env.test_timeout
        starting = {}
        solve = (
            f"cd {workdir}\ngit apply --whitespace=nowarn <<'GYM_SWE_GOLD'\n{task.patch}GYM_SWE_GOLD\n"
            if task.patch.endswith("\n")
            else f"cd {workdir}\ngit apply <<'GYM_SWE_GOLD'\n{task.patch}\nGYM_SWE_GOLD\n"
        )
    (folder / "environment" / "Dockerfile").write_text(dockerfile(image, workdir, starting, function))
    (folder / "tests" / "task.json").write_text(json.dumps(spec))
    (folder / "tests" / "test.sh").write_text(TEST_SH)
    (folder / "solution" / "solve.sh").write_text(f"#!/bin/bash\nset -euo pipefail\n{solve}")
    (folder / "task.toml").write_text(task_toml(env_id, task.task_id, workdir, verifier_timeout))


def dockerfile(image: str, workdir: str, starting: dict[str, str], function: bool) -> str:
    lines = [
        "# Made by gym-swe tasks export: the task's gym_swe image, gym_swe's grader in its own venv.",
        f"FROM {image}",
        "USER root",
        "COPY wheels/ /opt/gym_swe/wheels/",
        f"RUN python3 -m venv {VENV} && {VENV}/bin/pip install -q --no-index "
        "--find-links /opt/gym_swe/wheels gym-swe && rm -rf /opt/gym_swe/wheels",
        # the agent's user, and the two the grader runs commands as (no login shell: nothing logs in)
        f"RUN useradd -m -s /bin/bash {AGENT_USER} && useradd -M -s /usr/sbin/nologin gymswe-grader "
        "&& useradd -M -s /usr/sbin/nologin gymswe-reader",
        f"RUN mkdir -p {workdir}",
        # /tests exists before the verifier's files are put in it, root's alone: a process the agent left
        # running cannot read them in the moment before test.sh starts (and kills it)
        "RUN mkdir -p /tests /logs/verifier && chmod 700 /tests",
    ]
    for name, text in starting.items():
        script = f"import sys; open(sys.argv[1], 'w').write({json.dumps(text)})"
        lines.append(f"RUN python3 -c {shlex.quote(script)} {workdir}/{name}")
    lines += [
        # the pristine tree, root's alone: grading diffs against it and grades in copies of it
        f"RUN mkdir -p /opt/gym_swe/pristine && cp -a {workdir} /opt/gym_swe/pristine/tree "
        "&& chmod 700 /opt/gym_swe/pristine",
        f"RUN chown -R {AGENT_USER}:{AGENT_USER} {workdir}",
        f"WORKDIR {workdir}",
    ]
    if not function:
        lines.insert(3, "RUN git config --system --add safe.directory '*'")
    return "\n".join(lines) + "\n"


TEST_SH = """#!/bin/bash
# gym_swe's grader, from its own venv (the image's), as root; it writes /logs/verifier/reward.txt.
chmod 700 /tests
mkdir -p /logs/verifier
exec /opt/gym_swe/venv/bin/python -I -m gym_swe.grading.in_container /tests/task.json
"""


def task_toml(env_id: str, task_id: str, workdir: str, verifier_timeout: float) -> str:
    # The verifier in a box of its own where the runtime gives one (verifiers' Harbor taskset, Harbor's trial
    # runner): a fresh container of the same image holding only the work dir, carried over as an artifact
    # after the agent ends, so nothing the agent left running sees the tests being staged (verifiers stages
    # them in a world-readable /tmp/tests.tgz first). Runtimes that ignore it (TRL's HarborEnv) grade in the
    # agent's box.
    return f"""version = "1.0"
artifacts = [{json.dumps(workdir)}]

[metadata]
source = "gym_swe"
env = "{env_id}"
task_id = {json.dumps(task_id)}

[verifier]
timeout_sec = {float(verifier_timeout)}
environment_mode = "separate"

[agent]
timeout_sec = {AGENT_TIMEOUT}
user = "{AGENT_USER}"

[environment]
build_timeout_sec = 600.0
cpus = 1
memory_mb = 4096
storage_mb = 10240
allow_internet = false
workdir = "{workdir}"
"""
