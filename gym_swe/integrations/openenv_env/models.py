"""The environment's typed action, observation and state, as OpenEnv packages ship them."""

from gym_swe.serve.environment import SweAction, SweObservation, SweState

__all__ = ["SweAction", "SweObservation", "SweState"]
