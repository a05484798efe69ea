"""Harbor task folders (Terminal-Bench 2, SWE-bench Pro and the RL stacks that read them) as gym_swe tasks.

A Harbor task is a folder: ``task.toml`` (timeouts, resources, network), ``instruction.md`` (what the agent
is told), ``environment/`` (a Dockerfile and its build context), ``tests/test.sh`` (the verifier, which
writes the reward to ``/logs/verifier/reward.txt`` or ``reward.json``) and optionally ``solution/solve.sh``
(the oracle). This module reads and checks them; `gym_swe.envs.harbor` plays them and
`gym_swe.grading.harbor` runs their verifiers.

Every key of ``task.toml`` is checked against Harbor's schema (``harbor.models.task.config.TaskConfig``,
schema 1.4): an unknown key, or a value gym_swe cannot honour (GPUs, a compose file, a network allowlist, a
non-root user), fails where the tasks load, in one line naming the file and the field.
"""

from __future__ import annotations

import functools
import hashlib
import math
import posixpath
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gym_swe.errors import TaskError, TaskFormatError
from gym_swe.tasks.base import TaskSet

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, from PyPI
    import tomli as tomllib  # type: ignore[import-not-found, no-redef, unused-ignore]

BUNDLED_DIR = Path(__file__).resolve().parent / "data" / "harbor"
TASK_FILE = "task.toml"
INSTRUCTION_FILE = "instruction.md"
ENVIRONMENT_DIR = "environment"
TESTS_DIR = "tests"
TEST_SCRIPT = "test.sh"
SOLUTION_DIR = "solution"
SOLVE_SCRIPT = "solve.sh"
DEFAULT_WORKDIR = "/app"
DEFAULT_VERIFIER_TIMEOUT = 600.0
DEFAULT_BUILD_TIMEOUT = 600.0
MAX_INSTRUCTION_CHARS = 200_000

# Harbor's schema (TaskConfig 1.4), table by table: the keys a task.toml may hold. A key outside these is
# a typo or a newer Harbor's field, either way one gym_swe would silently ignore: refused.
TOP_KEYS = frozenset({"version", "schema_version", "task", "metadata", "verifier", "agent", "environment",
                      "solution", "source", "multi_step_reward_strategy", "steps", "artifacts"})  # fmt: skip
NETWORK_KEYS = frozenset({"network_mode", "allowed_hosts"})
VERIFIER_KEYS = NETWORK_KEYS | {"timeout_sec", "env", "user", "environment_mode", "environment", "collect"}
AGENT_KEYS = NETWORK_KEYS | {"timeout_sec", "user"}
VERIFIER_MODES = ("shared", "separate")
"""Both are played as gym_swe grades: the verifier in a fresh sandbox of the task's environment holding the
agent's work dir. "separate" (a fresh copy of the environment, the task's artifacts carried over) is that, for
artifacts inside the work dir."""
ENVIRONMENT_KEYS = NETWORK_KEYS | {
    "build_timeout_sec", "docker_image", "os", "cpus", "memory_mb", "storage_mb", "gpus", "gpu_types", "tpu",
    "mcp_servers", "env", "skills_dir", "healthcheck", "workdir", "allow_internet", "memory", "storage",
}  # fmt: skip
SOLUTION_KEYS = frozenset({"env"})
TASK_KEYS = frozenset({"name", "version", "description", "authors", "keywords"})
TABLES = {"verifier": VERIFIER_KEYS, "agent": AGENT_KEYS, "environment": ENVIRONMENT_KEYS,
          "solution": SOLUTION_KEYS, "task": TASK_KEYS}  # fmt: skip
NETWORK_MODES = ("no-network", "public", "allowlist")
ROOT_USERS = (None, "root", 0, "0")


@dataclass(frozen=True)
class HarborTask:
    """One Harbor task folder, read and checked."""

    task_id: str
    """The folder's name (the id ``reset(options={"task_id": ...})`` takes)."""
    path: Path
    instruction: str
    workdir: str
    """Where the agent works and test.sh starts: ``[environment] workdir``, else the Dockerfile's last
    WORKDIR, else /app."""
    verifier_timeout: float
    build_timeout: float
    agent_timeout: float | None
    """``[agent] timeout_sec``: the agent's time for the episode (`HarborEnv` sums its commands' wall time),
    or None (Harbor's default: no bound)."""
    allow_internet: bool
    """Only when the task says so (``network_mode = "public"`` or ``allow_internet = true``): gym_swe's
    sandboxes have no network by default, whatever Harbor's default is."""
    environment_env: Mapping[str, str] = field(default_factory=dict)
    verifier_env: Mapping[str, str] = field(default_factory=dict)
    solution_env: Mapping[str, str] = field(default_factory=dict)
    docker_image: str | None = None
    """``[environment] docker_image``: a prebuilt image to run instead of building ``environment/``."""
    cpus: float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def dockerfile(self) -> Path | None:
        path = self.path / ENVIRONMENT_DIR / "Dockerfile"
        return path if path.is_file() else None

    @property
    def has_environment(self) -> bool:
        """Whether the task brings an environment of its own (a Dockerfile or an image): docker only."""
        return self.dockerfile is not None or self.docker_image is not None

    @property
    def tests_dir(self) -> Path:
        return self.path / TESTS_DIR

    @property
    def solution_dir(self) -> Path | None:
        path = self.path / SOLUTION_DIR
        return path if (path / SOLVE_SCRIPT).is_file() else None

    @functools.cached_property
    def digest(self) -> str:
        """A hash of every file of the task (names, modes and contents): what its sealed checks are keyed by,
        so an edited task is re-sealed. Read once per loaded task, not at every grade."""
        return folder_digest(self.path)

    @functools.cached_property
    def environment_digest(self) -> str:
        """The same of ``environment/`` alone: what its image is keyed by (read once, not at every reset)."""
        return folder_digest(self.path / ENVIRONMENT_DIR)


def folder_digest(root: Path) -> str:
    """sha256 over the relative names, executable bits and contents of every file under ``root`` (links by
    their target), in name order."""
    hasher = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if path.is_symlink():
            hasher.update(f"L {relative} -> {path.readlink()}\n".encode())
        elif path.is_file():
            executable = "x" if path.stat().st_mode & 0o111 else "-"
            hasher.update(f"F {relative} {executable} {path.stat().st_size}\n".encode())
            hasher.update(path.read_bytes())
    return hasher.hexdigest()


def load_harbor_tasks(source: str | Path) -> TaskSet[HarborTask]:
    """The Harbor tasks of ``source``: ``"bundled"``, a task folder, or a folder of task folders."""
    if source == "bundled":
        root = BUNDLED_DIR
    else:
        root = Path(source).expanduser()
        if not root.is_dir():
            raise TaskError(
                f"tasks={str(source)!r}: no such folder; Harbor-v0 takes 'bundled', a Harbor task folder "
                "(task.toml, instruction.md, tests/test.sh) or a folder of them"
            )
    if (root / TASK_FILE).exists():
        folders = [root]
    else:
        folders = sorted(
            child for child in root.iterdir() if child.is_dir() and not child.name.startswith(".")
        )
        if not any((folder / TASK_FILE).exists() for folder in folders):
            raise TaskFormatError(
                f"{root}: not a Harbor task (no {TASK_FILE}) nor a folder of Harbor tasks (no folder in it "
                f"has a {TASK_FILE})"
            )
        folders = [folder for folder in folders if (folder / TASK_FILE).exists()]
    return TaskSet([read_task(folder) for folder in folders], str(source))


def read_task(folder: Path) -> HarborTask:
    """One task folder, checked: a missing file, an unknown key or a value gym_swe cannot honour is a
    `TaskFormatError` naming the file and the field."""
    folder = folder.resolve()
    task_file = folder / TASK_FILE
    for required in (task_file, folder / INSTRUCTION_FILE, folder / TESTS_DIR / TEST_SCRIPT):
        if not required.is_file():
            raise TaskFormatError(f"{required}: missing (a Harbor task needs {required.relative_to(folder)})")
    try:
        config = tomllib.loads(task_file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise TaskFormatError(f"{task_file}: not valid TOML: {error}") from None
    check_keys(task_file, config)
    environment = config.get("environment", {})
    verifier = config.get("verifier", {})
    agent = config.get("agent", {})
    refuse_what_cannot_be_honoured(folder, task_file, config)
    instruction = (folder / INSTRUCTION_FILE).read_text(encoding="utf-8", errors="replace")
    if not instruction.strip():
        raise TaskFormatError(f"{folder / INSTRUCTION_FILE}: empty (it is what the agent is told)")
    if len(instruction) > MAX_INSTRUCTION_CHARS:
        raise TaskFormatError(f"{folder / INSTRUCTION_FILE}: over {MAX_INSTRUCTION_CHARS} characters")
    dockerfile = folder / ENVIRONMENT_DIR / "Dockerfile"
    workdir = environment.get("workdir") or (dockerfile_workdir(dockerfile) if dockerfile.is_file() else None)
    workdir = checked_path(task_file, "environment.workdir", workdir or DEFAULT_WORKDIR)
    if verifier.get("environment_mode") == "separate":
        check_artifacts_carried(task_file, config.get("artifacts", []), workdir)
    return HarborTask(
        task_id=folder.name,
        path=folder,
        instruction=instruction,
        workdir=workdir,
        verifier_timeout=seconds(
            task_file, "verifier.timeout_sec", verifier.get("timeout_sec"), DEFAULT_VERIFIER_TIMEOUT
        ),
        build_timeout=seconds(
            task_file,
            "environment.build_timeout_sec",
            environment.get("build_timeout_sec"),
            DEFAULT_BUILD_TIMEOUT,
        ),
        agent_timeout=optional_seconds(task_file, "agent.timeout_sec", agent.get("timeout_sec")),
        allow_internet=allows_internet(task_file, environment),
        environment_env=string_map(task_file, "environment.env", environment.get("env")),
        verifier_env=string_map(task_file, "verifier.env", verifier.get("env")),
        solution_env=string_map(task_file, "solution.env", config.get("solution", {}).get("env")),
        docker_image=environment.get("docker_image"),
        cpus=number(task_file, "environment.cpus", environment.get("cpus")),
        memory_mb=megabytes(task_file, environment, "memory"),
        storage_mb=megabytes(task_file, environment, "storage"),
        metadata=dict(config.get("metadata", {})),
    )


def check_keys(task_file: Path, config: Mapping[str, Any]) -> None:
    for key in config:
        if key not in TOP_KEYS:
            raise TaskFormatError(
                f"{task_file}: unknown key {key!r}; Harbor's task.toml has {sorted(TOP_KEYS)}"
            )
    for table, allowed in TABLES.items():
        value = config.get(table, {})
        if not isinstance(value, Mapping):
            raise TaskFormatError(f"{task_file}: [{table}] must be a table, got {type(value).__name__}")
        for key in value:
            if key not in allowed:
                raise TaskFormatError(
                    f"{task_file}: unknown key {table}.{key}; Harbor's [{table}] has {sorted(allowed)}"
                )
    if not isinstance(config.get("metadata", {}), Mapping):
        raise TaskFormatError(f"{task_file}: [metadata] must be a table")


def refuse_what_cannot_be_honoured(folder: Path, task_file: Path, config: Mapping[str, Any]) -> None:
    """What a task asks for that gym_swe's sandboxes cannot give it: refused, never silently dropped."""
    environment = config.get("environment", {})
    verifier = config.get("verifier", {})
    agent = config.get("agent", {})
    cannot = "cannot be honoured here"
    for key, why in (
        ("gpus", "gym_swe's sandboxes have no GPUs"),
        ("gpu_types", "gym_swe's sandboxes have no GPUs"),
        ("tpu", "gym_swe's sandboxes have no TPUs"),
        ("mcp_servers", "gym_swe gives the agent its own tools (bash, str_replace_editor, submit)"),
        ("healthcheck", "gym_swe starts the environment's container itself, without a health check"),
        ("skills_dir", "gym_swe gives the agent its own tools"),
    ):
        if environment.get(key):
            raise TaskFormatError(f"{task_file}: environment.{key} {cannot}: {why}")
    if environment.get("os", "linux") != "linux":
        raise TaskFormatError(
            f"{task_file}: environment.os={environment['os']!r} {cannot}: Linux sandboxes only"
        )
    for table, values in (("environment", environment), ("verifier", verifier), ("agent", agent)):
        if values.get("network_mode") == "allowlist" or values.get("allowed_hosts"):
            raise TaskFormatError(
                f"{task_file}: {table}.network_mode 'allowlist' {cannot}: a sandbox has the network or none"
            )
        if "network_mode" in values and values["network_mode"] not in NETWORK_MODES:
            raise TaskFormatError(
                f"{task_file}: {table}.network_mode={values['network_mode']!r}; Harbor has {NETWORK_MODES}"
            )
    for table, values in (("verifier", verifier), ("agent", agent)):
        if values.get("user") not in ROOT_USERS:
            raise TaskFormatError(
                f"{task_file}: {table}.user={values['user']!r} {cannot}: commands run as the image's root"
            )
    if verifier.get("environment") or verifier.get("collect"):
        raise TaskFormatError(
            f"{task_file}: a verifier environment of its own (verifier.environment, verifier.collect) "
            f"{cannot}: the verifier runs in a fresh sandbox of the task's own environment"
        )
    if verifier.get("environment_mode", "shared") not in VERIFIER_MODES:
        raise TaskFormatError(
            f"{task_file}: verifier.environment_mode={verifier['environment_mode']!r}; Harbor has "
            f"{VERIFIER_MODES}"
        )
    if config.get("steps"):
        raise TaskFormatError(f"{task_file}: steps (multi-step tasks) {cannot}: one instruction per episode")
    for name in ("docker-compose.yaml", "docker-compose.yml", "compose.yaml"):
        if (folder / ENVIRONMENT_DIR / name).exists():
            raise TaskFormatError(
                f"{folder / ENVIRONMENT_DIR / name}: compose environments {cannot}: one container per "
                "sandbox (give environment/Dockerfile)"
            )


def check_artifacts_carried(task_file: Path, artifacts: object, workdir: str) -> None:
    """A separate verifier sees the task's artifacts alone; gym_swe's carries the work dir (the agent's files
    there, nothing else of its sandbox): an artifact outside it would not reach the verifier."""
    if not isinstance(artifacts, list):
        raise TaskFormatError(f"{task_file}: artifacts must be a list, got {artifacts!r}")
    for artifact in artifacts:
        source = artifact.get("source") if isinstance(artifact, Mapping) else artifact
        if not isinstance(source, str) or not source:
            raise TaskFormatError(
                f"{task_file}: an artifact must be a path or a table with a source: {artifact!r}"
            )
        path = posixpath.normpath(source if source.startswith("/") else posixpath.join(workdir, source))
        if path != workdir and not path.startswith(workdir.rstrip("/") + "/"):
            raise TaskFormatError(
                f"{task_file}: artifact {source!r} cannot be honoured with verifier.environment_mode "
                f"'separate': gym_swe's verifier gets the agent's work dir ({workdir}) and nothing outside it"
            )


def allows_internet(task_file: Path, environment: Mapping[str, Any]) -> bool:
    allow = environment.get("allow_internet")
    if allow is not None and not isinstance(allow, bool):
        raise TaskFormatError(f"{task_file}: environment.allow_internet must be true or false, got {allow!r}")
    mode = environment.get("network_mode")
    if allow is not None and mode is not None and allow != (mode == "public"):
        raise TaskFormatError(
            f"{task_file}: environment.allow_internet={allow} contradicts environment.network_mode={mode!r}"
        )
    return mode == "public" or allow is True


DOCKERFILE_WORKDIR = re.compile(r"^\s*WORKDIR\s+(\S+)\s*$", re.IGNORECASE | re.MULTILINE)


def dockerfile_workdir(dockerfile: Path) -> str | None:
    """The last WORKDIR of a Dockerfile (the container's start directory), when it is a plain absolute
    path; None when there is none (or it uses build variables gym_swe does not expand)."""
    found = DOCKERFILE_WORKDIR.findall(dockerfile.read_text(encoding="utf-8", errors="replace"))
    if not found:
        return None
    last = found[-1].strip("\"'")
    return last if last.startswith("/") and "$" not in last else None


def checked_path(task_file: Path, name: str, value: object) -> str:
    if not isinstance(value, str) or not value.startswith("/") or "\x00" in value or ".." in value.split("/"):
        raise TaskFormatError(f"{task_file}: {name} must be an absolute path, got {value!r}")
    return value.rstrip("/") or "/"


def seconds(task_file: Path, name: str, value: object, default: float) -> float:
    if value is None:
        return default
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise TaskFormatError(f"{task_file}: {name} must be a positive number of seconds, got {value!r}")
    return float(value)


def optional_seconds(task_file: Path, name: str, value: object) -> float | None:
    return None if value is None else seconds(task_file, name, value, 0.0)


def number(task_file: Path, name: str, value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise TaskFormatError(f"{task_file}: {name} must be a positive number, got {value!r}")
    return float(value)


def whole(task_file: Path, name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise TaskFormatError(f"{task_file}: {name} must be a positive whole number, got {value!r}")
    return value


SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([GMK])\s*$", re.IGNORECASE)


def megabytes(task_file: Path, environment: Mapping[str, Any], what: str) -> int | None:
    """``[environment] {what}_mb``, or Harbor's older ``{what} = "2G"`` spelling of it (both must agree)."""
    given = whole(task_file, f"environment.{what}_mb", environment.get(f"{what}_mb"))
    legacy = environment.get(what)
    if legacy is None:
        return given
    match = SIZE.match(legacy) if isinstance(legacy, str) else None
    if match is None:
        raise TaskFormatError(
            f"{task_file}: environment.{what} must be a size like '2G' or '512M', got {legacy!r}"
        )
    scale = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}[match.group(2).upper()]
    value = int(float(match.group(1)) * scale)
    if given is not None and given != value:
        raise TaskFormatError(f"{task_file}: environment.{what}={legacy!r} contradicts {what}_mb={given}")
    return value


def string_map(task_file: Path, name: str, value: object) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(key, str) and isinstance(item, str) for key, item in value.items()
    ):
        raise TaskFormatError(f"{task_file}: {name} must be a table of strings, got {value!r}")
    return dict(value)
