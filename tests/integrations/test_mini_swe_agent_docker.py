"""mini-swe-agent's own CLI inside a docker sandbox (the harness image: the base image with mini-swe-agent
installed offline), reaching the proxy on the host through its unix socket bound into the container, and
nothing else: the container has no network. A scripted model (real tokenizer, real chat template) drives it;
gym_swe grades in a fresh container."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium
import pytest

pytest.importorskip("minisweagent")
pytest.importorskip("aiohttp")

import gym_swe  # noqa: F401
from gym_swe.errors import ConfigError
from gym_swe.integrations.harness_image import HARNESS_IMAGE, HARNESS_PYTHON
from gym_swe.integrations.mini_swe_agent import inside_sandbox_options, run_episode_inside
from gym_swe.rollout.generators.base import SamplingParams
from gym_swe.rollout.proxy import ProxyServer
from gym_swe.rollout.proxy.recorder import sampled_ids
from gym_swe.tasks.functions import load_function_tasks
from tests.conftest import require_docker
from tests.integrations.test_mini_swe_agent import SUBMIT, bash, write_file
from tests.rollout.conftest import TOKENIZERS
from tests.rollout.test_proxy import RecordingGenerator, tokenizer_for

pytestmark = pytest.mark.docker
# Opens a connection through the forwarder on the container's loopback, then lists the interfaces.
PROBE = "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 8765))' && cat /proc/net/dev"


@pytest.fixture(scope="module")
def tokenizer():  # type: ignore[no-untyped-def]
    return tokenizer_for("qwen2.5-instruct" if (TOKENIZERS / "qwen2.5-instruct").is_dir() else "tiny-bpe")


@pytest.fixture(scope="module")
def harness_image() -> str:
    """Built by `make image` in CI (then this finds it up to date), else here (about a minute, once)."""
    require_docker()
    from gym_swe.integrations.harness_image import build_harness_image

    return build_harness_image()


def play_inside_docker(tokenizer, turns: list[str], socket_dir: Path):  # type: ignore[no-untyped-def]
    generator = RecordingGenerator(tokenizer, turns)
    socket_dir.mkdir()
    options = inside_sandbox_options(str(socket_dir), sandbox="docker")
    env = gymnasium.make("CodeDebug-v0", sandbox="docker", sandbox_options=options)
    try:
        with ProxyServer(generator, SamplingParams(max_tokens=4096), max_model_len=32768,
                         unix_socket=str(socket_dir / "proxy.sock")) as proxy:  # fmt: skip
            trajectory = run_episode_inside(env, proxy, "GymSwe/0", timeout=600)
    finally:
        env.close()
    return trajectory, generator


def test_mini_cli_in_a_container_fixes_a_codedebug_task_through_the_socket(
    tokenizer, harness_image: str, tmp_path: Path
) -> None:
    task = load_function_tasks("bundled").get("GymSwe/0")
    turns = [
        # $PPID: the process that started the command's shell, which is mini-swe-agent itself.
        bash(f"{PROBE} && echo $HOSTNAME && tr '\\0' '\\n' < /proc/$PPID/cmdline | head -3", 0),
        write_file("/workspace/solution.py", task.fixed_code, 1),
        bash(SUBMIT, 2),
    ]
    trajectory, generator = play_inside_docker(tokenizer, turns, tmp_path / "proxy")
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason, len(trajectory.turns)) == (1.0, "submitted", 3)
    assert trajectory.terminated and trajectory.resolved
    assert sampled_ids(trajectory) == generator.sampled and trajectory.forks == 0
    # mini's own tool result (JSON): mini ran in the container (the harness image's python) and ran its
    # command there (hostname "sandbox"), where the forwarder took the connection and the one network
    # interface is lo.
    result = json.loads(trajectory.turns[0].observation)
    assert result["returncode"] == 0, result
    lines = result["output"].splitlines()
    interfaces = [line.split(":")[0].strip() for line in lines[2:-4]]
    assert interfaces == ["lo"], result["output"]
    assert lines[-4:] == ["sandbox", HARNESS_PYTHON, "-m", "minisweagent.run.mini"], result["output"]


def test_mini_cli_in_a_container_that_never_fixes_gets_zero(
    tokenizer, harness_image: str, tmp_path: Path
) -> None:
    turns = [bash("ls /workspace", 0), bash(SUBMIT, 1)]
    trajectory, _ = play_inside_docker(tokenizer, turns, tmp_path / "proxy")
    assert trajectory.error is None, trajectory.error
    assert (trajectory.reward, trajectory.end_reason, trajectory.resolved) == (0.0, "submitted", False)
    assert "solution.py" in json.loads(trajectory.turns[0].observation)["output"]


def test_inside_docker_options_that_cannot_work_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="python_prefix is for sandbox='local'"):
        inside_sandbox_options(str(tmp_path), python_prefix="/usr", sandbox="docker")
    with pytest.raises(ConfigError, match="'local' or 'docker'"):
        inside_sandbox_options(str(tmp_path), sandbox="ray")
    require_docker()
    from gym_swe.errors import SandboxUnavailableError
    from gym_swe.integrations.harness_image import require_harness_image

    with pytest.raises(SandboxUnavailableError, match="gym-swe images build --harness mini-swe-agent"):
        require_harness_image("gym-swe-harness:never-built")
    env = gymnasium.make("CodeDebug-v0", sandbox="docker")  # no socket bound: the CLI could reach nothing
    try:
        with pytest.raises(ConfigError, match="inside_sandbox_options"):
            run_episode_inside(env, object(), "GymSwe/0")
    finally:
        env.close()


def test_the_readme_inside_docker_snippet_runs_with_a_tiny_model(harness_image: str, tmp_path: Path) -> None:
    """As written, but for the model: a tiny random one. Its replies hold no command: mini answers each with
    its format-error message and stops after three in a row (RepeatedFormatError); graded as truncated."""
    import re

    from gym_swe.rollout.tiny import make_tiny_bpe_model
    from tests.conftest import REPO_ROOT
    from tests.rollout.conftest import MODELS
    from tests.test_readme import MODEL_PLACEHOLDER, run

    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Train your own agent harness\n", 1)[1].split("\n## ", 1)[0]
    blocks = [b for b in re.findall(r"```python\n(.*?)```", section, re.S) if "run_episode_inside(" in b]
    assert len(blocks) == 1 and blocks[0].count(MODEL_PLACEHOLDER) == 1
    code = blocks[0].replace(MODEL_PLACEHOLDER, repr(str(make_tiny_bpe_model(MODELS))))
    turns, end_reason, reward = run(code, tmp_path).stdout.split()[-3:]
    assert (turns, end_reason, reward) == ("3", "harness_stopped", "0.0")


def test_images_build_harness_skips_an_up_to_date_image(harness_image: str) -> None:
    import subprocess
    import sys

    from gym_swe.sandbox.docker import docker_client

    # --method debootstrap: the base image's recipe as CI builds it (auto would first try a registry).
    command = ["images", "build", "--method", "debootstrap", "--harness", "mini-swe-agent"]
    done = subprocess.run([sys.executable, "-m", "gym_swe.cli", *command], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"{HARNESS_IMAGE} is up to date" in done.stdout
    labels = docker_client().images.get(HARNESS_IMAGE).labels
    assert labels["gym_swe.harness"] == "mini-swe-agent" and len(labels["gym_swe.recipe"]) == 16
    # What builds left (the install stage holding the wheels, an older harness image) was pruned.
    assert docker_client().images.list(filters={"dangling": True, "label": "gym_swe.harness"}) == []
