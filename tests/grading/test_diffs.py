"""Protected paths: what of the agent's diff is dropped before grading, and why."""

from __future__ import annotations

import subprocess

import pytest

from gym_swe.grading.diffs import filter_diff, is_test_like, protection_reason, split_diff


def file_diff(path: str, new: bool = False) -> str:
    header = f"diff --git a/{path} b/{path}\n"
    if new:
        return header + f"new file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x = 1\n"
    return header + f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-x = 0\n+x = 1\n"


@pytest.mark.parametrize(("path", "reason"), [
    ("pkg/module.py", None),
    ("pkg/testing_utils.py", None),
    ("docs/index.rst", None),
    ("tests/test_module.py", "a test file"),
    ("pkg/tests/helpers.py", "a test file"),
    ("test_module.py", "a test file"),
    ("pkg/module_test.py", "a test file"),
    ("conftest.py", "test configuration or start-up hook"),
    ("pkg/sub/conftest.py", "test configuration or start-up hook"),
    ("pytest.ini", "test configuration or start-up hook"),
    ("tox.ini", "test configuration or start-up hook"),
    ("setup.cfg", "test configuration or start-up hook"),
    ("pyproject.toml", "test configuration or start-up hook"),
    ("sitecustomize.py", "test configuration or start-up hook"),
    ("pkg/usercustomize.py", "test configuration or start-up hook"),
    ("evil.pth", "a .pth start-up hook"),
    (".git/hooks/pre-commit", "git internals"),
])  # fmt: skip
def test_protection(path: str, reason: str | None) -> None:
    assert protection_reason(path) == reason


def test_paths_of_the_test_patch_are_protected_even_when_not_test_like() -> None:
    assert protection_reason("pkg/fixtures.py", ["pkg/fixtures.py"]) == "touched by the task's tests"
    assert not is_test_like("pkg/fixtures.py")


def test_filter_keeps_source_changes_and_names_what_it_dropped() -> None:
    diff = "".join([
        file_diff("pkg/module.py"),
        file_diff("tests/test_module.py"),
        file_diff("conftest.py", new=True),
        file_diff("pkg/new_module.py", new=True),
        file_diff("pkg/data.json"),
    ])  # fmt: skip
    test_patch = file_diff("pkg/data.json")
    filtered = filter_diff(diff, test_patch)
    assert filtered.kept == ("pkg/module.py", "pkg/new_module.py")
    assert dict(filtered.dropped) == {
        "tests/test_module.py": "a test file",
        "conftest.py": "test configuration or start-up hook",
        "pkg/data.json": "touched by the task's tests",
    }
    assert filtered.diff == file_diff("pkg/module.py") + file_diff("pkg/new_module.py", new=True)


def test_renames_deletions_and_quoted_paths() -> None:
    diff = (
        "diff --git a/pkg/old.py b/tests/test_new.py\nsimilarity index 100%\n"
        "rename from pkg/old.py\nrename to tests/test_new.py\n"
        "diff --git a/pkg/gone.py b/pkg/gone.py\ndeleted file mode 100644\n--- a/pkg/gone.py\n+++ /dev/null\n"
        "@@ -1 +0,0 @@\n-x = 0\n"
        'diff --git "a/pkg/caf\\303\\251.py" "b/pkg/caf\\303\\251.py"\n--- "a/pkg/caf\\303\\251.py"\n'
        '+++ "b/pkg/caf\\303\\251.py"\n@@ -1 +1 @@\n-x = 0\n+x = 1\n'
    )
    parts = split_diff(diff)
    assert [(p.old_path, p.new_path) for p in parts] == [
        ("pkg/old.py", "tests/test_new.py"),
        ("pkg/gone.py", None),
        ("pkg/café.py", "pkg/café.py"),
    ]
    filtered = filter_diff(diff)
    assert filtered.kept == ("pkg/gone.py", "pkg/café.py")
    assert filtered.dropped == (("tests/test_new.py", "a test file"),)


def test_empty_and_garbage_diffs() -> None:
    assert filter_diff("").diff == ""
    assert filter_diff("no diff here\n").kept == ()


# -- read as git apply reads it: each case smuggles a change to a protected path past a naive filter --------
SOURCE_HUNK = "--- a/pkg/module.py\n+++ b/pkg/module.py\n@@ -1,2 +1,2 @@\n x = 0\n-y = 0\n+y = 1\n"
SMUGGLED = {
    # after a hunk ends (by its line counts), a traditional header starts a new patch for git apply
    "a second ---/+++ pair inside one file's patch": (
        "diff --git a/pkg/module.py b/pkg/module.py\n"
        + SOURCE_HUNK
        + "--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -1 +1 @@\n-assert False\n+assert True\n",
        "tests/test_x.py",
    ),
    # the same without any diff --git line at all
    "traditional patches only": (
        SOURCE_HUNK + "--- a/conftest.py\n+++ b/conftest.py\n@@ -0,0 +1 @@\n+import os\n",
        "conftest.py",
    ),
    # ---/+++ names that disagree with the diff --git line
    "header names that disagree": (
        "diff --git a/pkg/module.py b/pkg/module.py\n--- a/pkg/module.py\n+++ b/tests/test_x.py\n"
        "@@ -1 +1 @@\n-x\n+y\n",
        "tests/test_x.py",
    ),
    "a rename into a protected path": (
        "diff --git a/pkg/module.py b/pkg/conftest.py\nsimilarity index 90%\nrename from pkg/module.py\n"
        "rename to pkg/conftest.py\n--- a/pkg/module.py\n+++ b/pkg/conftest.py\n@@ -1 +1 @@\n-x\n+y\n",
        "pkg/conftest.py",
    ),
    "a copy into a test file": (
        "diff --git a/pkg/module.py b/tests/test_y.py\nsimilarity index 100%\ncopy from pkg/module.py\n"
        "copy to tests/test_y.py\n",
        "tests/test_y.py",
    ),
}


@pytest.mark.parametrize("case", SMUGGLED, ids=list(SMUGGLED))
def test_a_smuggled_protected_change_is_its_own_part_and_dropped(case: str, tmp_path) -> None:
    diff, protected = SMUGGLED[case]
    assert protected in git_apply_paths(diff, tmp_path), "the case must smuggle something past git too"
    assert any(protected in part.paths for part in split_diff(diff)), [p.paths for p in split_diff(diff)]
    filtered = filter_diff(diff)
    assert protected not in filtered.kept
    if filtered.diff:
        assert protected not in git_apply_paths(filtered.diff, tmp_path)


def git_apply_paths(diff: str, scratch) -> set[str]:  # type: ignore[no-untyped-def]
    """The paths the real git apply reads in ``diff`` (``--numstat --summary``, applying nothing)."""
    (scratch / "p.diff").write_text(diff)
    done = subprocess.run(
        ["git", "apply", "--numstat", "--summary", "p.diff"],
        cwd=scratch, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "HOME": str(scratch)},
    )  # fmt: skip
    paths = set()
    for line in done.stdout.splitlines():
        if "\t" in line:
            paths.add(line.split("\t")[-1])
        elif line.startswith((" rename ", " copy ")):
            body = line.split(" ", 2)[2].rsplit(" (", 1)[0]
            paths.update(part.strip() for part in body.split("=>"))
    return paths


def test_a_hunk_line_that_looks_like_a_header_stays_in_its_hunk() -> None:
    """A removed line ``-- x`` inside a hunk reads ``--- x``: git apply counts it as hunk content."""
    diff = (
        "diff --git a/pkg/module.py b/pkg/module.py\n--- a/pkg/module.py\n+++ b/pkg/module.py\n"
        "@@ -1,3 +1,3 @@\n--- a/tests/test_x.py\n-+++ b/tests/test_x.py\n+x = 1\n+y = 2\n z = 3\n"
    )
    parts = split_diff(diff)
    assert [part.paths for part in parts] == [["pkg/module.py", "pkg/module.py"]]
    assert filter_diff(diff).kept == ("pkg/module.py",)


@pytest.mark.parametrize(("part", "reason"), [
    ("diff --git a/pkg/data.bin b/pkg/data.bin\nindex 1..2 100644\nGIT binary patch\nliteral 3\nKcmZQz$o&k5\n\n"
     "literal 0\nHcmV?d00001\n\n", "a binary file"),
    ("diff --git a/pkg/data.bin b/pkg/data.bin\nindex 1..2 100644\nBinary files a/pkg/data.bin and "
     "b/pkg/data.bin differ\n", "a binary file"),
    ("diff --git a/pkg/link.py b/pkg/link.py\nnew file mode 120000\n--- /dev/null\n+++ b/pkg/link.py\n"
     "@@ -0,0 +1 @@\n+../tests/test_x.py\n\\ No newline at end of file\n", "a symbolic link"),
    ("diff --git a/pkg/module.py b/pkg/module.py\nold mode 100644\nnew mode 120000\n", "a symbolic link"),
    ("diff --git a/vendor/lib b/vendor/lib\nnew file mode 160000\nindex 0..abc\n--- /dev/null\n+++ b/vendor/lib\n"
     "@@ -0,0 +1 @@\n+Subproject commit abc\n", "a submodule"),
])  # fmt: skip
def test_binary_links_and_submodules_are_dropped(part: str, reason: str) -> None:
    filtered = filter_diff(file_diff("pkg/module.py") + part)
    assert filtered.kept == ("pkg/module.py",)
    assert [why for _, why in filtered.dropped] == [reason]


@pytest.mark.parametrize(("path", "reason"), [
    ("pkg/__pycache__/module.cpython-311.pyc", "compiled bytecode, which Python may load in place of the source"),
    ("pkg/module.pyc", "compiled bytecode, which Python may load in place of the source"),
    ("evil-1.0.dist-info/entry_points.txt", "installed distributions' metadata (entry points, plugins)"),
    ("src/pkg.egg-info/entry_points.txt", "installed distributions' metadata (entry points, plugins)"),
    (".gitattributes", "git configuration"),
    ("sub/.git/config", "git internals"),
])  # fmt: skip
def test_more_protected_paths(path: str, reason: str) -> None:
    assert protection_reason(path) == reason


def test_new_modules_that_shadow_installed_ones_are_dropped_and_edits_are_not() -> None:
    installed = {"pytest", "_pytest", "pluggy", "json"}
    assert (
        protection_reason("pytest.py", shadowable=installed, new=True)
        == "a new module that shadows the installed 'pytest'"
    )
    assert protection_reason("_pytest/reports.py", shadowable=installed, new=True) is not None
    assert protection_reason("src/pluggy/__init__.py", shadowable=installed, new=True) is not None
    assert protection_reason("json.py", shadowable=installed, new=False) is None  # the repository's own
    assert protection_reason("pkg/json.py", shadowable=installed, new=True) is None  # inside a package
    diff = file_diff("pytest.py", new=True) + file_diff("pkg/module.py")
    filtered = filter_diff(diff, shadowable=installed)
    assert filtered.kept == ("pkg/module.py",)
