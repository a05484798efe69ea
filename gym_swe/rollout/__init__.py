"""LLM <-> env: generators sample, the collector plays episodes with them and keeps token-exact trajectories.

The collector drives envs through one contract, `EpisodeEnv` (`gym_swe.rollout.episode_env`): a gym_swe env
in this process, a Ray actor's env and any remote handle implement it.
"""

from gym_swe.rollout.episode_env import EpisodeEnv, as_episode_env

__all__ = ["EpisodeEnv", "as_episode_env"]
