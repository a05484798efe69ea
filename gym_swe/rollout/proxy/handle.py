"""A rollout on a running proxy, as its caller holds it: where its harness sends requests (a base URL per
dialect, the secret), its state, and its trajectory when it ends, with the env's graded end on it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gym_swe.rollout.proxy.dialects import dialect_named
from gym_swe.rollout.proxy.registry import RolloutState
from gym_swe.rollout.trajectory import Trajectory

if TYPE_CHECKING:
    from gym_swe.rollout.proxy.server import ProxyServer


class RolloutHandle:
    """One rollout on a running proxy: where its harness sends requests, and its trajectory when done.

    ``base_url`` is what OpenAI's SDKs take (chat completions and the Responses API); `base_url_for` gives
    each dialect's; ``secret`` is the API key in every dialect."""

    def __init__(self, proxy: ProxyServer, state: RolloutState) -> None:
        self._proxy, self._state = proxy, state
        self.id, self.secret = state.rollout_id, state.secret
        self.root_url = f"{proxy.url}/rollout/{self.id}"
        self.base_url = self.root_url + "/v1"
        self.model = proxy.model_name

    def base_url_for(self, dialect: str) -> str:
        """The base URL that ``dialect``'s SDK takes ("chat_completions", "responses": ``.../v1``;
        "anthropic_messages", "google_generate": the rollout's root, to which those SDKs add their paths)."""
        return self.root_url + dialect_named(dialect).base_path

    @property
    def ended(self) -> bool:
        return self._state.ended

    @property
    def end_reason(self) -> str:
        """Why the proxy ended it ("max_turns", "max_model_len", "generator_error"), or "" while it runs."""
        return self._state.end_reason

    @property
    def turns(self) -> int:
        return self._state.turns

    def finish(
        self,
        reason: str = "finished",
        *,
        info: Mapping[str, Any] | None = None,
        reward: float | None = None,
        terminated: bool = False,
        truncated: bool = False,
    ) -> Trajectory:
        """End the rollout (later requests get 404) and return its trajectory.

        The proxy records tokens; the env grades. Pass the graded end of the episode so that the trajectory
        carries it, as the collector's do and as eval, view and the trainer read it: ``info``, the env's info
        from the step that ended the episode (or from ``env.unwrapped.truncate(reason)``), gives the grade,
        the end reason and any error; ``reward`` is the episode's return (by default what its grade paid,
        ``info["reward_grade"]``); ``terminated``/``truncated`` as that step returned them. Without ``info``
        the trajectory has no grade (``grade is None``) and a reward of 0.0: set them once the episode is
        graded, as `gym_swe.integrations.mini_swe_agent` does, which ends the rollout before grading so that
        nothing can generate while the agent's code runs."""
        trajectory = self._proxy._finish(self._state, reason)
        if info is not None:
            trajectory.grade = info.get("grade")
            trajectory.end_reason = str(info.get("end_reason") or trajectory.end_reason)
            if info.get("error") and not trajectory.error:
                trajectory.error = str(info["error"])
            trajectory.reward = float(info.get("reward_grade", 0.0) if reward is None else reward)
            trajectory.terminated, trajectory.truncated = bool(terminated), bool(truncated)
        elif reward is not None:
            trajectory.reward = float(reward)
        return trajectory

    def end(self, reason: str) -> None:
        """End the rollout from any thread without waiting for a request in flight (it is still recorded;
        later ones get 404). `finish` still returns the trajectory."""
        self._proxy._end_soon(self._state, reason)
