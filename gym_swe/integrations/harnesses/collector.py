"""Many harness episodes at once, with `gym_swe.rollout.collector.collect`'s surface.

`collect_with_harness` is what ``gym-swe eval --harness NAME`` and ``trainers/grpo.py --harness NAME`` call
(through `collector_for`): it starts a proxy over the generator, gives each env a unix socket of its own on
that proxy (a directory per env, bound into its sandboxes: a flood of connections from one sandbox fills only
its own socket), and plays the episodes in threads with `gym_swe.integrations.harnesses.runner.run_episode`.
`play_in_threads` is the threading and stopping both this and mini-swe-agent's collector use.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from typing import Any

from gym_swe.errors import ConfigError
from gym_swe.integrations.harnesses.base import Harness
from gym_swe.integrations.harnesses.install import require_installed
from gym_swe.integrations.harnesses.registry import MINI_SWE_AGENT, check_harness_name, harness_named
from gym_swe.integrations.harnesses.runner import DEFAULT_TIMEOUT, run_episode
from gym_swe.rollout.generators.base import SamplingParams
from gym_swe.rollout.stopping import Stop, Stopped
from gym_swe.rollout.trajectory import Trajectory

Episode = Callable[[Any, str, int, Stop], Trajectory]
"""Plays one episode: (env, task id, sample index, stop) -> its trajectory."""


def play_in_threads(
    envs: Sequence[Any] | Callable[[], Any],
    task_ids: Sequence[str],
    play: Episode,
    samples_per_task: int = 1,
    parallel: int = 8,
    on_trajectory: Callable[[Trajectory], None] | None = None,
    stop: Stop | None = None,
) -> list[Trajectory]:
    """``samples_per_task`` episodes of each task, each in a thread with an env of its own, played by
    ``play``: ``envs`` is a list of envs (as many episodes at once; the caller closes them) or a factory (up
    to ``parallel`` at once; closed here). Trajectories in task order, samples of a task together. Stopping
    is `gym_swe.rollout.collector.collect`'s: Ctrl-C in this thread, or ``stop`` set elsewhere (then
    `Stopped`), ends every episode still running, ungraded and unreported."""
    jobs = [(task_id, index) for task_id in task_ids for index in range(samples_per_task)]
    factory = envs if callable(envs) else None
    free: list[Any] = [] if factory is not None else list(envs)  # type: ignore[arg-type]
    if factory is None and not free:
        raise ConfigError("no envs given (an empty list)")
    width = max(1, min(parallel if factory is not None else len(free), len(jobs)))
    stop = stop or Stop()
    made: list[Any] = []
    lock = threading.Lock()

    def one(job: tuple[str, int]) -> Trajectory | None:
        if stop.is_set():
            return None
        with lock:
            if free:
                env = free.pop()
            else:
                env = factory()  # type: ignore[misc]
                made.append(env)
        try:
            with stop.running(env):
                trajectory = play(env, job[0], job[1], stop)
        finally:
            with lock:
                free.append(env)
        if stop.is_set():  # still running when the run stopped: it did not end
            return None
        if on_trajectory is not None:
            on_trajectory(trajectory)
        return trajectory

    with stop.threads(width, made) as threads:  # whatever is raised, no agent is left running
        trajectories = [future.result() for future in [threads.submit(one, job) for job in jobs]]
        if stop.is_set():
            raise Stopped(f"stopped with {sum(t is not None for t in trajectories)} of {len(jobs)} ended")
        return trajectories  # type: ignore[return-value]


class EnvSockets:
    """A unix socket on ``proxy`` for each env, in a directory of its own, made on first use and removed by
    `close` (the proxy stops serving them when it closes)."""

    def __init__(self, proxy: Any) -> None:
        self.proxy = proxy
        self._root = tempfile.mkdtemp(prefix="gym_swe-harness-sockets-")
        self._sockets: dict[int, str] = {}
        self._lock = threading.Lock()

    def socket_for(self, env: Any) -> str:
        with self._lock:
            if id(env) not in self._sockets:
                directory = tempfile.mkdtemp(dir=self._root)
                self._sockets[id(env)] = self.proxy.listen(f"{directory}/proxy.sock")
            return self._sockets[id(env)]

    def close(self) -> None:
        shutil.rmtree(self._root, ignore_errors=True)


def run_episodes(
    envs: Sequence[Any] | Callable[[], Any],
    proxy: Any,
    harness: Harness | str,
    task_ids: Sequence[str],
    samples_per_task: int = 1,
    parallel: int = 8,
    on_trajectory: Callable[[Trajectory], None] | None = None,
    stop: Stop | None = None,
    files: str = "bind",
    timeout: float = DEFAULT_TIMEOUT,
) -> list[Trajectory]:
    """`play_in_threads` with ``harness`` playing every episode through ``proxy`` (running), each env with a
    socket of its own on it (`EnvSockets`)."""
    harness = harness_named(harness) if isinstance(harness, str) else harness
    sockets = EnvSockets(proxy)

    def play(env: Any, task_id: str, index: int, stop: Stop) -> Trajectory:
        socket = sockets.socket_for(env)
        return run_episode(
            env, proxy, harness, task_id, index, socket=socket, files=files, timeout=timeout, stop=stop
        )

    try:
        return play_in_threads(envs, task_ids, play, samples_per_task, parallel, on_trajectory, stop)
    finally:
        sockets.close()


def collect_with_harness(
    envs: Sequence[Any] | Callable[[], Any],
    generator: Any,
    task_ids: Sequence[str],
    samples_per_task: int = 1,
    sampling: SamplingParams | None = None,
    max_model_len: int = 8192,
    parallel: int = 8,
    seed: int | None = None,
    on_trajectory: Callable[[Trajectory], None] | None = None,
    on_turn: Callable[[], None] | None = None,
    stop: Stop | None = None,
    *,
    harness: Harness | str,
    files: str = "bind",
    timeout: float = DEFAULT_TIMEOUT,
) -> list[Trajectory]:
    """`gym_swe.rollout.collector.collect`'s surface, with ``harness`` (an npm harness, or its name) playing
    the episodes inside their sandboxes through a proxy over ``generator`` (started and stopped here; a chat
    generator, ``openai-chat``, is black-box mode: a hosted model, trajectories of messages, no token ids).
    ``on_turn`` is called after each of the model's turns (the harness steps no env until it ends: its turns
    are the proxy's completions). The harness must be installed (``gym-swe harnesses install NAME``)."""
    from gym_swe.rollout.proxy import ProxyServer

    harness = harness_named(harness) if isinstance(harness, str) else harness
    if seed is not None:
        raise ConfigError(
            "a run seed is not supported with a harness: the proxy sends no per-request seeds (the harness "
            "decides when it asks), so the run would not repeat; leave the seed out"
        )
    require_installed(harness)  # before a proxy starts (files='image' checks its image per episode)
    with ProxyServer(generator, sampling, max_model_len=max_model_len, on_turn=on_turn) as proxy:
        return run_episodes(
            envs, proxy, harness, task_ids, samples_per_task, parallel, on_trajectory, stop, files, timeout
        )


def collector_for(name: str) -> Callable[..., list[Trajectory]]:
    """The collector of the harness called ``name``, with `gym_swe.rollout.collector.collect`'s surface plus
    ``on_turn``: what ``--harness NAME`` plays the episodes with."""
    check_harness_name(name)
    if name == MINI_SWE_AGENT:
        from gym_swe.integrations.mini_swe_agent import collect_with_harness as mini_collect

        return mini_collect
    return functools.partial(collect_with_harness, harness=name)


def check_harness_ready(name: str) -> None:
    """Fail at once, before a model loads, where ``--harness NAME`` cannot run: an unknown name (the nearest
    named), an npm harness not installed (the command that installs it)."""
    check_harness_name(name)
    if name != MINI_SWE_AGENT:
        require_installed(harness_named(name))
