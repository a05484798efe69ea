"""A progress bar on stderr for runs of many episodes (`gym-swe eval`, `collect(..., progress=True)`)."""

from __future__ import annotations

import sys
import threading
import time

from gym_swe.rollout.trajectory import Trajectory


class Progress:
    """A progress bar on stderr that moves as episodes end, with the turns played so far: a batched generator
    plays episodes in lockstep, so they tend to end together, and the turns show the run is moving."""

    def __init__(self, total: int, desc: str = "episodes") -> None:
        from tqdm import tqdm

        self.turns = self.resolved = self.failed = 0
        self.bar = tqdm(
            total=total,
            desc=desc,
            file=sys.stderr,
            dynamic_ncols=True,
            mininterval=0,  # an episode's end is rare enough to draw each one; turns are drawn 2 a second
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} episodes [{elapsed}<{remaining}"
            "{postfix}]",
            postfix=self._counts(),
        )
        self._lock = threading.Lock()  # episodes step and end in the collector's threads
        self._shown_at = 0.0

    def on_turn(self) -> None:
        with self._lock:
            self.turns += 1
            now = time.monotonic()
            refresh = now - self._shown_at > 0.5  # a step can take milliseconds: do not redraw for each
            if refresh:
                self._shown_at = now
            self._postfix(refresh)

    def on_trajectory(self, trajectory: Trajectory) -> None:
        with self._lock:
            self.resolved += trajectory.resolved
            self.failed += trajectory.failed
            self._postfix(refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        self.bar.close()

    def _counts(self) -> str:
        return f"{self.turns} turns, {self.resolved} resolved, {self.failed} failed"

    def _postfix(self, refresh: bool) -> None:
        self.bar.set_postfix_str(self._counts(), refresh=refresh)
