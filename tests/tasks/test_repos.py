"""Where repositories come from: mirror layouts, mapping files, relative paths, and what a missing one says."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gym_swe.errors import TaskError
from gym_swe.tasks.repos import RepoSource, checkout
from gym_swe.tasks.swe import SWETask
from tests.tasks.local_repos import git


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A one-commit repository of ``acme/widget``; returns it and its commit."""
    work = tmp_path_factory.mktemp("origin") / "widget"
    work.mkdir()
    git(work, "init", "-q")
    (work / "widget.py").write_text("X = 1\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "widget")
    return work, git(work, "rev-parse", "HEAD").strip()


def task(commit: str, repo: str = "acme/widget") -> SWETask:
    return SWETask(instance_id="acme__widget-1", repo=repo, base_commit=commit, problem_statement="x",
                   test_patch="", fail_to_pass=("t.py::t",), pass_to_pass=())  # fmt: skip


@pytest.mark.parametrize("layout", ["acme__widget.git", "acme__widget", "acme/widget.git", "acme/widget",
                                    "widget.git", "widget"])  # fmt: skip
@pytest.mark.parametrize("bare", [True, False])
def test_mirror_layouts(origin: tuple[Path, str], tmp_path: Path, layout: str, bare: bool) -> None:
    mirrors = tmp_path / "mirrors"
    (mirrors / layout).parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", *(["--mirror"] if bare else []), str(origin[0]), str(mirrors / layout)],
                   check=True)  # fmt: skip
    assert RepoSource(mirrors).location("acme/widget") == str(mirrors / layout)


def test_a_plain_directory_of_the_same_name_is_no_mirror(tmp_path: Path) -> None:
    (tmp_path / "widget").mkdir()
    with pytest.raises(
        TaskError, match=r"no mirror of 'acme/widget' in .*; make one with `git clone --mirror"
    ):
        RepoSource(tmp_path).location("acme/widget")


def test_relative_sources_and_mapping_files(
    origin: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GYM_SWE_CACHE", str(tmp_path / "cache"))
    work, commit = origin
    (tmp_path / "mirrors").mkdir()
    subprocess.run(["git", "clone", "-q", "--mirror", str(work), str(tmp_path / "mirrors" / "widget.git")],
                   check=True)  # fmt: skip
    monkeypatch.chdir(tmp_path)
    source = RepoSource("mirrors")  # relative to the current directory, taken once
    monkeypatch.chdir("/")
    assert (checkout(task(commit), source) / "widget.py").read_text() == "X = 1\n"
    # A mapping file: relative paths are relative to the file.
    mapping = tmp_path / "conf" / "repos.json"
    mapping.parent.mkdir()
    mapping.write_text(
        json.dumps({"acme/widget": "../mirrors/widget.git", "acme/web": "https://example.org/w"})
    )
    source = RepoSource(str(mapping))
    assert source.location("acme/widget") == str(tmp_path / "conf" / ".." / "mirrors" / "widget.git")
    assert source.location("acme/web") == "https://example.org/w"
    with pytest.raises(TaskError, match=r"no entry for 'acme/gadget'.*add \"acme/gadget\""):
        source.location("acme/gadget")


def test_missing_sources_and_mirrors_are_named(origin: tuple[Path, str], tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GYM_SWE_CACHE", str(tmp_path / "cache"))
    with pytest.raises(TaskError, match=r"repo source 'nowhere' does not exist"):
        RepoSource("nowhere")
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(TaskError, match="must be a JSON object"):
        RepoSource(tmp_path / "bad.json")
    # The error names the mirror that is missing, not the commit.
    with pytest.raises(TaskError, match=r"no mirror of 'acme/widget' in") as caught:
        checkout(task(origin[1]), RepoSource(tmp_path))
    assert origin[1] not in str(caught.value)
    with pytest.raises(TaskError, match="is not a bundled repository; pass repo_source="):
        checkout(task(origin[1]), RepoSource())
    # A commit the mirror lacks is named, with the mirror.
    subprocess.run(
        ["git", "clone", "-q", "--mirror", str(origin[0]), str(tmp_path / "widget.git")], check=True
    )
    with pytest.raises(
        TaskError, match=r"base commit 0{40} is not in the mirror of acme/widget \(.*widget\.git\)"
    ):
        checkout(task("0" * 40), RepoSource(tmp_path))


def test_a_mirror_missing_a_file_is_not_said_to_lack_the_commit(
    origin: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GYM_SWE_CACHE", str(tmp_path / "cache"))
    work, commit = origin
    mirror = tmp_path / "mirrors" / "widget.git"
    subprocess.run(["git", "init", "-q", "--bare", str(mirror)], check=True)
    subprocess.run(["git", "-C", str(work), "push", "-q", str(mirror), "HEAD:refs/heads/main"], check=True)
    blob = git(work, "rev-parse", "HEAD:widget.py").strip()
    (mirror / "objects" / blob[:2] / blob[2:]).unlink()  # a small push leaves loose objects
    with pytest.raises(TaskError) as caught:
        checkout(task(commit), RepoSource(tmp_path / "mirrors"))
    message = str(caught.value)
    assert f"holds base commit {commit} but cannot give it: a file of the mirror is missing" in message
    assert "is not in the mirror" not in message
