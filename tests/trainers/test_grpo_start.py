"""trainers/grpo.py at start-up, as a user meets it: a wrong flag, a model that is not there and a run name
used before are one line and exit 2, before the model loads; flags, names and packages are checked before torch
is imported, and what needs the env or a server (task ids, --base_url, --env_url) before the model loads and
before the run directory is made; --overwrite starts a used run name afresh."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.trainers.runs import TOY_FLAGS, TRAINER, metrics, refused, train

OFFLINE = {
    "HF_HUB_OFFLINE": "1"
}  # the hub is out of reach here: say so at once, not after a minute of retries
NO_MODEL = "nobody/no-such-model"  # looks like a hub id, so it is tried: it would fail to load


@pytest.mark.parametrize(("flags", "said"), [
    (["--model", NO_MODEL, "--stepz", "3"], "grpo.py: error: Unknown flag '--stepz'. Did you mean '--steps'?"),
    (["--model", "/no/such/model"], "grpo.py: error: --model '/no/such/model': no such directory; give a local"),
    (["--model", NO_MODEL], f"grpo.py: error: --model '{NO_MODEL}' could not be loaded: "),
    (["--model", NO_MODEL, "--group-size", "1"], "grpo.py: error: --group_size must be >= 2"),  # either spelling
    (["--model", NO_MODEL, "--max", "3"], "grpo.py: error: Unknown flag '--max'. Did you mean '--max_turns'?"),
])  # fmt: skip
def test_a_wrong_flag_or_model_is_one_line(flags: list[str], said: str, tmp_path: Path) -> None:
    line = refused(*TOY_FLAGS, "--output_dir", str(tmp_path), *flags, env=OFFLINE)
    assert line.startswith(said), line


def test_a_run_name_used_before_is_refused_before_the_model_loads(tmp_path: Path) -> None:
    earlier = tmp_path / "run"
    (earlier / "checkpoints" / "step_2").mkdir(parents=True)
    (earlier / "metrics.jsonl").write_text('{"step": 0}\n')
    line = refused(
        *TOY_FLAGS, "--model", NO_MODEL, "--output_dir", str(tmp_path), "--run_name", "run", env=OFFLINE
    )
    assert line == (
        f"grpo.py: error: {earlier} holds an earlier run: pass --resume {earlier} to continue it or --overwrite "
        "to start it afresh (or another --run_name)"
    )
    assert (earlier / "metrics.jsonl").read_text() == '{"step": 0}\n'  # left as it was


def test_overwrite_starts_a_used_run_name_afresh(tiny_bpe_model: Path, tmp_path: Path) -> None:
    earlier = tmp_path / "run"
    (earlier / "checkpoints" / "step_7").mkdir(parents=True)
    (earlier / "trajectories").mkdir()
    (earlier / "trajectories" / "step_0.jsonl").write_text("not a trajectory\n")
    (earlier / "metrics.jsonl").write_text('{"step": 0}\n{"step": 1}\n{"step": 2}\n')
    (earlier / "notes.txt").write_text("mine")
    train(*TOY_FLAGS, "--model", str(tiny_bpe_model), "--steps", "1", "--tasks_per_step", "1", "--group_size", "2",
          "--output_dir", str(tmp_path), "--run_name", "run", "--overwrite")  # fmt: skip
    assert [row["step"] for row in metrics(earlier)] == [0]
    assert sorted(path.name for path in (earlier / "checkpoints").iterdir()) == ["step_1"]
    assert "not a trajectory" not in (earlier / "trajectories" / "step_0.jsonl").read_text()
    assert (earlier / "notes.txt").read_text() == "mine"  # what the run did not write stays


def test_help_as_a_user_runs_it() -> None:
    done = subprocess.run([sys.executable, str(TRAINER), "--help"], cwd=REPO_ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("usage: grpo.py [--config FILE]")
    assert "GRPO:" in done.stdout and "--loss {dapo,grpo,dr_grpo,gspo,cispo}" in done.stdout


def free_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


HEAVY = ("torch", "transformers", "accelerate")
IMPORTS_AT_EXIT = """
import atexit, runpy, sys
sys.path.insert(0, sys.argv[1])
atexit.register(lambda: print("IMPORTED", [m for m in %r if m in sys.modules], file=sys.stderr))
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
""" % (HEAVY,)  # noqa: UP031


def run_and_list_imports(*flags: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """grpo.py run as a script with ``flags`` in ``cwd``; what it did, and which of `HEAVY` it had imported."""
    paths = f"{REPO_ROOT}:{REPO_ROOT / 'examples'}"
    command = [sys.executable, "-c", IMPORTS_AT_EXIT, str(REPO_ROOT / "trainers"), str(TRAINER), *flags]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": paths, **OFFLINE})  # fmt: skip
    [imported] = [line for line in done.stderr.splitlines() if line.startswith("IMPORTED ")]
    return done, json.loads(imported.removeprefix("IMPORTED ").replace("'", '"'))


def test_a_bad_sandbox_is_refused_before_torch_loads_and_leaves_no_run_directory(tmp_path: Path) -> None:
    done, imported = run_and_list_imports("--model", NO_MODEL, "--sandbox", "jail", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[0] == "grpo.py: error: Unknown sandbox 'jail'. Known: 'docker', 'local'."
    assert imported == [] and list(tmp_path.iterdir()) == []  # no runs/ made, nothing heavy imported


def test_help_and_a_typo_answer_before_torch_loads(tmp_path: Path) -> None:
    done, imported = run_and_list_imports("--help", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("usage: grpo.py") and imported == []
    done, imported = run_and_list_imports("--model", NO_MODEL, "--stepz", "3", cwd=tmp_path)
    assert done.returncode == 2 and "Did you mean '--steps'?" in done.stderr and imported == []


@pytest.mark.parametrize(("flags", "said"), [
    (["--train_task_ids", "toy/1,toy/99"], "grpo.py: error: Unknown task id 'toy/99'."),
    (["--generator", "vllm-server", "--base_url", "URL"], "grpo.py: error: --base_url URL: no vLLM server answers"),
])  # fmt: skip
def test_what_needs_the_env_or_a_server_is_found_before_the_model_loads(
    flags: list[str], said: str, tmp_path: Path
) -> None:
    """NO_MODEL would fail to load: the line is the check's, and no run directory was made."""
    url = free_url()
    flags = [flag.replace("URL", url) for flag in flags]
    line = refused(*TOY_FLAGS, "--model", NO_MODEL, "--output_dir", str(tmp_path), *flags, env=OFFLINE)
    assert line.startswith(said.replace("URL", url)), line
    assert list(tmp_path.iterdir()) == []


def test_a_dead_env_url_is_one_line_and_exit_2(tmp_path: Path) -> None:
    url = free_url()
    line = refused("--model", NO_MODEL, "--env_url", url, "--output_dir", str(tmp_path), env=OFFLINE)
    assert line.startswith(f"grpo.py: error: --env_url {url}: the env server at {url} could not be reached")
    assert list(tmp_path.iterdir()) == []


def test_a_broken_yaml_config_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("model: m\nsteps: [3\n")
    line = refused("--config", str(config), "--output_dir", str(tmp_path))
    assert (
        line.startswith(f"grpo.py: error: --config {config}: not YAML: ") and " at line 3, column 1" in line
    )


def test_a_package_the_setting_needs_is_named_before_anything_loads(tmp_path: Path) -> None:
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here")
    line = refused("--model", NO_MODEL, "--generator", "vllm", "--output_dir", str(tmp_path))
    assert line == (
        "grpo.py: error: --generator vllm needs the Python package 'vllm', which is not installed. Install it "
        'with: pip install "gym-swe[vllm]"'
    )
