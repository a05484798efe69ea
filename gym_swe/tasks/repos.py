"""Repositories of SWE tasks: where they come from, and pristine checkouts at a task's base commit.

A checkout holds the history up to ``base_commit`` and nothing after it: no later commits, no other
branches, tags or remotes, so the fix cannot be found in the history. It is made once per task in the cache
(``GYM_SWE_CACHE``, default ``~/.cache/gym_swe``) and never changed afterwards; every episode and every
grading run gets its own copy-on-write view or copy of it.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from gym_swe.errors import TaskError
from gym_swe.tasks.swe import SWETask, bundled_data_dir

READY = ".gym_swe_ready"  # written last: a mirror without it is unfinished and is rebuilt


def cache_root() -> Path:
    """The cache of checkouts and environments: ``GYM_SWE_CACHE``, or ``$XDG_CACHE_HOME/gym_swe``."""
    configured = os.environ.get("GYM_SWE_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gym_swe"


def safe_name(text: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in text)


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock across processes (episodes in parallel may prepare the same thing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def git(*args: str, cwd: Path | None = None) -> str:
    """Run git on the host with no user or system configuration in play."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "HOME": str(cache_root())}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise TaskError(f"git {' '.join(args[:3])} failed: {done.stderr.strip()[-2000:]}")
    return done.stdout


def _fetch_error(task: SWETask, origin: Path | str, source: RepoSource, error: TaskError) -> TaskError:
    """Why the base commit could not be fetched from the mirror ``origin``: it is not there, or the mirror
    names it but cannot give it (a file of the mirror missing or damaged)."""
    where = f"the mirror of {task.repo} ({source.location(task.repo)})"
    try:
        git("--git-dir", str(origin), "cat-file", "-e", f"{task.base_commit}^{{commit}}")
    except TaskError:
        return TaskError(
            f"{task.instance_id}: base commit {task.base_commit} is not in {where}; update the mirror (git "
            f"fetch) or check the record's base_commit. git said: {error}"
        )
    return TaskError(
        f"{task.instance_id}: {where} holds base commit {task.base_commit} but cannot give it: a file of the "
        f"mirror is missing or damaged; make the mirror again (git clone --mirror). git said: {error}"
    )


MIRROR_LAYOUTS = ("{owner}__{name}.git", "{owner}__{name}", "{owner}/{name}.git", "{owner}/{name}",
                  "{name}.git", "{name}", "{name}.bundle", "{owner}__{name}.bundle")  # fmt: skip


class RepoSource:
    """Where repositories come from.

    ``None``: the bundled repositories (git bundles shipped with gym_swe). A directory of local mirrors, each
    laid out as one of `MIRROR_LAYOUTS` (``pallets__flask.git``, ``pallets/flask.git``, ``pallets/flask``,
    ``flask.git``, ...). A mapping ``{"owner/name": "<url or path>"}``, or the path of a JSON file holding
    one (relative paths in it are relative to the file). Relative paths are taken from the current
    directory, once, here.
    """

    def __init__(self, source: str | Path | Mapping[str, str] | None = None) -> None:
        self.source: Path | dict[str, str] | None
        if source is None:
            self.source = None
        elif isinstance(source, Mapping):
            self.source = {str(repo): str(location) for repo, location in source.items()}
        else:
            path = Path(source).expanduser().absolute()
            if path.is_file():
                self.source = _read_mapping(path)
            elif path.is_dir():
                self.source = path
            else:
                raise TaskError(
                    f"repo source {str(source)!r} does not exist ({path}); give a directory of repository "
                    "mirrors or a JSON file mapping 'owner/name' to a mirror's path or URL"
                )

    def location(self, repo: str) -> str:
        owner, _, name = repo.partition("/")
        if isinstance(self.source, dict):
            if repo not in self.source:
                raise TaskError(
                    f"the repo source mapping has no entry for {repo!r} (it has {sorted(self.source)}); "
                    f'add "{repo}": "<path or URL of a clone>"'
                )
            return self.source[repo]
        directory = self.source if self.source is not None else bundled_data_dir()
        candidates = [layout.format(owner=owner, name=name) for layout in MIRROR_LAYOUTS]
        for candidate in candidates:
            path = directory / candidate
            if path.is_file() if path.suffix == ".bundle" else _is_repository(path):
                return str(path)
        if self.source is None:
            raise TaskError(
                f"{repo!r} is not a bundled repository; pass repo_source= (--repo-source) a directory of "
                f"mirrors, made with `git clone --mirror https://github.com/{repo} DIR/{owner}__{name}.git`"
            )
        raise TaskError(
            f"no mirror of {repo!r} in {directory} (looked for {', '.join(candidates)}); make one with "
            f"`git clone --mirror https://github.com/{repo} {directory / candidates[0]}`"
        )


def _is_repository(path: Path) -> bool:
    """A bare repository or a working copy (a plain directory of the same name is neither)."""
    return ((path / "HEAD").is_file() and (path / "objects").is_dir()) or (path / ".git").exists()


def _read_mapping(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise TaskError(f"repo source {path} is a file but not a JSON mapping: {error}") from None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise TaskError(f'repo source {path} must be a JSON object like {{"owner/name": "path or URL"}}')
    resolved = {}
    for repo, location in data.items():
        local = Path(location).expanduser()
        is_url = "://" in location or (":" in location and not local.exists())
        resolved[repo] = location if is_url else str((path.parent / local).absolute())
    return resolved


def mirror(repo: str, source: RepoSource, refresh: bool = False) -> Path:
    """A bare mirror of ``repo`` in the cache, cloned once from its source (a bundle, a path or a URL);
    ``refresh`` fetches what the source gained since."""
    path = cache_root() / "mirrors" / f"{safe_name(repo)}.git"
    with file_lock(path.with_suffix(".lock")):
        if refresh and (path / READY).exists():
            git("-c", "protocol.file.allow=always", "fetch", "--quiet", "--prune", source.location(repo),
                "+refs/*:refs/*", cwd=path)  # fmt: skip
        if not (path / READY).exists():
            shutil.rmtree(path, ignore_errors=True)
            git("clone", "--quiet", "--mirror", source.location(repo), str(path))
            # Checkouts fetch one commit by its id from here.
            git("config", "uploadpack.allowAnySHA1InWant", "true", cwd=path)
            (path / READY).touch()
    return path


def source_of(task: SWETask, source: RepoSource | None = None) -> RepoSource:
    """Where ``task``'s repository comes from: ``source`` when it names one; else the record's own mirror
    (``repo_mirror``, a generated task's), else the bundled repositories."""
    if source is not None and source.source is not None:
        return source
    if task.repo_mirror:
        return RepoSource({task.repo: task.repo_mirror})
    return source or RepoSource()


def checkout_path(instance_id: str, base_commit: str) -> Path:
    return cache_root() / "checkouts" / f"{safe_name(instance_id)}-{base_commit[:12]}"


def remove_checkout(instance_id: str, base_commit: str) -> None:
    """Remove the cached checkout of a task that will not be played (a generated candidate not kept)."""
    path = checkout_path(instance_id, base_commit)
    lock = path.with_name(path.name + ".lock")
    if not lock.exists():
        return
    with file_lock(lock):
        path.with_name(path.name + ".ready").unlink(missing_ok=True)
        shutil.rmtree(path, ignore_errors=True)
    lock.unlink(missing_ok=True)


def checkout(task: SWETask, source: RepoSource | None = None) -> Path:
    """The pristine checkout of ``task`` at its base commit (made once, then reused; never modify it)."""
    source = source_of(task, source)
    path = checkout_path(task.instance_id, task.base_commit)
    ready = path.with_name(path.name + ".ready")  # beside it: inside, git would show it as a new file
    if ready.exists():
        return path
    origin = mirror(task.repo, source)
    with file_lock(path.with_name(path.name + ".lock")):
        if ready.exists():
            return path
        shutil.rmtree(path, ignore_errors=True)
        work = Path(tempfile.mkdtemp(prefix="checkout-", dir=path.parent))
        try:
            git("init", "--quiet", "--initial-branch", "main", str(work))
            fetch = ("-c", "protocol.file.allow=always", "fetch", "--quiet", "--no-tags")
            try:
                git(*fetch, str(origin), task.base_commit, cwd=work)
            except TaskError:
                try:  # the cached mirror may predate the commit: bring it up to date once
                    git(*fetch, str(mirror(task.repo, source, refresh=True)), task.base_commit, cwd=work)
                except TaskError as error:
                    raise _fetch_error(task, origin, source, error) from None
            git("checkout", "--quiet", "-B", "main", "FETCH_HEAD", cwd=work)
            git("config", "user.name", "gym_swe agent", cwd=work)
            git("config", "user.email", "agent@gym-swe.invalid", cwd=work)
            (work / ".git" / "FETCH_HEAD").unlink(missing_ok=True)
            git("reflog", "expire", "--expire=now", "--all", cwd=work)
            work.chmod(0o755)
            work.rename(path)
            ready.write_text(task.base_commit)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
    return path
