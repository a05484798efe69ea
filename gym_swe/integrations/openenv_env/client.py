"""The environment's client, as OpenEnv packages ship one: `gym_swe.serve.openenv_client.SweEnvClient`."""

from gym_swe.serve.openenv_client import SweEnvClient

__all__ = ["SweEnvClient"]
