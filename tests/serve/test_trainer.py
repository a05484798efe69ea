"""``trainers/grpo.py --env_url``: GRPO on envs served by ``gym-swe serve``, one session per episode."""

from __future__ import annotations

from pathlib import Path

from gym_swe.rollout.tiny import make_tiny_bpe_model
from tests.rollout.conftest import MODELS
from tests.serve.server import EnvServer
from tests.trainers.runs import metrics, refused, train


def test_the_trainer_plays_its_episodes_on_a_served_env(server: EnvServer, tmp_path: Path) -> None:
    from gym_swe.rollout.trajectory import load_jsonl

    out = train("--env_url", server.url, "--model", str(make_tiny_bpe_model(MODELS)), "--steps", "1",
                "--tasks_per_step", "1", "--group_size", "2", "--max_new_tokens", "8", "--eval_every", "0",
                "--output_dir", str(tmp_path), "--run_name", "served")  # fmt: skip
    assert f"envs: CodeDebug-v0 served at {server.url}" in out
    (row,) = metrics(tmp_path / "served")
    assert row["rollout/failed"] == 0.0 and row["rollout/turns"] > 0
    trajectories = load_jsonl(tmp_path / "served" / "trajectories" / "step_00000.jsonl")
    assert len(trajectories) == 2
    assert all(t.env_id == "CodeDebug-v0" and t.grade is not None and not t.failed for t in trajectories)


def test_knobs_the_server_decides_are_refused_with_env_url(server: EnvServer) -> None:
    model = str(make_tiny_bpe_model(MODELS))
    said = refused("--env_url", server.url, "--model", model, "--max_turns", "3")
    assert "with --env_url the server's env and kwargs are the run's" in said
    said = refused("--env_url", server.url, "--model", model, "--ray_address", "auto")
    assert "--env_url plays served envs: it does not take --ray_address" in said
    said = refused("--env_url", "localhost:8000", "--model", model)
    assert "--env_url is the server's address, http://host:port" in said
