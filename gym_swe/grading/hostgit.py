"""git on the host, configured by nobody but gym_swe: no system, global or repository configuration, no
hooks, no attributes, no pager. Used to turn files taken out of a sandbox into a diff, so that no git the
agent could configure (its repository's ``.git/config``, its ``.gitattributes``) ever runs over its work.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from gym_swe.errors import GradingError

# What git may read: nothing but the repository made here, whose own configuration is empty. Attributes set
# in $GIT_DIR/info/attributes win over any .gitattributes; these leave every file's bytes as they are.
NEUTRAL_ATTRIBUTES = "* !text !eol !filter !diff !merge !ident !working-tree-encoding !export-subst\n"


def clean_environment(home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "GIT_CEILING_DIRECTORIES": str(home.parent),
    }


class ScratchRepository:
    """A bare-bones repository in a temporary directory, for building trees out of files and diffing them."""

    def __init__(self) -> None:
        self._scratch = tempfile.TemporaryDirectory(prefix="gym_swe-git-")
        self.root = Path(self._scratch.name)
        self.git_dir = self.root / "repo.git"
        self.env = clean_environment(self.root)
        self.run("init", "--quiet", "--bare", "--template=", str(self.git_dir), git_dir=False)
        (self.git_dir / "info").mkdir(exist_ok=True)
        (self.git_dir / "info" / "attributes").write_text(NEUTRAL_ATTRIBUTES)

    def run(self, *args: str, stdin: bytes | None = None, git_dir: bool = True) -> bytes:
        prefix = ["--git-dir", str(self.git_dir)] if git_dir else []
        done = subprocess.run(
            ["git", *prefix, *args], input=stdin, capture_output=True, env=self.env, cwd=self.root
        )
        if done.returncode != 0:
            message = done.stderr.decode("utf-8", errors="replace").strip()[-2000:]
            raise GradingError(f"git {' '.join(args[:2])} failed on the host: {message}")
        return done.stdout

    def blob(self, data: bytes) -> str:
        """Store ``data`` as a blob, byte for byte (no filters); returns its id."""
        return self.run("hash-object", "-w", "--no-filters", "--stdin", stdin=data).decode().strip()

    def tree(self, entries: Sequence[tuple[str, str, str]]) -> str:
        """A tree of ``(mode, blob id, path)`` entries (modes as git writes them: 100644, 100755, 120000).
        A path git refuses (a ``.git`` part in any spelling it guards against, ``.`` or ``..``) is left out
        by git itself, silently: `paths` says what the tree holds. Paths are file-system names: any bytes
        but NUL, a name that is not UTF-8 held as Python's surrogate escapes."""
        index = self.root / "index"
        index.unlink(missing_ok=True)
        lines = b"".join(
            f"{mode} {blob}\t".encode() + path.encode("utf-8", "surrogateescape") + b"\0"
            for mode, blob, path in entries
        )
        env_index = {"GIT_INDEX_FILE": str(index)}
        saved = dict(self.env)
        self.env.update(env_index)
        try:
            self.run("update-index", "-z", "--add", "--index-info", stdin=lines)
            return self.run("write-tree").decode().strip()
        finally:
            self.env = saved

    def paths(self, tree: str) -> set[str]:
        """Every file path in ``tree``, as `tree` takes them."""
        out = self.run("ls-tree", "-r", "-z", "--name-only", "--full-tree", tree)
        return {name.decode("utf-8", "surrogateescape") for name in out.split(b"\0") if name}

    def diff(self, old_tree: str, new_tree: str) -> str:
        """The diff from one tree to the other, binary-safe, every file on its own (no renames)."""
        out = self.run(
            "diff-tree", "-r", "-p", "--binary", "--full-index", "--no-renames", "--no-ext-diff",
            "--no-textconv", "--no-color", "--src-prefix=a/", "--dst-prefix=b/", old_tree, new_tree,
        )  # fmt: skip
        return out.decode("utf-8", errors="surrogateescape")

    def close(self) -> None:
        self._scratch.cleanup()

    def __enter__(self) -> ScratchRepository:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
