"""The README's "Serve and deploy" section, run as written: its shell commands (with a free port for 8000 and
8001, a tiny model for PATH, a temporary folder for runs) and its Python snippet, against the server they
start."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx

from gym_swe.rollout.tiny import make_tiny_bpe_model
from tests.conftest import REPO_ROOT, require_bwrap, require_docker
from tests.rollout.conftest import MODELS
from tests.rollout.vllm_server import free_port
from tests.serve.server import serve_python
from tests.trainers.runs import metrics

SECTION = "Serve and deploy"


def section() -> str:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    return readme.split(f"\n## {SECTION}\n", 1)[1].split("\n## ", 1)[0]


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section(), re.S)


def commands(block: str) -> list[list[str]]:
    """The block's commands as words (continued lines joined, comments dropped)."""
    return [
        shlex.split(line, comments=True) for line in block.replace("\\\n", " ").splitlines() if line.strip()
    ]


def environment() -> dict[str, str]:
    # This checkout's gym_swe first: what a user's editable install of it gives.
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TOKENIZERS_PARALLELISM": "false"}


def run(words: list[str], timeout: int = 900, cwd: Path = REPO_ROOT) -> str:
    done = subprocess.run(words, cwd=cwd, capture_output=True, text=True, env=environment(), timeout=timeout)
    assert done.returncode == 0, (words, done.stdout[-3000:], done.stderr[-3000:])
    return done.stdout


def serve_env(words: list[str]) -> list[str]:
    """``.venv-serve/bin/X`` as the serve environment the tests use (make serve-env made it; CI points
    GYM_SWE_SERVE_PYTHON at it)."""
    if words[0].startswith(".venv-serve/bin/"):
        return [str(Path(serve_python()).parent / words[0].rsplit("/", 1)[1]), *words[1:]]
    return words


def test_serve_validate_drive_and_train_as_the_readme_says(tmp_path: Path) -> None:
    """The README's serve section end to end, as a user runs it: a served env, validate against it, episodes
    driven through it, and a short training run on it (a trainer start and a server start)."""
    require_bwrap()
    (make, serve, validate) = commands(blocks("bash")[0])
    assert make == ["make", "serve-env"] and serve[-1] == "&" and validate[1] == "validate"
    port = str(free_port())
    serve_python()  # the serve environment exists (or the test fails/skips, saying how to make it)
    if Path(serve_python()).parent.parent == REPO_ROOT / ".venv-serve":
        run(make)  # up to date after `make test`'s own: a no-op that checks the target still works
    server = subprocess.Popen([word.replace("8000", port) for word in serve_env(serve[:-1])], cwd=REPO_ROOT,
                              env=environment(), start_new_session=True, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and server.poll() is None:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        assert server.poll() is None, "gym-swe serve exited"
        report = run([word.replace("8000", port) for word in serve_env(validate)], timeout=120)
        assert "Verdict: PASS" in report

        (snippet,) = blocks("python")
        script = tmp_path / "snippet.py"
        script.write_text(snippet.replace("8000", port), encoding="utf-8")
        printed = run([sys.executable, str(script)], cwd=tmp_path).split()
        assert printed[-4:] == [
            "tests",
            "passed.",
            "0.0",
            "48",
        ]  # "All tests passed." 0.0 48 (the hidden ones judge)

        (train,) = commands(blocks("bash")[1])
        model = str(make_tiny_bpe_model(MODELS))
        train = [
            {"PATH": model, "runs": str(tmp_path)}.get(word, word.replace("8000", port)) for word in train
        ]
        assert train[:2] == ["python", "trainers/grpo.py"]
        out = run([sys.executable, *train[1:], "--log_with", "none"])
        assert f"envs: CodeDebug-v0 served at {url}" in out
        (row,) = metrics(tmp_path / "served")
        assert row["rollout/failed"] == 0.0 and row["rollout/turns"] > 0
        from gym_swe.rollout.trajectory import load_jsonl

        trajectories = load_jsonl(tmp_path / "served" / "trajectories" / "step_0.jsonl")
        assert len(trajectories) == 2 and all(t.env_id == "CodeDebug-v0" and t.grade for t in trajectories)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)


def test_deploy_as_the_readme_says() -> None:
    require_docker()
    from gym_swe.serve.client import ServedEnv

    (build, start) = commands(blocks("bash")[2])
    assert build[:4] == ["gym-swe", "images", "build", "--serve"]
    run(
        [sys.executable, "-m", "gym_swe.cli", *build[1:]]
    )  # up to date after `make image`: checked, not rebuilt
    port, name = str(free_port()), f"gym-swe-serve-readme-{uuid.uuid4().hex[:8]}"
    token = start[start.index("-e") + 1].split("=", 1)[1]
    start = [word.replace("8001", port) for word in start]
    start[start.index("--name") + 1] = name
    run(start, timeout=120)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.5)
        with ServedEnv(url, token=token) as env:
            env.reset(options={"task_id": "GymSwe/1"})
            observation, *_ = env.step(
                '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>'
            )
            assert observation == "solution.py\ntest_solution.py"
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=120)
