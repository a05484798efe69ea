"""An env pool on a Ray cluster: envs (each with its sandbox) live in Ray actors, the collector drives them.

``RayEnvPool`` is a sequence of env handles. A handle is an episode env
(`gym_swe.rollout.episode_env.EpisodeEnv`, the contract the collector plays envs through): it forwards
``reset``, ``step`` and ``truncate`` to a slot of an actor and keeps ``messages`` and ``done`` on this side,
so that ``collect(pool, generator, task_ids)`` runs unchanged::

    import ray
    from gym_swe.integrations.ray import RayEnvPool
    from gym_swe.rollout.collector import collect

    ray.init(address="auto")
    with RayEnvPool("CodeDebug-v0", {"sandbox": "docker"}, num_envs=64, resources={"docker_slot": 1}) as pool:
        trajectories = collect(pool, generator, task_ids, samples_per_task=8)

Each actor holds ``envs_per_actor`` envs and serves them from threads (a step spends its time waiting on a
sandbox, not on the CPU). ``resources`` places actors: a custom resource such as ``docker_slot``, declared by
``ray start --resources`` on the nodes that run a Docker daemon, puts them where their sandboxes can be made
(the Docker socket is local to each node).

Failures are data, as everywhere in the collector. An actor that dies (killed, its node lost, its process
out of memory) or stops answering (health checks, or a call that overruns its episode's deadline) is killed
and replaced; each episode it was running raises `EnvActorDied` with the reason, which the collector records
as a failed trajectory. What the dead actor started is reaped on its node: local jails die with their
process, their workspaces and the docker containers (labelled with the run, the actor and the episode) are
removed by a task pinned to that node. An episode past ``episode_timeout_s`` ends with the step in progress,
truncated and graded like one at ``max_turns`` (``end_reason="episode_deadline"``).
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from gym_swe.errors import ConfigError, GymSweError, missing_dependency
from gym_swe.rollout.episode_env import EpisodeEnv, as_episode_env

RUN_LABEL = "gym_swe.run"
ACTOR_LABEL = "gym_swe.ray_actor"
EPISODE_LABEL = "gym_swe.episode"
# How long past its episode's deadline a call may run before its actor counts as hung.
HUNG_CALL_GRACE_S = 60.0


class EnvActorDied(GymSweError):
    """The Ray actor holding an episode's env died or hung; the episode is lost (the actor is replaced)."""


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise missing_dependency("ray", "ray", feature="The Ray env pool") from None
    return ray


def connect(address: str) -> None:
    """Join the Ray cluster at ``address`` ("auto": the one `ray start` made on this node), unless this
    process is in a Ray session already. A cluster that cannot be reached is one clear error."""
    ray = _ray()
    if ray.is_initialized():
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if host and port.isdigit():
        # ray.init retries a dead address for minutes; a plain connection attempt says so in seconds.
        try:
            socket.create_connection((host, int(port)), timeout=10).close()
        except OSError as error:
            raise ConfigError(f"no Ray cluster answers at {address!r}: {error}") from None
    try:
        ray.init(address=address, logging_level="WARNING")
    except (ConnectionError, RuntimeError, ValueError) as error:
        raise ConfigError(f"no Ray cluster at {address!r}: {_first_line(error, 300)}") from None


class EnvActor:
    """A Ray actor's body: ``slots`` envs made with ``gymnasium.make(env_id, **make_kwargs)``, each used by
    one pool handle at a time. Methods run in the actor's threads; a lock per slot keeps one call per env."""

    def __init__(
        self, env_id: str, make_kwargs: Mapping[str, Any], slots: int, run_id: str, name: str
    ) -> None:
        import gymnasium

        import gym_swe  # noqa: F401  (registers the envs in this worker)

        self.run_id, self.name = run_id, name
        # As made (their base envs' sandbox settings get each episode's labels), and as the handles play them.
        self.envs = [gymnasium.make(env_id, **dict(make_kwargs)) for _ in range(slots)]
        self.episodes: list[EpisodeEnv] = [as_episode_env(env) for env in self.envs]
        self.locks = [threading.Lock() for _ in range(slots)]

    def where(self) -> dict[str, Any]:
        """Where this actor runs: what the pool needs to reap after it on its node."""
        ray = _ray()
        return {"node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid(),
                "host": socket.gethostname()}  # fmt: skip

    def spec(self) -> Any:
        return self.episodes[0].spec

    def ping(self) -> bool:
        return True

    def reset(
        self, slot: int, seed: int | None, options: dict[str, Any] | None, episode: str
    ) -> tuple[str, dict[str, Any]]:
        from gym_swe.envs.base import ToolEnv

        base = self.envs[slot].unwrapped
        with self.locks[slot]:
            if isinstance(base, ToolEnv) and base.sandbox_backend == "docker":
                # Labels on every container of this episode (the agent's and the grader's), so that a dead
                # actor's containers can be found and removed on its node.
                labels = dict(base.sandbox_options.get("labels") or {})
                labels.update({RUN_LABEL: self.run_id, ACTOR_LABEL: self.name, EPISODE_LABEL: episode})
                base.sandbox_options["labels"] = labels
            return self.episodes[slot].reset(seed=seed, options=options)

    def step(
        self, slot: int, action: Any, known: int
    ) -> tuple[str, float, bool, bool, dict[str, Any], list[dict[str, Any]]]:
        """`env.step`, with ``info["messages"]`` sent as the messages after the ``known`` ones the handle
        has: the chat only grows, and shipping all of it on every step would cost O(turns^2) bytes."""
        with self.locks[slot]:
            observation, reward, terminated, truncated, info = self.episodes[slot].step(action)
        return observation, float(reward), terminated, truncated, *_split_messages(info, known)

    def truncate(self, slot: int, reason: str, known: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        with self.locks[slot]:
            return _split_messages(self.episodes[slot].truncate(reason), known)

    def close(self) -> None:
        for env, lock in zip(self.episodes, self.locks):
            with lock:
                env.close()


def _split_messages(info: dict[str, Any], known: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``info`` without its messages, and the messages past the first ``known``."""
    info = dict(info)
    return info, info.pop("messages")[known:]


def reap(run_id: str, actor_name: str | None = None, pids: Sequence[int] = ()) -> list[str]:
    """Remove on this node what a dead actor of run ``run_id`` left (all of its actors' without a name): its
    docker containers, found by label, and the local workspaces of its processes ``pids`` once they are gone
    (their jails died with them). Only these: other runs' leftovers are `gym-swe sandbox prune`'s to remove.
    Returns what it removed."""
    removed: list[str] = []
    try:
        from gym_swe.sandbox.docker import docker_client

        client = docker_client()
    except Exception:
        client = None  # no docker SDK or daemon on this node: no container can have been started here
    if client is not None:
        labels = [f"{RUN_LABEL}={run_id}"] + ([f"{ACTOR_LABEL}={actor_name}"] if actor_name else [])
        for container in client.containers.list(all=True, filters={"label": labels}):
            try:
                container.remove(force=True)
                removed.append(f"container {container.short_id}")
            except Exception as error:
                if "No such container" not in str(error) and "404" not in str(error):
                    raise
    from gym_swe.sandbox.local import WORKSPACE_PREFIX, _remove_tree, workspace_root

    for pid in pids:
        if _wait_exited(pid, 60.0):  # a killed worker may stay a zombie a while: that counts as gone
            for path in sorted(workspace_root().glob(f"{WORKSPACE_PREFIX}{pid}-*")):
                _remove_tree(path)
                removed.append(f"workspace {path}")
    return removed


def _wait_exited(pid: int, seconds: float) -> bool:
    """Wait until process ``pid`` is gone or a zombie; whether it is."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except (OSError, IndexError):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


class _Member:
    """One actor of the pool, as the driver knows it."""

    def __init__(self, actor: Any, name: str, ready: Any) -> None:
        self.actor, self.name, self.ready = actor, name, ready
        self.where: dict[str, Any] | None = None
        self.dead_reason: str | None = None


class RayEnvHandle:
    """One env of a `RayEnvPool`: an episode env (`gym_swe.rollout.episode_env.EpisodeEnv`) whose episodes
    run in an actor. ``messages`` and `done` are kept here, from what the actor's calls return; an actor that
    died ends the episode (`done`), which then raises `EnvActorDied` with the reason."""

    def __init__(self, pool: RayEnvPool, index: int, slot: int) -> None:
        self._pool, self._index, self._slot = pool, index, slot
        self._member: _Member | None = None  # the actor that runs the current episode
        self._deadline: float | None = None
        self._episodes = itertools.count()
        self.messages: list[dict[str, Any]] = []
        """The chat of the current (or last) episode, as the actor's env has it."""
        self._done = True

    @property
    def spec(self) -> Any:
        """The spec of the pool's envs (made on the workers)."""
        return self._pool.spec

    @property
    def done(self) -> bool:
        """Whether no episode is running here: none started yet, it ended, or its actor died."""
        return self._done

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        episode = f"{self._pool.run_id}-{self._index}-{next(self._episodes)}"
        for attempt in range(2):  # an actor found dead between episodes costs no episode: retry on its heir
            member = self._pool._member(self._index)
            self._member, self._done = member, True
            timeout = self._pool.episode_timeout_s
            started = time.monotonic()
            try:
                observation, info = self._call(
                    member, member.actor.reset.remote(self._slot, seed, options, episode),
                    None if timeout is None else timeout + HUNG_CALL_GRACE_S,
                )  # fmt: skip
            except EnvActorDied:
                if attempt == 0:
                    continue
                raise
            self._deadline = None if timeout is None else started + timeout
            self.messages, self._done = list(info["messages"]), False
            if member.where is None:  # an heir: where it runs, for reaping after it should it die too
                member.where = _ray().get(member.ready)
            return observation, info
        raise AssertionError("unreachable")

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        member = self._current()
        ref = member.actor.step.remote(self._slot, action, len(self.messages))
        observation, reward, terminated, truncated, info, new = self._call(member, ref, self._call_timeout())
        self.messages = self.messages + new  # a new list: the collector may hold the last one
        info["messages"] = list(self.messages)
        self._done = bool(terminated or truncated)
        if not self._done and self._deadline is not None and time.monotonic() > self._deadline:
            # Out of time: the episode ends with this step, truncated and graded as one at max_turns would.
            ended = self.truncate("episode_deadline")
            info = {**info, **ended}
            reward, truncated = reward + float(ended["reward_grade"]), True
        return observation, reward, terminated, truncated, info

    def truncate(self, reason: str) -> dict[str, Any]:
        member = self._current()
        ref = member.actor.truncate.remote(self._slot, reason, len(self.messages))
        info: dict[str, Any]
        info, new = self._call(member, ref, self._call_timeout())
        self.messages = self.messages + new
        info["messages"], self._done = list(self.messages), True
        return info

    def close(self) -> None:
        """Nothing to do per handle: the pool closes the envs with its actors (`RayEnvPool.close`)."""

    def _current(self) -> _Member:
        member = self._member
        if member is None:
            raise GymSweError("step() before reset(): call reset() first to start an episode")
        if member.dead_reason is not None:  # it died while this episode waited for the generator
            self._done = True
            raise EnvActorDied(member.dead_reason)
        return member

    def _call_timeout(self) -> float | None:
        if self._deadline is None:
            return None
        return max(0.0, self._deadline - time.monotonic()) + HUNG_CALL_GRACE_S

    def _call(self, member: _Member, ref: Any, timeout: float | None) -> Any:
        ray = _ray()
        try:
            return ray.get(ref, timeout=timeout)
        except ray.exceptions.RayTaskError as error:  # the env raised: raise what it raised, as a local env
            cause = error.cause if isinstance(error.cause, BaseException) else GymSweError(str(error))
            raise cause from None
        except ray.exceptions.RayActorError as error:
            self._done = True
            raise EnvActorDied(self._pool._replace(member, _first_line(error))) from None
        except ray.exceptions.GetTimeoutError:
            self._done = True
            why = f"a call ran {HUNG_CALL_GRACE_S:.0f} s past its episode's deadline (the actor is hung)"
            raise EnvActorDied(self._pool._replace(member, why)) from None


class RayEnvPool(Sequence[RayEnvHandle]):
    """``num_envs`` envs of ``env_id`` in Ray actors; see the module docstring.

    Args:
        env_id: a registered env id (``"CodeDebug-v0"``, or ``"module:Env-v0"`` importable on the workers).
        make_kwargs: kwargs of ``gymnasium.make`` on the workers (``sandbox="docker"``, ``max_turns``...).
        num_envs: how many envs (and so episodes at once, at most).
        envs_per_actor: envs in each actor, served from its threads.
        num_cpus: Ray CPUs each actor reserves (sandbox work runs in other processes; the actor mostly waits).
        resources: custom Ray resources each actor needs, e.g. ``{"docker_slot": 1}``. The cluster must have
            them (a resource that no node has would leave the actors waiting forever, so it is an error).
        episode_timeout_s: an episode's deadline, from its reset (None: none).
        health_check_s: seconds between pings of every actor (0: no health checks); an actor that does not
            answer within ``health_timeout_s`` is killed and replaced.
        ready_timeout_s: how long the actors may take to be placed and to make their envs.
        run_id: labels this pool's containers (default: a fresh id).
    """

    def __init__(
        self,
        env_id: str,
        make_kwargs: Mapping[str, Any] | None = None,
        num_envs: int = 8,
        envs_per_actor: int = 4,
        num_cpus: float = 1.0,
        resources: Mapping[str, float] | None = None,
        episode_timeout_s: float | None = None,
        health_check_s: float = 30.0,
        health_timeout_s: float = 60.0,
        ready_timeout_s: float = 300.0,
        run_id: str | None = None,
    ) -> None:
        ray = _ray()
        for name, value in (("num_envs", num_envs), ("envs_per_actor", envs_per_actor)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive int, got {value!r}")
        if not isinstance(num_cpus, (int, float)) or num_cpus < 0:
            raise ConfigError(f"num_cpus must be a number >= 0, got {num_cpus!r}")
        if episode_timeout_s is not None and not episode_timeout_s > 0:
            raise ConfigError(f"episode_timeout_s must be > 0 seconds or None, got {episode_timeout_s!r}")
        if not health_check_s >= 0 or not health_timeout_s > 0 or not ready_timeout_s > 0:
            raise ConfigError("health_check_s must be >= 0, health_timeout_s and ready_timeout_s > 0")
        if health_check_s == 0 and health_timeout_s != 60.0:
            raise ConfigError("health_timeout_s needs health checks: health_check_s > 0")
        if not ray.is_initialized():
            raise ConfigError("RayEnvPool needs a Ray session: call ray.init(address=...) first")
        self.resources = dict(resources or {})
        available = ray.cluster_resources()
        for name, amount in self.resources.items():
            if not isinstance(amount, (int, float)) or amount <= 0:
                raise ConfigError(f"resources[{name!r}] must be a number > 0, got {amount!r}")
            if available.get(name, 0) < amount:
                have = sorted(k for k in available if not k.startswith("node:"))
                raise ConfigError(
                    f"no node of the Ray cluster has resource {name!r} (>= {amount}); it has {have}. "
                    f"Start the sandbox nodes with: ray start --resources='{{\"{name}\": N}}'"
                )
        self.env_id, self.make_kwargs = env_id, dict(make_kwargs or {})
        self.envs_per_actor, self.num_cpus = envs_per_actor, float(num_cpus)
        self.episode_timeout_s, self.health_timeout_s = episode_timeout_s, health_timeout_s
        self.run_id = run_id or uuid.uuid4().hex[:10]
        self._lock = threading.Lock()
        self._closed = False
        self._names = itertools.count()
        self._reaps: list[Any] = []
        self.replaced: list[str] = []
        """The reasons of the actors replaced so far, in order."""
        slots = [envs_per_actor] * (num_envs // envs_per_actor)
        if num_envs % envs_per_actor:
            slots.append(num_envs % envs_per_actor)
        self._slots = slots
        self._members = [self._spawn(count) for count in slots]
        places = [(actor, slot) for actor, count in enumerate(slots) for slot in range(count)]
        self._owner = [actor for actor, _ in places]  # handle index -> index of its actor in _members
        self._handles = [RayEnvHandle(self, index, slot) for index, (_, slot) in enumerate(places)]
        try:
            for member in self._members:
                self._wait_ready(member, ready_timeout_s)
            self.spec = ray.get(self._members[0].actor.spec.remote())
        except BaseException:
            self.close()
            raise
        self._stop = threading.Event()
        self._health: threading.Thread | None = None
        if health_check_s > 0:
            self._health = threading.Thread(
                target=self._check_health, args=(health_check_s,), name="gym_swe-ray-health", daemon=True
            )
            self._health.start()

    # -- the sequence the collector takes ------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._handles)

    def __getitem__(self, index: Any) -> Any:
        return self._handles[index]

    def __iter__(self) -> Iterator[RayEnvHandle]:
        return iter(self._handles)

    @property
    def actors(self) -> list[Any]:
        """The live actor handles (for inspection, and for tests that kill one)."""
        return [member.actor for member in self._members]

    # -- actors: start, replace, reap ------------------------------------------------------------------------
    def _spawn(self, slots: int) -> _Member:
        name = f"gym_swe-env-{self.run_id}-{next(self._names)}"
        remote = _remote(EnvActor).options(
            name=name,
            num_cpus=self.num_cpus,
            resources=self.resources or None,
            max_concurrency=slots + 2,  # one call per env, and room for health pings
            max_restarts=0,  # the pool replaces a dead actor itself, after reaping what it left
        )
        actor = remote.remote(self.env_id, self.make_kwargs, slots, self.run_id, name)
        return _Member(actor, name, actor.where.remote())

    def _wait_ready(self, member: _Member, timeout: float) -> None:
        ray = _ray()
        try:
            member.where = ray.get(member.ready, timeout=timeout)
        except ray.exceptions.GetTimeoutError:
            raise GymSweError(
                f"the env actors were not placed within {timeout:.0f} s: the cluster lacks the CPUs "
                f"({self.num_cpus} each) or resources ({self.resources}) for them"
            ) from None
        except ray.exceptions.RayError as error:
            raise GymSweError(f"an env actor failed to start: {_first_line(error, 2000)}") from None

    def _member(self, handle_index: int) -> _Member:
        with self._lock:
            if self._closed:
                raise GymSweError("the RayEnvPool is closed")
            return self._members[self._owner[handle_index]]

    def _replace(self, member: _Member, why: str) -> str:
        """Kill ``member`` (unless done already), reap after it, start its heir; the reason episodes get."""
        ray = _ray()
        with self._lock:
            if member.dead_reason is not None:
                return member.dead_reason
            place = f" on {member.where['host']} (pid {member.where['pid']})" if member.where else ""
            member.dead_reason = f"env actor {member.name}{place} died: {why}"
            self.replaced.append(member.dead_reason)
            try:
                ray.kill(member.actor, no_restart=True)  # a hung actor too: its calls fail now, not later
            except Exception:
                pass
            if member.where is not None:
                self._reaps.append(self._reap_on(member.where["node_id"], member.name, [member.where["pid"]]))
            if not self._closed:
                index = self._members.index(member)
                self._members[index] = self._spawn(self._slots[index])
        return member.dead_reason

    def _reap_on(self, node_id: str, actor_name: str | None, pids: Sequence[int]) -> Any:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        # Pinned to the node (the Docker socket and the workspaces are local to it); no CPU, so that a
        # cluster full of actors still runs it.
        task = _remote(reap).options(
            num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)
        )
        return task.remote(self.run_id, actor_name, list(pids))

    def wait_reaped(self, timeout: float = 120.0) -> list[str]:
        """Wait for the reaping after replaced actors; what it removed."""
        ray = _ray()
        with self._lock:
            reaps = list(self._reaps)
        removed: list[str] = []
        for result in ray.get(reaps, timeout=timeout):
            removed += result
        return removed

    def _check_health(self, every: float) -> None:
        ray = _ray()
        while not self._stop.wait(every):
            with self._lock:
                members = [m for m in self._members if m.where is not None]
            for member in members:
                try:
                    ray.get(member.actor.ping.remote(), timeout=self.health_timeout_s)
                except ray.exceptions.GetTimeoutError:
                    self._replace(member, f"no answer to a health check within {self.health_timeout_s:.0f} s")
                except ray.exceptions.RayError as error:
                    self._replace(member, _first_line(error))
            with self._lock:  # heirs are ready once placed; they are checked from the next round
                fresh = [m for m in self._members if m.where is None]
            for member in fresh:
                try:
                    member.where = ray.get(member.ready, timeout=self.health_timeout_s)
                except ray.exceptions.RayError:
                    pass

    def close(self) -> None:
        """Close every env (and its sandbox), end the actors and reap after them on their nodes."""
        ray = _ray()
        if getattr(self, "_stop", None) is not None:
            self._stop.set()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            members = list(self._members)
        closing = [m.actor.close.remote() for m in members if m.dead_reason is None]
        try:
            ray.get(closing, timeout=120)
        except ray.exceptions.RayError:
            pass  # an actor that died now is reaped below like any other
        nodes: dict[str, list[int]] = {}
        for member in members:
            if member.where is not None:
                nodes.setdefault(member.where["node_id"], []).append(member.where["pid"])
            try:
                ray.kill(member.actor, no_restart=True)
            except Exception:
                pass
        self._reaps += [self._reap_on(node, None, pids) for node, pids in nodes.items()]
        try:
            self.wait_reaped()
        except ray.exceptions.RayError:
            pass

    def __enter__(self) -> RayEnvPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_REMOTES: dict[Any, Any] = {}


def _remote(target: Any) -> Any:
    """``ray.remote(target)``, made once per process (each call would export it to the cluster again)."""
    if target not in _REMOTES:
        _REMOTES[target] = _ray().remote(target)
    return _REMOTES[target]


def _first_line(error: BaseException, limit: int = 500) -> str:
    """The useful part of a Ray error: its type and first lines, not the whole remote traceback."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:limit]}"
