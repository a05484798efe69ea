"""Envs as a service: any registered gym_swe env served as an OpenEnv environment, and driven remotely.

- `gym_swe.serve.app`: the server (``gym-swe serve``), on OpenEnv's own server library: WebSocket sessions
  (one env and one sandbox each), the env's tools as MCP tools, the task API, health and metadata. It needs
  ``gym-swe[serve]`` (OpenEnv), in an environment of its own (``make serve-env``).
- `gym_swe.serve.client`: `ServedEnv`, the typed client, itself an episode env
  (`gym_swe.rollout.episode_env.EpisodeEnv`): gym_swe's collector and trainer play a served env as they play
  one in this process. It needs only ``gym-swe[serve-client]`` (websockets, pydantic).
- `gym_swe.serve.wire`: the typed action, observation and state, shared by both sides.

Importing this package loads neither side.
"""
