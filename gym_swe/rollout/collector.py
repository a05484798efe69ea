"""The batched collector: many episodes at once, one generator call per turn for all of them.

Each round, every active trajectory's token ids go to the generator together in one batch (``hf``,
``vllm``), then the envs step in parallel threads so sandbox time overlaps. With a server (``vllm-server``,
``openai-chat``), which batches concurrent requests itself, each episode instead runs its own loop in a
thread: its requests go out as soon as its last step is done, and one episode's sandbox time overlaps the
others' generation. A trajectory whose next turn would not fit ``max_model_len`` ends truncated (the env
grades it as at ``max_turns``). A failing env, sandbox or generator makes a failed trajectory with its
reason; the other episodes go on.

Envs: the collector plays episodes through `gym_swe.rollout.episode_env.EpisodeEnv` and nothing else, so an
env in this process and one in a Ray actor (`gym_swe.integrations.ray.RayEnvPool`) are played alike. It takes
what ``gymnasium.make`` returns, wrappers and all, rather than the env at its base: the wrappers are part of
the episode (a time limit, a progress callback, a user's own), so every step goes through them.

Seeds: without a run seed, no request carries one, so the samples of a task are independent draws. With
one, each request carries `turn_seed` (run seed, task id, sample index, turn index): distinct for every
sample and turn, the same in every run, so a seeded run repeats exactly where its generator is deterministic
(``hf``) while the samples of a group still differ.

An episode that a wrapper ended rather than the env (a step limit added after ``gymnasium.make``, whose own
``max_episode_steps`` is the env's graded limit) is graded then, through the env's ``truncate``, with
``end_reason="time_limit"``: every trajectory that did not fail has its grade.

Stopping: Ctrl-C in the thread that called `collect` (or SIGTERM, which
`gym_swe.rollout.stopping.signals_interrupt` turns into the same), an exception from ``on_trajectory``, or a
`Stop` set from another thread ends the collection early. No episode starts or plays another turn, the command
each running episode's sandbox is running is interrupted (its sandbox closed if that is not enough within
`gym_swe.rollout.stopping.STOP_GRACE_SECONDS`), nothing that was still running is graded or reported, and the
envs `collect` made are closed before the exception goes on. What ended before went to ``on_trajectory``:
`gym_swe.rollout.trajectory.JsonlAppender` writes each one to a file as it ends, so that a crash or Ctrl-C
loses at most the episodes in flight.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium

from gym_swe.rollout.chat import ChatFormat
from gym_swe.rollout.episode_env import EpisodeEnv, as_episode_env
from gym_swe.rollout.generators.base import Generator, SamplingParams
from gym_swe.rollout.progress import Progress
from gym_swe.rollout.stopping import Stop, Stopped
from gym_swe.rollout.trajectory import Trajectory

EnvLike = EpisodeEnv | gymnasium.Env[Any, Any]
"""What the collector takes as an env: an episode env, or a Gymnasium env (``gymnasium.make``'s wrapper
chain) whose base env is one (`gym_swe.rollout.episode_env.as_episode_env`)."""
EnvFactory = Callable[[], EnvLike]


@dataclass
class _Episode:
    env: EpisodeEnv
    trajectory: Trajectory
    chat: ChatFormat | None
    messages_seen: int = 0
    done: bool = False


def collect(
    envs: Sequence[EnvLike] | EnvFactory,
    generator: Generator,
    task_ids: Sequence[str],
    samples_per_task: int = 1,
    sampling: SamplingParams | None = None,
    max_model_len: int = 8192,
    parallel: int = 32,
    seed: int | None = None,
    template_kwargs: Mapping[str, Any] | None = None,
    check_rerender: bool = True,
    on_trajectory: Callable[[Trajectory], None] | None = None,
    stop: Stop | None = None,
    progress: bool | None = None,
) -> list[Trajectory]:
    """Play ``samples_per_task`` episodes of each task with ``generator`` and return their trajectories.

    ``envs`` is a list of envs (``gymnasium.make`` results, or other episode envs such as a `RayEnvPool`'s
    handles; as many episodes run at once as there are envs; the caller closes them) or a factory making one
    (then up to ``parallel`` at once; closed here). An env that is not an episode env fails at once.
    Trajectories come back in task order, samples of one task together. ``on_trajectory`` is called as each
    one ends (for progress bars, logs, `JsonlAppender`).

    ``seed``: None (default) sends no seeds, so every sample is an independent draw; an int makes the run
    reproducible: each generator request gets `turn_seed` of it (the generator must take ``seeds``) and each
    env reset a seed derived the same way from (task id, sample index).

    ``stop``: set it from another thread to end the collection early; it then raises `Stopped`. Ctrl-C in
    this thread (`Interrupted` included) ends it the same way and goes on up. See the module docstring.

    ``progress``: a bar on stderr that moves as episodes end, with the turns played so far (a collection
    can take minutes); None (default): shown when stderr is a terminal. Callers with a bar of their own (the
    trainer, ``gym-swe eval``) pass False.
    """
    sampling = sampling or SamplingParams()
    stop = stop or Stop()
    jobs = [(task_id, index) for task_id in task_ids for index in range(samples_per_task)]
    bar = Progress(len(jobs), desc="collect") if _shows_progress(progress) else None
    try:
        return _collect(envs, generator, jobs, sampling, max_model_len, parallel, seed, template_kwargs,
                        check_rerender, on_trajectory, stop, bar)  # fmt: skip
    finally:
        if bar is not None:
            bar.close()


def _shows_progress(progress: bool | None) -> bool:
    if progress is not None:
        return progress
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced by an object without it, or closed
        return False


def _collect(
    envs: Sequence[EnvLike] | EnvFactory,
    generator: Generator,
    jobs: list[tuple[str, int]],
    sampling: SamplingParams,
    max_model_len: int,
    parallel: int,
    seed: int | None,
    template_kwargs: Mapping[str, Any] | None,
    check_rerender: bool,
    on_trajectory: Callable[[Trajectory], None] | None,
    stop: Stop,
    bar: Progress | None,
) -> list[Trajectory]:
    if bar is not None:  # the bar moves as each episode ends, before the caller hears of it
        given = on_trajectory

        def on_trajectory(trajectory: Trajectory) -> None:
            bar.on_trajectory(trajectory)
            if given is not None:
                given(trajectory)

    made: list[EpisodeEnv] = []
    if callable(envs):
        pool: list[EpisodeEnv] = []
        factory: EnvFactory | None = envs
        width = max(1, min(parallel, len(jobs)))
    else:
        pool, factory = [as_episode_env(env) for env in envs], None
        width = max(1, min(len(pool), len(jobs)))
    free = list(pool[:width])
    results: dict[tuple[str, int], Trajectory] = {}
    active: list[_Episode] = []
    pending = list(jobs)
    chat_only = getattr(generator, "chat", False)

    def make_env() -> EpisodeEnv:
        env = as_episode_env(factory())  # type: ignore[misc]
        made.append(env)
        return env

    def start(job: tuple[str, int], env: EpisodeEnv) -> _Episode:
        task_id, index = job
        trajectory = Trajectory(
            task_id=task_id,
            sample_index=index,
            generator=generator.name,
            env_id=env.spec.id if env.spec is not None else "",
            has_token_ids=not chat_only,  # a chat endpoint returns messages: the trajectory carries those
        )
        with stop.running(env):
            try:
                reset_seed = None if seed is None else derive_seed(seed, "reset", task_id, index)
                _, info = env.reset(seed=reset_seed, options={"task_id": task_id})
            except Exception as error:
                trajectory.error = f"reset failed: {type(error).__name__}: {error}"
                trajectory.end_reason = "env_error"
                return _Episode(env, trajectory, None, done=True)
        trajectory.messages, trajectory.tools = list(info["messages"]), list(info["tools"])
        chat = None
        if not chat_only:
            chat = ChatFormat(generator.tokenizer, info["tools"], template_kwargs)
            trajectory.add_prompt(chat.prompt_ids(info["messages"]))
        return _Episode(env, trajectory, chat, messages_seen=len(info["messages"]))

    def advance(episode: _Episode, sample: Any) -> bool:
        with stop.running(episode.env):
            done = _advance(episode, sample, max_model_len)
        if bar is not None:
            bar.on_turn()
        return done

    def finish(episode: _Episode) -> None:
        if not stop.is_set():  # an episode still running when the run stopped did not end: not reported
            _finish(episode, results, free, on_trajectory, check_rerender)

    def run_episodes() -> None:
        # A server batches concurrent requests itself: each episode runs its own loop in a thread, so one
        # episode's sandbox work overlaps the others' generation instead of waiting for a round to end.
        while not stop.is_set():
            with lock:
                if not pending:
                    return
                job, env = pending.pop(0), (free.pop() if free else make_env())
            episode = start(job, env)
            while not episode.done and not stop.is_set():
                sample = _generate(generator, [episode], sampling, max_model_len, seed)[0]
                if stop.is_set():  # what a stopped run generated is not played
                    break
                episode.done = advance(episode, sample)
            with lock:
                finish(episode)

    def play_rounds() -> None:
        while pending or active:
            if stop.is_set():
                raise Stopped(f"stopped with {len(results)} of {len(jobs)} episodes ended")
            # Fill the free slots with new episodes (resets run in parallel: each makes a sandbox).
            starting: list[tuple[tuple[str, int], EpisodeEnv]] = []
            while pending and (free or (factory is not None and len(active) + len(starting) < width)):
                env = free.pop() if free else make_env()
                starting.append((pending.pop(0), env))
            for episode in threads.map(lambda pair: start(*pair), starting):
                if episode.done:
                    finish(episode)
                else:
                    active.append(episode)
            if not active:
                continue
            samples = _generate(generator, active, sampling, max_model_len, seed)
            if stop.is_set():  # what a stopped run generated is not played
                continue
            finished = list(threads.map(advance, active, samples))
            for episode, done in zip(list(active), finished):
                if done:
                    active.remove(episode)
                    finish(episode)

    lock = threading.Lock()
    with stop.threads(width, made) as threads:  # whatever is raised, no episode is left running
        if getattr(generator, "concurrent", False):
            for future in [threads.submit(run_episodes) for _ in range(width)]:
                future.result()
            if stop.is_set():
                raise Stopped(f"stopped with {len(results)} of {len(jobs)} episodes ended")
        else:
            play_rounds()
    return [results[job] for job in jobs]


def derive_seed(run_seed: int, *key: str | int) -> int:
    """A seed for ``key`` in the run seeded ``run_seed``: the same in every process and run (a hash of the
    values, not Python's salted ``hash``), distinct for distinct keys, and below 2**31 so that any backend
    takes it."""
    digest = hashlib.blake2b(json.dumps([run_seed, *key]).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % 2**31


def turn_seed(run_seed: int, task_id: str, sample_index: int, turn: int) -> int:
    """The seed of one generator request: sample ``sample_index`` of ``task_id``, its ``turn`` (from 0)."""
    return derive_seed(run_seed, "turn", task_id, sample_index, turn)


def _seed_kwargs(episodes: Sequence[_Episode], run_seed: int | None) -> dict[str, Any]:
    """``seeds=`` for a generator call, or nothing without a run seed (so that generators without a
    ``seeds`` parameter still serve unseeded runs, and fail loudly rather than ignore a run seed)."""
    if run_seed is None:
        return {}
    trajectories = [episode.trajectory for episode in episodes]
    return {"seeds": [turn_seed(run_seed, t.task_id, t.sample_index, len(t.turns)) for t in trajectories]}


def _generate(
    generator: Generator,
    active: list[_Episode],
    sampling: SamplingParams,
    max_model_len: int,
    seed: int | None,
) -> list[Any]:
    """One sample (or a "no room" marker) per active episode: one generator call per distinct max_tokens."""
    if getattr(generator, "chat", False):  # a chat endpoint (openai-chat): messages in, messages out
        chat: Any = generator
        replies: list[Any] = chat.generate_chat(
            [episode.env.messages for episode in active],
            [e.trajectory.tools for e in active],
            sampling,
            **_seed_kwargs(active, seed),
        )
        return replies
    room = {id(e): min(sampling.max_tokens, max_model_len - len(e.trajectory.token_ids)) for e in active}
    groups: dict[int, list[_Episode]] = {}
    for episode in active:
        if room[id(episode)] > 0:
            groups.setdefault(room[id(episode)], []).append(episode)
    samples: dict[int, Any] = {}
    for max_tokens, members in groups.items():
        started = time.monotonic()
        batch = generator.generate(
            [e.trajectory.token_ids for e in members],
            sampling.with_max_tokens(max_tokens),
            **_seed_kwargs(members, seed),
        )
        elapsed = (time.monotonic() - started) / max(len(members), 1)
        for episode, sample in zip(members, batch):
            sample.details["generate_seconds"] = elapsed
            samples[id(episode)] = sample
    return [samples.get(id(episode)) for episode in active]


def _advance(episode: _Episode, sample: Any, max_model_len: int) -> bool:
    """Apply one sample to one episode: step its env, then add the bridge. Returns whether it ended."""
    trajectory, env = episode.trajectory, episode.env
    try:
        if sample is None:  # no room left for another turn
            _record_end(trajectory, env.truncate("max_model_len"), truncated=True)
            return True
        if getattr(sample, "error", None):
            trajectory.error = f"generator: {sample.error}"
            _record_end(trajectory, env.truncate("generator_error"), truncated=True)
            return True
        if episode.chat is None:  # a chat generator: the action is its assistant message
            action, turn = sample.message, trajectory.add_sampled([], None, sample.text, sample.finish_reason)
        else:
            action = sample.text
            turn = trajectory.add_sampled(
                sample.token_ids, sample.logprobs, sample.text, sample.finish_reason
            )
        turn.generate_seconds = sample.details.get("generate_seconds", 0.0)
        started = time.monotonic()
        observation, reward, terminated, truncated, info = env.step(action)
        turn.env_seconds = time.monotonic() - started
        turn.reward, turn.observation = float(reward), observation
        turn.tool_errors = len(info.get("parse_errors", ()))
        turn.format_penalty = float(info.get("format_penalty", 0.0))
        turn.step_limit = info.get("step_limit")
        messages = info["messages"]
        if (terminated or truncated) and not env.done:
            # A wrapper ended the episode, not the env (a step limit added after gymnasium.make): graded now,
            # as at max_turns, so that the trajectory has its grade and reward.
            reason = "time_limit" if truncated else "ended_by_wrapper"
            _record_end(trajectory, env.truncate(reason), terminated=terminated, truncated=truncated)
            return True
        if terminated or truncated:
            _record_end(trajectory, info, terminated=terminated, truncated=truncated)
            return True
        if episode.chat is not None:
            assistant, new = messages[episode.messages_seen], messages[episode.messages_seen + 1 :]
            bridge = episode.chat.bridge_ids(assistant, new, sample.token_ids)
            if len(trajectory.token_ids) + len(bridge) >= max_model_len:
                # The tool results and the next generation prompt do not fit: the episode ends here.
                trajectory.messages = list(messages)
                _record_end(trajectory, env.truncate("max_model_len"), truncated=True)
                return True
            trajectory.add_bridge(bridge)
        episode.messages_seen = len(messages)
        trajectory.messages = list(messages)
        return False
    except Exception as error:  # an env or template failure is this trajectory's, not the batch's
        trajectory.error = trajectory.error or f"{type(error).__name__}: {error}"
        trajectory.end_reason = trajectory.end_reason or "env_error"
        try:
            if not env.done:
                env.truncate("env_error")
        except Exception:
            pass
        return True


def _record_end(
    trajectory: Trajectory, info: Mapping[str, Any], terminated: bool = False, truncated: bool = False
) -> None:
    trajectory.terminated, trajectory.truncated = terminated, truncated
    trajectory.end_reason = info.get("end_reason", "")
    trajectory.grade = info.get("grade")
    trajectory.messages = list(info.get("messages", trajectory.messages))
    if info.get("error") and not trajectory.error:
        trajectory.error = str(info["error"])
    if "parse_errors" not in info:
        # Ended by truncate(), not by a step: the grade's reward was paid by no step, so it goes here.
        trajectory.reward += float(info.get("reward_grade", 0.0))


def _finish(
    episode: _Episode,
    results: dict[tuple[str, int], Trajectory],
    free: list[EpisodeEnv],
    on_trajectory: Callable[[Trajectory], None] | None,
    check: bool,
) -> None:
    trajectory = episode.trajectory
    trajectory.reward += sum(turn.reward for turn in trajectory.turns)
    if check and episode.chat is not None and not trajectory.failed and trajectory.turns:
        trajectory.rerender_matches = _rerender_matches(episode.chat, trajectory)
    results[(trajectory.task_id, trajectory.sample_index)] = trajectory
    free.append(episode.env)
    if on_trajectory is not None:
        on_trajectory(trajectory)


def _rerender_matches(chat: ChatFormat, trajectory: Trajectory) -> bool | None:
    """Would rendering the messages afresh give exactly the trajectory's ids? Tried with each assistant turn
    as the model wrote it (its raw text), then as the env recorded it (content and tool_calls). An episode
    that ended on a model turn may lack only the template's end-of-turn tail (a newline after the stop)."""
    ends_with_bridge = bool(trajectory.turns[-1].bridge_length)
    raw, texts = [], iter(turn.text for turn in trajectory.turns)
    for message in trajectory.messages:
        if message["role"] == "assistant":
            raw.append({"role": "assistant", "content": next(texts, "")})
        else:
            raw.append(message)
    ids = trajectory.token_ids
    candidates = [raw, trajectory.messages]
    if not ends_with_bridge:  # what the env said after the last turn (the submit result) is not in the ids
        last = max(i for i, m in enumerate(trajectory.messages) if m["role"] == "assistant")
        candidates = [messages[: last + 1] for messages in candidates]
    for messages in candidates:
        rendered = chat.rerender_ids(messages, add_generation_prompt=ends_with_bridge)
        if rendered is None:
            continue
        if rendered == ids or (
            not ends_with_bridge and rendered[: len(ids)] == ids and len(rendered) - len(ids) <= 2
        ):
            return True
    return False
