"""Token-exactness of a trajectory whose harness rewrote its history (a fork: a new segment), for the CLI
harnesses that do (Claude Code re-sends a tool call with the defaults it filled in; Codex compacts)."""

from __future__ import annotations

from bisect import bisect_right

from gym_swe.rollout.proxy.recorder import sampled_ids
from gym_swe.rollout.trajectory import Trajectory
from tests.rollout.test_proxy import RecordingGenerator


def segment_of(trajectory: Trajectory, turn: int) -> int:
    """The index of the segment that holds turn ``turn``."""
    return bisect_right(trajectory.segment_starts, trajectory.turns[turn].start)


def assert_segments_token_exact(trajectory: Trajectory, generator: RecordingGenerator, forks: int) -> None:
    """The trajectory holds exactly the generator's samples; ``forks`` segments were started; and each
    turn's prompt is its segment of the trajectory up to that turn: bridged within a segment, rendered
    afresh only where a segment starts."""
    assert sampled_ids(trajectory) == generator.sampled
    assert (trajectory.forks, trajectory.segment_count) == (forks, forks + 1)
    starts = [0, *trajectory.segment_starts]
    for index, (turn, prompt) in enumerate(zip(trajectory.turns, generator.prompts, strict=True)):
        start = starts[segment_of(trajectory, index)]
        assert trajectory.token_ids[start : turn.start] == prompt, f"turn {index}"
