"""The README's Python snippets, run as a newcomer would paste them: each in a fresh interpreter."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, require_bwrap

MODEL_PLACEHOLDER = '"path/to/model"'


def snippet(section: str, language: str = "python") -> str:
    """The first ```{language} block under the README heading ``## {section}``."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    body = readme.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(rf"```{language}\n(.*?)```", body, re.S)
    assert match, f"no {language} block under ## {section}"
    return match.group(1)


def command(section: str) -> list[str]:
    """The command of the first ```bash block under ``## {section}``, as argv (continued lines joined)."""
    return shlex.split(snippet(section, "bash").replace("\\\n", " "))


def run(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                            timeout=900)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_quickstart_runs_and_prints_what_the_readme_says(tmp_path: Path) -> None:
    require_bwrap()
    code = snippet("Quickstart")
    assert code.startswith("import gymnasium\nimport gym_swe")
    lines = run(code, tmp_path).stdout.splitlines()
    # The text under the snippet explains these two lines: visible examples pass, the hidden grade does not.
    assert "All tests passed." in lines and lines[-1] == "0.0 6 / 8"


def test_rollout_snippet_runs_with_a_tiny_model(tmp_path: Path) -> None:
    """As written, but for the model: a tiny random one with a small vocabulary, which is quick on a CPU."""
    require_bwrap()
    pytest.importorskip("transformers")
    from gym_swe.rollout.tiny import make_tiny_bpe_model
    from tests.rollout.conftest import MODELS

    model = make_tiny_bpe_model(MODELS)
    code = snippet("Rollouts and evaluation")
    assert code.startswith("import gymnasium\nimport gym_swe") and code.count(MODEL_PLACEHOLDER) == 1
    code = code.replace(MODEL_PLACEHOLDER, repr(str(model)))
    code += "print(len(trajectories), len(t.token_ids), len(t.turns), t.error)\n"
    count, tokens, turns, error = run(code, tmp_path).stdout.split()[-4:]
    assert count == "4" and int(tokens) > 0 and 1 <= int(turns) <= 3 and error == "None"
