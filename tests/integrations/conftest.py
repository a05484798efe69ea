"""Fixtures of the stack adapters' tests: the tiny model and the real vLLM (CPU) server the rollout tests use,
one server for the whole session's stack tests (it takes a minute to start on two cores)."""

from tests.rollout.conftest import tiny_model, vllm_server

__all__ = ["tiny_model", "vllm_server"]
