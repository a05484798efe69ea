"""The repository tasks are made from: a git mirror of it beside the task file, which the records name (their
``repo_mirror`` field) so that ``gymnasium.make("SWEGym-v0", tasks=FILE)`` finds it, and which also holds the
commits generation makes (a mutated tree, as a commit with no parent: its history cannot hold the fix); and
its environment, inferred from its packaging files unless the user gives one."""

from __future__ import annotations

import configparser
import importlib
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gym_swe.errors import ConfigError, TaskError
from gym_swe.tasks.repos import git, safe_name

# Generated commits get a fixed identity and date, so the same tree and message always give the same id.
COMMIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "gym_swe",
    "GIT_AUTHOR_EMAIL": "tasks@gym-swe.invalid",
    "GIT_COMMITTER_NAME": "gym_swe",
    "GIT_COMMITTER_EMAIL": "tasks@gym-swe.invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
}
TASK_REFS = "refs/gym-swe/tasks/"
"""Where the mirror keeps the base commit of each generated task, so that cloning it keeps them."""
# Extras and dependency groups that hold what a repository's tests need, by the names projects give them.
TEST_GROUPS = ("test", "tests", "testing")
DEV_GROUPS = ("dev", "develop", "development")
REQUIREMENT_FILES = (
    "requirements.txt",
    "requirements-test.txt",
    "requirements_test.txt",
    "test-requirements.txt",
    "requirements-tests.txt",
    "requirements/test.txt",
    "requirements/testing.txt",
    "requirements/tests.txt",
    "requirements-dev.txt",
)
REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
WORKDIR = "/testbed"


@dataclass
class SourceRepository:
    """A repository's mirror (``mirror``, beside the task file) at the commit tasks start from
    (``commit``)."""

    name: str
    """``owner/name``, the records' ``repo``."""
    mirror: Path
    commit: str
    environment: dict[str, Any] = field(default_factory=dict)
    """The records' ``environment`` field."""

    def git(self, *args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> str:
        if env is None and stdin is None:
            return git("--git-dir", str(self.mirror), *args)
        full = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", **(env or {})}
        done = subprocess.run(
            ["git", "--git-dir", str(self.mirror), *args],
            env=full,
            input=stdin,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise TaskError(f"git {' '.join(args[:2])} failed: {done.stderr.strip()[-2000:]}")
        return done.stdout

    def files(self, commit: str | None = None) -> list[str]:
        return self.git("ls-tree", "-r", "--name-only", commit or self.commit).splitlines()

    def read(self, path: str, commit: str | None = None) -> str:
        return self.git("show", f"{commit or self.commit}:{path}")

    def commit_with(self, changed: Mapping[str, str | None], message: str) -> str:
        """A commit with no parent whose tree is ``commit``'s with the files ``changed`` (path: text, or None
        to leave the file out): the starting state of a task whose fix is in no history."""
        with tempfile.TemporaryDirectory(prefix="gym-swe-index-") as scratch:
            env = {
                "GIT_INDEX_FILE": str(Path(scratch) / "index"),
                "GIT_WORK_TREE": scratch,
                **COMMIT_IDENTITY,
            }
            self.git("read-tree", self.commit, env=env)
            for path, text in changed.items():
                if text is None:
                    self.git("update-index", "--force-remove", "--", path, env=env)
                    continue
                mode = self.git("ls-tree", self.commit, "--", path).split(" ", 1)[0] or "100644"
                blob = self.git("hash-object", "-w", "--stdin", stdin=text, env=env).strip()
                self.git("update-index", "--cacheinfo", f"{mode},{blob},{path}", env=env)
            tree = self.git("write-tree", env=env).strip()
            return self.git("commit-tree", tree, "-m", message, env=env).strip()

    def keep(self, task_id: str, commit: str) -> None:
        """Keep ``commit`` in the mirror under the task's ref (clones take refs only)."""
        self.git("update-ref", TASK_REFS + safe_name(task_id), commit)

    def drop(self, task_id: str) -> None:
        """Drop the task's ref (`keep`) if there is one: its commit goes with the mirror's next gc."""
        ref = TASK_REFS + safe_name(task_id)
        if self.git("for-each-ref", ref):
            self.git("update-ref", "-d", ref)

    def diff(self, old: str, new: str, paths: tuple[str, ...] = ()) -> str:
        return self.git(
            "-c",
            "diff.noprefix=false",
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--full-index",
            "--no-renames",
            old,
            new,
            "--",
            *paths,
        )


def open_repository(
    location: str | Path,
    repos_dir: Path,
    name: str | None = None,
    rev: str = "HEAD",
    environment: dict[str, Any] | None = None,
) -> SourceRepository:
    """The repository at ``location`` (a working copy, a bare mirror or a bundle) mirrored into ``repos_dir``
    (once: a re-run takes what the source gained since), at ``rev``."""
    source = Path(location).expanduser().absolute()
    if not source.exists():
        raise ConfigError(
            f"--repo {str(location)!r} does not exist; give a git working copy, mirror or bundle"
        )
    try:
        if source.is_dir():
            git("-C", str(source), "rev-parse", "--verify", "HEAD^{commit}")
        else:
            git("bundle", "list-heads", str(source))
    except TaskError:
        raise ConfigError(
            f"--repo {str(location)!r} is not a git repository (a working copy, mirror or bundle) "
            "with a commit"
        ) from None
    name = name or f"local/{safe_name(source.name.removesuffix('.git').removesuffix('.bundle'))}"
    if not re.fullmatch(r"[A-Za-z0-9._-]+/[A-Za-z0-9._-]+", name):
        raise ConfigError(f"--name must be owner/name (letters, digits, '.', '_', '-'), got {name!r}")
    mirror = repos_dir / f"{name.replace('/', '__')}.git"
    if not (mirror / "HEAD").is_file():
        repos_dir.mkdir(parents=True, exist_ok=True)
        git("clone", "--quiet", "--mirror", str(source), str(mirror))
    else:  # a re-run: what the source gained since; the generated tasks' refs are the mirror's own
        git(
            "-c",
            "protocol.file.allow=always",
            "--git-dir",
            str(mirror),
            "fetch",
            "--quiet",
            str(source),
            "+refs/heads/*:refs/heads/*",
            "+refs/tags/*:refs/tags/*",
        )
    git("--git-dir", str(mirror), "config", "uploadpack.allowAnySHA1InWant", "true")
    where = ("-C", str(source)) if source.is_dir() else ("--git-dir", str(mirror))
    heads = git("--git-dir", str(mirror), "for-each-ref", "--format=%(refname)", "refs/heads/").split()
    if rev == "HEAD" and not source.is_dir() and len(heads) == 1:
        rev = heads[0]  # a bundle names no HEAD; its one branch is the one meant
    try:
        commit = git(*where, "rev-parse", "--verify", f"{rev}^{{commit}}").strip()
        git("--git-dir", str(mirror), "cat-file", "-e", f"{commit}^{{commit}}")
    except TaskError:
        raise ConfigError(
            f"--rev {rev!r} is not a commit of {location} (on one of its branches or tags)"
        ) from None
    repo = SourceRepository(name=name, mirror=mirror, commit=commit)
    repo.environment = environment if environment is not None else infer_environment(repo)
    return repo


def infer_environment(repo: SourceRepository) -> dict[str, Any]:
    """An ``environment`` for the repository's tests from its packaging files at its commit: its
    dependencies and its test extras or dependency groups (pyproject.toml, setup.cfg, requirements files),
    and its source directory on PYTHONPATH (``src/`` layouts), so that no install step is needed and one
    venv serves every task. The user gives one (``--environment``) where this is not enough."""
    files = set(repo.files())
    own = project_name(repo, files)
    requirements: list[str] = []
    if "pyproject.toml" in files:
        requirements += pyproject_requirements(repo.read("pyproject.toml"))
    if "setup.cfg" in files:
        requirements += setup_cfg_requirements(repo.read("setup.cfg"))
    for path in REQUIREMENT_FILES:
        if path in files:
            requirements += requirement_lines(repo.read(path))
    packages = []
    for requirement in dict.fromkeys(requirements):
        found = REQUIREMENT_NAME.match(requirement)
        if found and normalized(found.group(1)) != own:
            packages.append(requirement)
    source_root = (
        f"{WORKDIR}/src"
        if any(path.startswith("src/") and path.endswith(".py") for path in files)
        else WORKDIR
    )
    return {"python": "python3", "packages": packages, "env": {"PYTHONPATH": source_root}}


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def project_name(repo: SourceRepository, files: set[str]) -> str:
    if "pyproject.toml" in files:
        found = re.search(
            r"""^\[project\][^\[]*?^name\s*=\s*['"]([^'"]+)['"]""",
            repo.read("pyproject.toml"),
            re.MULTILINE | re.DOTALL,
        )
        if found:
            return normalized(found.group(1))
    if "setup.cfg" in files:
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(repo.read("setup.cfg"))
        if parser.has_option("metadata", "name"):
            return normalized(parser.get("metadata", "name"))
    return ""


def pyproject_requirements(text: str) -> list[str]:
    try:
        toml: Any = importlib.import_module("tomllib")
    except ModuleNotFoundError:  # Python 3.10: tomli, where installed
        try:
            toml = importlib.import_module("tomli")
        except ModuleNotFoundError:
            return []
    try:
        data = toml.loads(text)
    except toml.TOMLDecodeError:
        return []
    project = data.get("project", {})
    found = [item for item in project.get("dependencies", []) if isinstance(item, str)]
    for table in (project.get("optional-dependencies", {}), data.get("dependency-groups", {})):
        found += _groups(table)
    return found


def _groups(table: dict[str, Any]) -> list[str]:
    """The test groups' requirements; the dev groups' only where there is no test group."""
    for names in (TEST_GROUPS, DEV_GROUPS):
        chosen = [item for name in names for item in table.get(name, []) if isinstance(item, str)]
        if chosen:
            return chosen
    return []


def setup_cfg_requirements(text: str) -> list[str]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return []
    found = requirement_lines(parser.get("options", "install_requires", fallback=""))
    if parser.has_section("options.extras_require"):
        table = {key: requirement_lines(value) for key, value in parser.items("options.extras_require")}
        found += _groups(table)
    return found


def requirement_lines(text: str) -> list[str]:
    """Plain requirements of a requirements file (options, includes, editable installs and comments left
    out: an environment lists packages)."""
    lines = (line.split(" #")[0].strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith(("#", "-", "."))]


def environment_argument(value: str) -> dict[str, Any]:
    """``--environment``: a JSON object or the path of a file holding one."""
    text = Path(value).read_text() if Path(value).is_file() else value
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"--environment must be a JSON object or a file holding one: {error}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"--environment must be a JSON object, got {type(data).__name__}")
    return data
