"""Repository-level tasks in the SWE-bench / SWE-Gym schema.

Sources: ``"bundled"`` (12 tasks over 3 small repositories written for gym_swe, shipped as git bundles),
``"swe-gym"``, ``"swe-gym-lite"``, ``"swe-bench-lite"`` (and its dev split, ``"swe-bench-lite-dev"``),
``"swe-bench-verified"`` (through ``datasets``), or
a path to a .jsonl/.parquet file in that schema. FAIL_TO_PASS / PASS_TO_PASS may be lists or JSON-encoded
strings (as in the SWE-bench parquet files).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from gym_swe.errors import TaskFormatError, TaskRefused
from gym_swe.tasks.base import TaskSet, load_source, read_hub_rows, read_rows, require_fields
from gym_swe.tasks.dated_index import parse_date
from gym_swe.tasks.id_formats import FORMATS, runner_name, unreadable
from gym_swe.tasks.swebench_specs import swebench_environment
from gym_swe.tasks.test_ids import is_log_fragment

# Hugging Face datasets behind the named sources: (repository, config, split).
HUB_SOURCES = {
    "swe-gym": ("SWE-Gym/SWE-Gym", None, "train"),
    "swe-gym-lite": ("SWE-Gym/SWE-Gym-Lite", None, "train"),
    "swe-bench-lite": ("SWE-bench/SWE-bench_Lite", None, "test"),
    "swe-bench-lite-dev": ("SWE-bench/SWE-bench_Lite", None, "dev"),
    "swe-bench-verified": ("SWE-bench/SWE-bench_Verified", None, "test"),
}
logger = logging.getLogger("gym_swe")
REQUIRED = ("instance_id", "repo", "base_commit", "problem_statement", "test_patch")


ENVIRONMENT_KEYS = ("python", "packages", "install", "rebuild", "env", "index_date")
# The pytest a task environment gets when its packages name none, by the interpreter's (major, minor): the
# newest release that still supports it.
DEFAULT_PYTEST = ((3, 8), "pytest==8.3.5"), ((3, 7), "pytest==7.4.4"), ((3, 6), "pytest==7.0.1")
OLDEST_PYTEST = "pytest==6.2.5"
SCM_VERSION = "SETUPTOOLS_SCM_PRETEND_VERSION"


@dataclass(frozen=True)
class Environment:
    """How a task's environment is set up for local sandboxes (docker images carry their own).

    In a record it is the ``environment`` field, an object (or a JSON string of one), every key optional:

        {"python": "3.9", "packages": ["pytest==7.4.4", "numpy<2"],
         "install": ["pip install -e ."], "env": {"SETUPTOOLS_SCM_PRETEND_VERSION": "5.4.0"}}

    A record without one gets the swebench package's setup for its repository and version where swebench
    is installed (`gym_swe.tasks.swebench_specs`), else these defaults. docs/swebench.md has a worked example.
    """

    python: str = "python3"
    """The interpreter: a version (``"3.9"``: ``python3.9`` on PATH, else a uv-managed Python), a command
    name on PATH, or a path. An interpreter outside ``/usr`` is bound read-only into every jail."""
    packages: tuple[str, ...] = ()
    """pip requirements installed into the task's venv, which holds nothing else. Without a pytest among
    them, a pinned one is added (`pytest_requirement`)."""
    install: tuple[str, ...] = ()
    """Commands run in the checkout at base_commit after that (e.g. ``pip install -e .``). What they build
    (``_version.py``, ``*.egg-info``, compiled extensions) stays in the prepared checkout."""
    rebuild: tuple[str, ...] = ()
    """Commands that build again, in place, what the install built from the repository's compiled sources
    (``python setup.py build_ext --inplace``): the grader runs them in the grading sandbox, with no network
    and a bounded time, before the tests, when the agent's diff changes such a source (`COMPILED_SUFFIXES`),
    as SWE-bench's harness runs the install again. What they build is never the agent's change."""
    env: tuple[tuple[str, str], ...] = ()
    """Environment variables for the install commands, the episodes and grading (sorted pairs). Records
    with a ``version`` get ``SETUPTOOLS_SCM_PRETEND_VERSION`` set to it unless they set it themselves."""

    index_date: str = ""
    """``YYYY-MM-DD``: pip resolves every install command against the index as it was then
    (`gym_swe.tasks.dated_index`), releases a requirement pins exactly excepted; empty: today's index.
    Environments from swebench's tables get `SWEBENCH_IMAGES_DATE`, as the task's own image has them."""

    @property
    def variables(self) -> dict[str, str]:
        return dict(self.env)

    def pytest_requirement(self, version: tuple[int, int]) -> str | None:
        """The pytest pin added for an interpreter of ``version``; None when ``packages`` names one."""
        for requirement in self.packages:
            name = requirement.split(";")[0].strip()
            for mark in "<>=!~[ @":
                name = name.split(mark)[0]
            if name.strip().lower() == "pytest":
                return None
        return next((pin for oldest, pin in DEFAULT_PYTEST if version >= oldest), OLDEST_PYTEST)

    @classmethod
    def from_value(cls, value: Any, where: str, version: str = "") -> Environment:
        """The environment of a record (``value``: its ``environment`` field), ``version`` its version."""
        if value is None or value == "":
            value = {}
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as error:
                raise TaskFormatError(f"{where}: 'environment' is a string but not JSON ({error})") from None
        if not isinstance(value, Mapping):
            raise TaskFormatError(f"{where}: 'environment' must be an object, got {type(value).__name__}")
        unknown = set(value) - set(ENVIRONMENT_KEYS)
        if unknown:
            raise TaskFormatError(
                f"{where}: unknown 'environment' keys {sorted(unknown)} "
                f"(allowed: {', '.join(ENVIRONMENT_KEYS)})"
            )
        lists = {}
        for key in ("packages", "install", "rebuild"):
            items = value.get(key, ())
            if isinstance(items, str) or not all(isinstance(item, str) for item in items):
                raise TaskFormatError(f"{where}: 'environment.{key}' must be a list of strings")
            lists[key] = tuple(items)
        env = value.get("env", {})
        if not isinstance(env, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            raise TaskFormatError(f"{where}: 'environment.env' must be an object of strings")
        env = dict(env)
        if version and SCM_VERSION not in env:
            env[SCM_VERSION] = version  # checkouts have no tags: setuptools_scm would say 0.1.devN
        python = value.get("python", "python3")
        if not isinstance(python, str) or not python.strip():
            raise TaskFormatError(f"{where}: 'environment.python' must be a version, a command or a path")
        index_date = value.get("index_date") or ""
        if not isinstance(index_date, str):
            raise TaskFormatError(f"{where}: 'environment.index_date' must be a date (YYYY-MM-DD) or null")
        if index_date:
            try:
                parse_date(index_date)
            except ValueError as error:
                raise TaskFormatError(f"{where}: 'environment.index_date' is {error}") from None
        return cls(python=python.strip(), env=tuple(sorted(env.items())), index_date=index_date.strip(),
                   **lists)  # fmt: skip


@dataclass(frozen=True)
class SWETask:
    """One issue of one repository, with the tests that decide whether it is resolved."""

    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    test_patch: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    patch: str = ""
    """The gold patch: never shown to the agent; used by `gym-swe validate`."""
    hints_text: str = ""
    version: str = ""
    environment_setup_commit: str = ""
    created_at: str = ""
    image: str = ""
    """The task's docker image when the record names one (SWE-bench's parquet files do)."""
    environment: Environment = field(default_factory=Environment)
    source: str = ""
    dropped_ids: tuple[str, ...] = ()
    """Ids taken out of FAIL_TO_PASS / PASS_TO_PASS at load because they name no test (log fragments)."""
    excluded_tests: tuple[str, ...] = ()
    """Tests taken out because the record (``exclude_tests``) or the user excluded them."""
    repo_mirror: str = ""
    """Where the record's own repository is (a git mirror, working copy or bundle: the record's
    ``repo_mirror`` field, relative to the task file), for repositories made with the tasks (`gym-swe tasks
    generate`): used when no ``repo_source`` is given."""
    test_runner: str = "pytest"
    """The runner its tests take (`gym_swe.grading.runners`): the record's ``test_runner``, else its
    repository's (Django's and sympy's own), else pytest."""

    @property
    def task_id(self) -> str:
        return self.instance_id

    @property
    def environment_key(self) -> str:
        """Tasks with the same key share one prepared environment."""
        return f"{self.repo}@{self.environment_setup_commit or self.base_commit}"


def _id_list(value: Any, name: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError:
            raise TaskFormatError(f"{where}: field {name!r} is a string that is not a JSON list") from None
    if hasattr(value, "tolist"):  # numpy arrays from parquet readers
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
        raise TaskFormatError(f"{where}: field {name!r} must be a list of test ids")
    return tuple(value)


def without_tests(task: SWETask, names: Iterable[str]) -> SWETask:
    """``task`` without the tests ``names`` (exact dataset ids) in FAIL_TO_PASS / PASS_TO_PASS: tests that
    cannot pass where it runs (one that needs the network, say). Fails if nothing would be left to fix."""
    names = set(names)
    if not names:
        return task
    kept = tuple(t for t in task.fail_to_pass if t not in names)
    if not kept:
        raise TaskRefused(
            f"{task.instance_id}: cannot be graded here: every FAIL_TO_PASS test is excluded "
            f"({', '.join(map(repr, sorted(names & set(task.fail_to_pass))))}), so nothing would tell a fix"
        )
    excluded = [t for t in (*task.fail_to_pass, *task.pass_to_pass) if t in names]
    return replace(
        task,
        fail_to_pass=kept,
        pass_to_pass=tuple(t for t in task.pass_to_pass if t not in names),
        excluded_tests=tuple(dict.fromkeys((*task.excluded_tests, *excluded))),
    )


def task_from_row(row: Mapping[str, Any], number: int, source: str) -> SWETask:
    require_fields(row, number, source, dict.fromkeys(REQUIRED, str))
    where = f"{source}, row {number}"
    for name in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        if name not in row:
            raise TaskFormatError(f"{where}: missing field {name!r}")
    optional = ("patch", "hints_text", "version", "environment_setup_commit", "created_at", "image",
                "repo_mirror")  # fmt: skip
    text: dict[str, str] = {}
    for name in optional:
        value = row.get(name) or ""
        text[name] = value if isinstance(value, str) else str(value)
    lists = {name: _id_list(row[name], name, where) for name in ("FAIL_TO_PASS", "PASS_TO_PASS")}
    # Real records carry stray pieces of pytest's output (pytest-dev__pytest-5227: '[100%]'): no test has
    # such an id, so they are dropped here rather than failing every grade.
    dropped = [raw for ids in lists.values() for raw in ids if is_log_fragment(raw)]
    if dropped:
        logger.warning("%s: dropped %d id(s) that are not tests but log fragments: %s",
                       row["instance_id"], len(dropped), ", ".join(map(repr, dropped)))  # fmt: skip
    fail_to_pass, pass_to_pass = (tuple(t for t in ids if not is_log_fragment(t)) for ids in lists.values())
    if not fail_to_pass:
        raise TaskFormatError(
            f"{where}: FAIL_TO_PASS is empty; a task needs at least one test that must pass"
        )
    try:
        runner = runner_name(row["repo"], str(row.get("test_runner") or ""))
    except ValueError as error:
        raise TaskFormatError(f"{where}: field 'test_runner': {error}") from None
    foreign = unreadable(runner, [*fail_to_pass, *pass_to_pass])
    if foreign:
        raise TaskRefused(
            f"{row['instance_id']}: cannot be graded here: {len(foreign)} test id(s) are not {runner} test "
            f"ids (e.g. {foreign[0]!r}); give the record the runner its ids are written for (test_runner: "
            f"{', '.join(FORMATS)})"
        )
    environment = row.get("environment")
    if environment is None or environment == "":  # SWE-bench's own tables, where swebench is installed
        environment = swebench_environment(row["repo"], text["version"])
    task = SWETask(
        instance_id=row["instance_id"],
        repo=row["repo"],
        base_commit=row["base_commit"],
        problem_statement=row["problem_statement"],
        test_patch=row["test_patch"],
        fail_to_pass=fail_to_pass,
        pass_to_pass=pass_to_pass,
        environment=Environment.from_value(environment, where, text["version"]),
        source=source,
        dropped_ids=tuple(dict.fromkeys(dropped)),
        patch=text["patch"],
        hints_text=text["hints_text"],
        version=text["version"],
        environment_setup_commit=text["environment_setup_commit"],
        created_at=text["created_at"],
        image=text["image"],
        repo_mirror=_beside(text["repo_mirror"], source),
        test_runner=runner,
    )
    excluded = _id_list(row.get("exclude_tests") or [], "exclude_tests", where)
    return without_tests(task, excluded)


def _beside(location: str, source: str) -> str:
    """``location`` (a record's path) as an absolute path: a relative one is taken from the directory of the
    task file ``source``, so a task file and the repositories made beside it move together."""
    if not location or Path(location).is_absolute():
        return location
    return str((Path(source).absolute().parent / location).absolute())


def bundled_data_dir() -> Path:
    """Where the bundled repositories (git bundles) and task records are."""
    return Path(str(resources.files("gym_swe.tasks") / "data" / "swe"))


def _bundled_rows() -> list[dict[str, Any]]:
    return read_rows(bundled_data_dir() / "tasks.jsonl")


def _hub_rows(name: str) -> list[dict[str, Any]]:
    return read_hub_rows(*HUB_SOURCES[name])  # looked up when loaded


NAMED_SOURCES: dict[str, Callable[[], list[dict[str, Any]]]] = {
    "bundled": _bundled_rows,
    **{name: functools.partial(_hub_rows, name) for name in HUB_SOURCES},
}


@functools.lru_cache(maxsize=16)
def load_swe_tasks(source: str = "bundled") -> TaskSet[SWETask]:
    """The tasks of ``source`` (cached): a name of ``NAMED_SOURCES`` or a .jsonl/.parquet path."""
    rows, name = load_source(source, NAMED_SOURCES)
    tasks, refused = [], {}
    for number, row in enumerate(rows, start=1):
        try:
            tasks.append(task_from_row(row, number, name))
        except TaskRefused as error:  # that task alone: the others load
            logger.warning("%s: refused %s", name, error)
            refused[str(row["instance_id"])] = str(error)
    return TaskSet(tasks, name, refused)


IMAGE_NAMINGS = ("auto", "swe-gym", "swe-bench", "gym-swe")
# SWE-bench and SWE-Gym images keep the task's environment in a conda env named testbed.
CONDA_PATH = "/opt/miniconda3/envs/testbed/bin:/opt/miniconda3/bin:" + "/usr/local/bin:/usr/bin:/bin"


def docker_image(task: SWETask, naming: str = "auto") -> str:
    """The docker image of ``task`` under a naming scheme.

    ``swe-gym``: ``xingyaoww/sweb.eval.x86_64.<id with "__" -> "_s_">``; ``swe-bench``:
    ``swebench/sweb.eval.x86_64.<id with "__" -> "_1776_">:latest``; ``gym-swe``: ``gym-swe-task:<id>``, the
    images ``gym-swe images build --tasks ...`` makes. ``auto``: the record's own ``image`` when it has one,
    else the scheme of its source (gym-swe for bundled tasks and files).
    """
    if naming == "auto":
        if task.image:
            return task.image
        if task.source in ("swe-gym", "swe-gym-lite"):
            naming = "swe-gym"
        elif task.source.startswith("swe-bench"):
            naming = "swe-bench"
        else:
            naming = "gym-swe"
    if naming == "swe-gym":
        return f"xingyaoww/sweb.eval.x86_64.{task.instance_id.replace('__', '_s_')}".lower()
    if naming == "swe-bench":
        return f"swebench/sweb.eval.x86_64.{task.instance_id.replace('__', '_1776_')}:latest".lower()
    tag = "".join(c if c.isalnum() or c in "_.-" else "_" for c in task.instance_id)[:128]
    return f"gym-swe-task:{tag}"


def uses_conda_testbed(image: str) -> bool:
    return image.startswith(("swebench/", "xingyaoww/"))
