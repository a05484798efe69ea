"""A trajectory: one episode as one token sequence, with what training and evaluation need around it."""

from __future__ import annotations

import itertools
import json
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, TextIO

from gym_swe.grading.base import valid_text


@dataclass
class Turn:
    """One model turn inside the token sequence."""

    start: int
    """Index of its first sampled id in ``Trajectory.token_ids``."""
    length: int
    """How many ids the model sampled."""
    text: str
    """What the env received as the action."""
    finish_reason: str
    bridge_length: int = 0
    """How many template ids follow the sampled ones (tool results, the next generation prompt)."""
    reward: float = 0.0
    """The env's reward for this step."""
    observation: str = ""
    generate_seconds: float = 0.0
    env_seconds: float = 0.0
    tool_errors: int = 0
    """Tool calls of this turn that could not be parsed or run as written (the env's ``parse_errors``)."""
    format_penalty: float = 0.0
    """What the env took off this step's reward for a turn it could not parse (its ``format_penalty``)."""
    step_limit: str | None = None
    """The step bound that cut this turn short (the env's ``info["step_limit"]``: ``"max_tool_calls"``,
    ``"max_step_seconds"``, ``"interrupted"``), or None."""


@dataclass
class Trajectory:
    """One episode. ``token_ids`` is exactly what the model saw and wrote: prompt ids, then per turn the
    sampled ids (``loss_mask`` 1, with ``logprobs``) and the bridge ids of the chat template (mask 0)."""

    task_id: str
    sample_index: int = 0
    env_id: str = ""
    token_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float | None] = field(default_factory=list)
    """Per id: the sampling log-probability of sampled ids; None elsewhere and where the backend gave none."""
    prompt_length: int = 0
    turns: list[Turn] = field(default_factory=list)
    reward: float = 0.0
    """The episode's return: the sum of its step rewards."""
    grade: dict[str, Any] | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    terminated: bool = False
    truncated: bool = False
    end_reason: str = ""
    error: str | None = None
    """Why the episode failed (a generator or env error), if it did: a failure is data, not a crash."""
    rerender_matches: bool | None = None
    """Whether a full re-render of the messages gives the same ids (None: not checked or not renderable)."""
    generator: str = ""
    policy_version: int | None = None
    """Which weights generated it (a trainer's update count), for staleness in asynchronous training."""
    segment_starts: list[int] = field(default_factory=list)
    """Where each segment after the first begins in ``token_ids``. A black-box harness that rewrote its
    history (see `gym_swe.rollout.proxy`) starts a new segment, its prompt rendered afresh rather than
    bridged: each segment is a sequence of its own for training. Empty: one segment."""
    forks: int = 0
    """How many times the harness rewrote its history (each one started a segment)."""
    advantage: float | None = None
    """The advantage a trainer gave this episode in its loss (None: none recorded; `gym-swe view` then shows
    the reward minus its group's mean, and says so)."""
    has_token_ids: bool = True
    """False where the generator returned messages, not token ids (``openai-chat``, a hosted model: in
    gym_swe's tool loop, or behind the proxy in black-box mode): ``token_ids``, ``loss_mask`` and
    ``logprobs`` are empty and every turn's ``length`` is 0; ``messages`` are what it carries, for evaluation
    and supervised fine-tuning data. Nothing to train on: the trainer takes no generator that makes these."""

    # -- building --------------------------------------------------------------------------------------------
    def add_prompt(self, ids: list[int]) -> None:
        self.token_ids += ids
        self.loss_mask += [0] * len(ids)
        self.logprobs += [None] * len(ids)
        self.prompt_length = len(ids)

    def add_sampled(
        self, ids: list[int], logprobs: list[float] | None, text: str, finish_reason: str
    ) -> Turn:
        turn = Turn(start=len(self.token_ids), length=len(ids), text=text, finish_reason=finish_reason)
        self.token_ids += ids
        self.loss_mask += [1] * len(ids)
        self.logprobs += list(logprobs) if logprobs is not None else [None] * len(ids)
        self.turns.append(turn)
        return turn

    def start_segment(self, ids: list[int]) -> None:
        """A new segment whose prompt is ``ids`` (the history as the harness rewrote it): a fork."""
        self.segment_starts.append(len(self.token_ids))
        self.forks += 1
        self.token_ids += ids
        self.loss_mask += [0] * len(ids)
        self.logprobs += [None] * len(ids)

    def add_bridge(self, ids: list[int]) -> None:
        self.token_ids += ids
        self.loss_mask += [0] * len(ids)
        self.logprobs += [None] * len(ids)
        self.turns[-1].bridge_length = len(ids)

    # -- reading ---------------------------------------------------------------------------------------------
    @property
    def resolved(self) -> bool:
        return bool(self.grade and self.grade.get("resolved"))

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def segment_count(self) -> int:
        return 1 + len(self.segment_starts)

    def segment_bounds(self) -> list[tuple[int, int]]:
        """(start, end) of each segment in ``token_ids``: one token sequence each, as the model saw it."""
        edges = [0, *self.segment_starts, len(self.token_ids)]
        return list(itertools.pairwise(edges))

    def segments(self) -> Iterator[tuple[str, list[int]]]:
        """("prompt" | "sampled" | "bridge", ids) in order; they concatenate to ``token_ids``. A segment
        after the first opens with a "prompt" of its own."""
        yield "prompt", self.token_ids[: self.prompt_length]
        position = self.prompt_length
        for turn in self.turns:
            if turn.start > position:  # a new segment's prompt
                yield "prompt", self.token_ids[position : turn.start]
            yield "sampled", self.token_ids[turn.start : turn.start + turn.length]
            end = turn.start + turn.length
            if turn.bridge_length:
                yield "bridge", self.token_ids[end : end + turn.bridge_length]
            position = end + turn.bridge_length
        if position < len(self.token_ids):  # a segment opened after the last turn
            yield "prompt", self.token_ids[position:]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        known = {f.name for f in fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        values["turns"] = [Turn(**turn) for turn in values.get("turns", [])]
        if "has_token_ids" not in values:  # written before the field: a chat generator's turns had no ids
            values["has_token_ids"] = bool(values.get("token_ids")) or not values["turns"]
        return cls(**values)


def trajectory_line(trajectory: Trajectory) -> str:
    """``trajectory`` as one line of JSON, newline included, that encodes as UTF-8 whatever it holds: text
    that is not valid Unicode (a lone surrogate, from bytes an agent wrote) is written as its escape, and a
    value JSON has no form for as its ``str``. Append these to write trajectories one at a time."""
    data = trajectory.to_dict()
    try:
        line = json.dumps(data, ensure_ascii=False)
        line.encode("utf-8")
    except (UnicodeEncodeError, TypeError):
        line = json.dumps(_as_valid_json(data), ensure_ascii=False)
    return line + "\n"


def _as_valid_json(value: Any) -> Any:
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {valid_text(str(key)): _as_valid_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_as_valid_json(item) for item in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return valid_text(str(value))


def save_jsonl(trajectories: Iterable[Trajectory], path: str | Path) -> Path:
    """Write ``trajectories`` to ``path`` as JSON Lines (`trajectory_line`), all or nothing: they go to a
    temporary file beside it, renamed over ``path`` once complete, so a failure midway leaves whatever was
    at ``path`` before, never a truncated file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.partial")
    try:
        with partial.open("x", encoding="utf-8") as handle:
            for trajectory in trajectories:
                handle.write(trajectory_line(trajectory))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def load_jsonl(path: str | Path) -> list[Trajectory]:
    with Path(path).open(encoding="utf-8") as handle:
        return [Trajectory.from_dict(json.loads(line)) for line in handle if line.strip()]


class JsonlAppender:
    """An ``on_trajectory`` callback that appends each trajectory to a JSON Lines file as it ends and flushes
    it (`trajectory_line`: whatever a trajectory holds encodes), so that a crash loses none that ended. Safe
    to call from several threads. ``before``: applied to each trajectory first (a trainer notes its policy
    version); ``then``: called after (a progress bar)."""

    def __init__(
        self,
        path: str | Path,
        before: Callable[[Trajectory], None] | None = None,
        then: Callable[[Trajectory], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle: TextIO | None = self.path.open("w", encoding="utf-8")
        self._lock = threading.Lock()
        self._before, self._then = before, then
        self.written = 0

    def __call__(self, trajectory: Trajectory) -> None:
        if self._before is not None:
            self._before(trajectory)
        line = trajectory_line(trajectory)
        with self._lock:
            if self._handle is None:
                raise ValueError(f"{self.path}: the appender is closed")
            self._handle.write(line)
            self._handle.flush()
            self.written += 1
        if self._then is not None:
            self._then(trajectory)

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
