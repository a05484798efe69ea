"""The rollouts a proxy serves: each with its own route id and bearer secret, its budget and its record.

A request names its rollout in the path and proves it with the rollout's secret; an unknown id is a 404, a
wrong secret a 401 (compared in constant time), a rollout that has ended a 404 that says so. Nothing a
request for one rollout says can reach another's record.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
import threading
from dataclasses import dataclass, field

from gym_swe.rollout.proxy.black_box import MessageRecorder
from gym_swe.rollout.proxy.conversation import Answer, RequestError
from gym_swe.rollout.proxy.recorder import TokenRecorder


@dataclass
class RolloutState:
    """One rollout: its credentials, budget and record. Touched only on the proxy's event loop."""

    rollout_id: str
    secret: str
    recorder: TokenRecorder | MessageRecorder
    """Token-exact (`TokenRecorder`), or messages only (black-box mode: `MessageRecorder`)."""
    max_turns: int | None
    turns: int = 0
    ended: bool = False
    end_reason: str = ""
    answered: dict[str, Answer] = field(default_factory=dict)
    """Responses by request digest: an SDK's retry of a request gets its recorded answer, not a new turn."""
    retries: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """One request of a rollout at a time: a retry that arrives while its original is still generating
    waits for it and then finds its answer."""

    def end(self, reason: str) -> None:
        if not self.ended:
            self.ended, self.end_reason = True, reason


class RolloutRegistry:
    """Rollouts by id. Opened and finished from any thread; read on the event loop."""

    def __init__(self) -> None:
        self._rollouts: dict[str, RolloutState] = {}
        # A finished rollout leaves only its secret and why it ended: a long run opens thousands, and a
        # record (its token ids) belongs to whoever took it with finish(), not to the proxy.
        self._finished: dict[str, tuple[str, str]] = {}
        self._lock = threading.Lock()

    def add(self, recorder: TokenRecorder | MessageRecorder, max_turns: int | None) -> RolloutState:
        with self._lock:
            rollout_id = secrets.token_hex(8)
            while rollout_id in self._rollouts or rollout_id in self._finished:
                rollout_id = secrets.token_hex(8)
            state = RolloutState(rollout_id, secrets.token_urlsafe(32), recorder, max_turns)
            self._rollouts[rollout_id] = state
            return state

    def authorize(self, rollout_id: str, given: str | None, hint: str = "") -> RolloutState:
        """The rollout a request that presents the secret ``given`` may use, or a `RequestError`: 404 unknown,
        401 wrong or missing secret (``hint``: how the request's dialect presents one), 404
        (``rollout_ended``) finished."""
        with self._lock:
            state = self._rollouts.get(rollout_id)
            finished = self._finished.get(rollout_id)
        if state is None and finished is None:
            raise RequestError(
                404, f"no rollout {rollout_id!r} on this proxy", "not_found_error", "not_found"
            )
        secret, reason = (state.secret, "") if state is not None else finished  # type: ignore[misc]
        if given is None or not hmac.compare_digest(given.encode(), secret.encode()):
            raise RequestError(
                401,
                f"wrong or missing secret for rollout {rollout_id!r}: send {hint or 'its secret'}",
                "authentication_error",
                "invalid_api_key",
            )
        if state is None:
            raise RequestError(
                404, f"rollout {rollout_id!r} has ended ({reason})", "not_found_error", "rollout_ended"
            )
        return state

    def forget(self, rollout_id: str) -> None:
        """Drop a finished rollout's record: its id stays known as ended, with its secret and why."""
        with self._lock:
            state = self._rollouts.pop(rollout_id, None)
            if state is not None:
                self._finished[rollout_id] = (state.secret, state.end_reason)

    def __len__(self) -> int:
        """Rollouts whose record the proxy holds (open, or ended by a budget and not yet finished)."""
        with self._lock:
            return len(self._rollouts)
