"""``trainers/grpo.py --env_url``: GRPO on envs served by ``gym-swe serve``, one session per episode. A run on
a served env is the README's own command (tests/serve/test_readme.py); here, what the flag refuses."""

from __future__ import annotations

from gym_swe.rollout.tiny import make_tiny_bpe_model
from tests.rollout.conftest import MODELS
from tests.trainers.runs import refused


def test_knobs_the_server_decides_are_refused_with_env_url() -> None:
    """Refused before anything loads or connects: no server is needed to be told."""
    model, url = str(make_tiny_bpe_model(MODELS)), "http://127.0.0.1:9"
    said = refused("--env_url", url, "--model", model, "--max_turns", "3")
    assert "with --env_url the server's env and kwargs are the run's" in said
    said = refused("--env_url", url, "--model", model, "--ray_address", "auto")
    assert "--env_url plays served envs: it does not take --ray_address" in said
    said = refused("--env_url", "localhost:8000", "--model", model)
    assert "--env_url is the server's address, http://host:port" in said
