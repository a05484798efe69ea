"""`SweEnvClient`: a served gym_swe env for OpenEnv's users, as OpenEnv's own client class (``EnvClient``)
typed with the env's action, observation and state, the way every OpenEnv environment ships its client.

It has everything ``EnvClient`` has (async and ``.sync()``, ``from_docker_image``, ``new_session``)::

    from gym_swe.serve.openenv_client import SweAction, SweEnvClient

    ls = '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>'
    with SweEnvClient(base_url="http://localhost:8000").sync() as env:
        result = env.reset(task_id="GymSwe/1")
        result = env.step(SweAction(text=ls))
        print(result.observation.text, result.reward, result.done)

It needs OpenEnv (``gym-swe[serve]``); gym_swe's own collector and trainer use
`gym_swe.serve.client.ServedEnv`, which needs only websockets and pydantic.
"""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from gym_swe.serve.environment import SweAction, SweObservation, SweState

__all__ = ["SweAction", "SweEnvClient", "SweObservation", "SweState"]


class SweEnvClient(EnvClient):  # type: ignore[misc]  # EnvClient[SweAction, SweObservation, SweState]
    """OpenEnv's client for a served gym_swe env (see the module docstring)."""

    def _step_payload(self, action: SweAction) -> dict[str, Any]:
        # What the action holds, as it was given: the env reads a message as the model wrote it.
        payload: dict[str, Any] = action.model_dump(exclude_unset=True, exclude={"metadata"})
        return payload

    def _parse_result(self, payload: dict[str, Any]) -> StepResult:
        observation = SweObservation.model_validate(
            {
                **payload.get("observation", {}),
                "reward": payload.get("reward"),
                "done": payload.get("done", False),
            }
        )
        return StepResult(
            observation=observation, reward=payload.get("reward"), done=payload.get("done", False)
        )

    def _parse_state(self, payload: dict[str, Any]) -> SweState:
        return SweState.model_validate(payload)
