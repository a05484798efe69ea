"""gym_swe envs in atropos (``atroposlib`` 0.4): a ``BaseEnv`` over any registered gym_swe env.

Each atropos item is a task id; a group is ``group_size`` episodes of it, played by gym_swe's collector (the
env's tool-call parser, its tools in its sandbox, its grade from a fresh sandbox) and returned as atropos's
scored data: the exact token ids of each trajectory, ``masks`` (the sampled ids, ``-100`` where the chat
template or the env wrote the token), ``scores`` (the episode's reward), ``inference_logprobs`` (the
sampling log-probabilities, 1.0 where masked, as atropos's own ``ManagedServer`` writes them) and the
``messages``. Generation goes through atropos's server manager (`AtroposServerGenerator`): its servers, load
balancing, semaphores, retries and metrics, over ``/v1/completions`` with token-id prompts, so the server
must return token ids (vLLM's OpenAI-compatible server does, ``server_type="openai"``). A group holding a
failed episode (the sandbox, the env or the generator broke) is not sent: a failure is not a score of 0.

The command line is atropos's own::

    python -m gym_swe.integrations.atropos process --env.env_id CodeDebug-v0 --env.group_size 4 \\
        --env.tokenizer_name PATH --openai.base_url http://127.0.0.1:8000/v1 --openai.model_name NAME \\
        --env.total_steps 2 --env.use_wandb false --env.data_path_to_save_groups rollouts.jsonl
    # serve: feed a trainer through `run-api` (--env.rollout_server_url); evaluate: pass@1 on eval tasks

``process`` writes the groups as JSON Lines with atropos's HTML view beside them; ``serve`` posts them to the
trajectory API; ``evaluate`` plays ``eval_task_ids`` (every task by default) once each and writes
``metrics.json`` and ``samples.jsonl`` to ``--env.data_dir_to_save_evals``.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import random
import sys
import threading
from collections.abc import Sequence
from typing import Any

import gymnasium

import gym_swe  # noqa: F401  (registers the envs)
from gym_swe.envs.step_bound import DEFAULT_MAX_STEP_SECONDS, DEFAULT_MAX_TOOL_CALLS
from gym_swe.errors import ConfigError, missing_dependency, unknown_name
from gym_swe.registration import check_env_id
from gym_swe.rollout.collector import collect
from gym_swe.rollout.generators.base import Sample, SamplingParams, request_seeds
from gym_swe.rollout.generators.vllm_server import CONTEXT_ERRORS, parse_completion
from gym_swe.rollout.stopping import Stop
from gym_swe.rollout.trajectory import Trajectory
from gym_swe.sandbox import check_backend

try:
    from atroposlib.envs.base import BaseEnv, BaseEnvConfig
    from atroposlib.envs.server_handling.server_manager import APIServerConfig
    from pydantic import Field, field_validator
except ImportError:
    raise missing_dependency("atroposlib", "atropos", feature="The atropos env") from None

logger = logging.getLogger(__name__)
MASKED = -100
"""atropos's mask for a token the trainer does not learn from."""
MASKED_LOGPROB = 1.0
"""atropos's logprob placeholder at masked positions."""


class GymSweEnvConfig(BaseEnvConfig):  # type: ignore[misc]  # atroposlib ships no types
    """atropos's env config plus the gym_swe env's (each is a ``--env.<name>`` flag)."""

    env_id: str = Field(default="CodeDebug-v0", description="The gym_swe env (CodeDebug-v0, SWEGym-v0).")
    tasks: str = Field(default="bundled", description="The env's task source: 'bundled', a dataset, a file.")
    sandbox: str = Field(default="local", description="Where episodes run: 'local' or 'docker'.")
    max_turns: int = Field(default=10, ge=1, description="Turns per episode.")
    max_tool_calls: int = Field(
        default=DEFAULT_MAX_TOOL_CALLS, ge=1, description="Tool calls run per action (the rest are not run)."
    )
    max_step_seconds: float = Field(
        default=DEFAULT_MAX_STEP_SECONDS, gt=0, description="Wall time of one action's tool calls together."
    )
    max_tokens_per_turn: int = Field(default=1024, ge=1, description="Tokens sampled per turn.")
    temperature: float = Field(default=1.0, ge=0.0, description="Sampling temperature.")
    # Comma-separated: atropos's command line passes one value per flag.
    task_ids: str = Field(default="", description="Training tasks, comma-separated (default: every task).")
    eval_task_ids: str = Field(
        default="", description="Tasks `evaluate` plays, comma-separated (default: all)."
    )
    seed: int = Field(default=0, description="Seed of the order training tasks are visited in.")

    @field_validator("env_id")
    @classmethod
    def _known_env(cls, env_id: str) -> str:
        return check_env_id(env_id)

    @field_validator("sandbox")
    @classmethod
    def _known_sandbox(cls, sandbox: str) -> str:
        return check_backend(sandbox)


class AtroposServerGenerator:
    """A gym_swe generator whose requests go through an atropos ``ServerManager`` (called from the
    collector's threads onto the env's event loop). ``split``: "train" or "eval", atropos's two request
    budgets. Seeds go as the request's ``seed``."""

    name = "atropos"
    concurrent = True  # the collector runs episodes in threads; the server manager batches what they send

    def __init__(
        self, server: Any, tokenizer: Any, loop: asyncio.AbstractEventLoop, split: str = "train"
    ) -> None:
        from gym_swe.rollout.chat import stop_token_ids

        self.server, self.tokenizer, self.loop, self.split = server, tokenizer, loop, split
        self.stop_ids = sorted(stop_token_ids(tokenizer))

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        params: SamplingParams,
        seeds: Sequence[int | None] | None = None,
    ) -> list[Sample]:
        per_prompt = request_seeds(prompts, seeds)
        futures = [
            asyncio.run_coroutine_threadsafe(self._complete(prompt, params, seed), self.loop)
            for prompt, seed in zip(prompts, per_prompt)
        ]
        return [future.result() for future in futures]

    async def _complete(self, prompt: Sequence[int], params: SamplingParams, seed: int | None) -> Sample:
        ids = list(prompt)
        extra = {
            # The ids go in the body as they are: given as ``prompt``, the OpenAI client walks the list
            # element by element, about 20 us a token (60 ms for a 3,000-token prompt, every turn).
            "prompt": ids,
            "top_k": params.top_k if params.top_k > 0 else -1,
            "stop_token_ids": sorted(set(self.stop_ids) | set(params.stop_token_ids)),
            "return_token_ids": True,
            "return_tokens_as_token_ids": True,
            "skip_special_tokens": False,
        }
        request: dict[str, Any] = {"seed": seed} if seed is not None else {}
        try:
            completion = await self.server.completion(
                prompt="", max_tokens=params.max_tokens, temperature=params.temperature, top_p=params.top_p,
                logprobs=1, extra_body=extra, split=self.split, **request,
            )  # fmt: skip
        except Exception as error:
            reason = _root_cause(error)
            if any(marker in reason.lower() for marker in CONTEXT_ERRORS):
                return Sample([], [], "", "length", details={"context_exceeded": True, "server": reason})
            return Sample.failed(f"atropos server manager: {reason}")
        try:
            answer = completion.model_dump()
            seen = answer["choices"][0].get("prompt_token_ids")
            if seen is not None and list(seen) != ids:  # vLLM says what it conditioned on: it must be ours
                return Sample.failed(
                    f"the server sampled after other prompt ids ({len(seen)}, not {len(ids)})"
                )
            return parse_completion(answer)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as error:
            return Sample.failed(f"unreadable completion: {type(error).__name__}: {error}")

    def sync_weights(self, model: Any) -> None:
        raise TypeError("atropos's trainer owns the weights and the servers: there is nothing to sync here")

    def close(self) -> None:
        pass


class GymSweAtroposEnv(BaseEnv):  # type: ignore[misc]  # atroposlib ships no types
    """A gym_swe env as an atropos env. Configure it with `GymSweEnvConfig` (``--env.*``) and atropos's
    server config (``--openai.*``); subclass it to change `config_init`'s defaults."""

    name = "gym_swe"
    env_config_cls = GymSweEnvConfig

    @classmethod
    def config_init(cls) -> tuple[GymSweEnvConfig, list[Any]]:
        # A local vLLM server takes any key; the OpenAI client refuses none.
        server = APIServerConfig(base_url="http://127.0.0.1:8000/v1", server_type="openai", api_key="EMPTY")
        # The name the env registers with the trajectory API under (atropos's serve sends None without it).
        return GymSweEnvConfig(wandb_name=cls.name), [server]

    def __init__(
        self, config: GymSweEnvConfig, server_configs: Any, slurm: bool = False, testing: bool = False
    ):
        # The env's settings are checked (its make kwargs, the task ids) before atropos loads the tokenizer.
        from gym_swe.envs.unwrapped import tool_env

        self._free_envs: list[gymnasium.Env[Any, Any]] = []
        self._envs_lock = threading.Lock()
        probe = self._make_env(config)
        try:
            known = [task.task_id for task in tool_env(probe).tasks]
        finally:
            probe.close()
        self.train_task_ids = _checked("task_ids", config.task_ids, known)
        self.eval_task_ids = _checked("eval_task_ids", config.eval_task_ids, known)
        super().__init__(config, server_configs, slurm=slurm, testing=testing)

    async def setup(self) -> None:
        config: GymSweEnvConfig = self.config
        self._order = random.Random(config.seed)
        self._tasks = self._epochs()
        loop = asyncio.get_running_loop()
        self.train_generator = AtroposServerGenerator(self.server, self.tokenizer, loop, "train")
        self.eval_generator = AtroposServerGenerator(self.server, self.tokenizer, loop, "eval")

    async def get_next_item(self) -> str:
        task_id: str = next(self._tasks)
        return task_id

    async def collect_trajectories(self, item: str) -> tuple[dict[str, Any] | None, list[Any]]:
        trajectories = await self._play([item], self.config.group_size, self.train_generator)
        return scored_group(trajectories), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> None:
        started = asyncio.get_running_loop().time()
        trajectories = await self._play(self.eval_task_ids, 1, self.eval_generator, temperature=0.0)
        scored = [t for t in trajectories if not t.failed]
        resolved = [t.resolved for t in scored]
        metrics = {
            "eval/pass@1": sum(resolved) / len(scored) if scored else 0.0,
            "eval/mean_reward": sum(t.reward for t in scored) / len(scored) if scored else 0.0,
            "eval/failed": float(len(trajectories) - len(scored)),
        }
        samples = [
            {"task_id": t.task_id, "reward": t.reward, "resolved": t.resolved, "end_reason": t.end_reason,
             "error": t.error, "messages": atropos_messages(t)}
            for t in trajectories
        ]  # fmt: skip
        ended = asyncio.get_running_loop().time()
        await self.evaluate_log(
            metrics, start_time=started, end_time=ended, samples=samples,
            generation_parameters={"temperature": 0.0, "max_tokens": self.config.max_tokens_per_turn},
        )  # fmt: skip

    # The three ways atropos runs an env (serve, process, evaluate): each closes the envs (their sandboxes)
    # when it ends, however it ends.
    async def env_manager(self) -> None:
        try:
            await super().env_manager()
        finally:
            self.close_envs()

    async def process_manager(self) -> None:
        try:
            await super().process_manager()
        finally:
            self.close_envs()

    async def _run_evaluate(self) -> None:
        try:
            await super()._run_evaluate()
        finally:
            self.close_envs()

    def close_envs(self) -> None:
        with self._envs_lock:
            envs, self._free_envs = self._free_envs, []
        for env in envs:
            env.close()

    # -- helpers ------------------------------------------------------------------------------------------
    async def _play(
        self,
        task_ids: Sequence[str],
        samples: int,
        generator: AtroposServerGenerator,
        temperature: float | None = None,
    ) -> list[Trajectory]:
        """``samples`` episodes of each task on envs from the pool, in a thread (the collector blocks)."""
        config: GymSweEnvConfig = self.config
        sampling = SamplingParams(
            max_tokens=config.max_tokens_per_turn,
            temperature=config.temperature if temperature is None else temperature,
        )
        # As many at once as a group has episodes (train), or atropos's eval workers (evaluate).
        width = config.group_size if generator.split == "train" else config.max_eval_workers
        envs = self._take_envs(max(1, min(len(task_ids) * samples, width)))
        stop = Stop()
        play = functools.partial(
            collect, envs, generator, list(task_ids), samples_per_task=samples, sampling=sampling,
            max_model_len=config.max_token_length, check_rerender=False, stop=stop,
        )  # fmt: skip
        running = asyncio.get_running_loop().run_in_executor(None, play)
        # The envs go back to the pool only once the collector is done with them: atropos cancels a group's
        # task (its worker timeout, an eval that stops training), but not the thread playing it, which the
        # stop ends at its episodes' next turn.
        running.add_done_callback(functools.partial(self._give_back, envs))
        try:
            return await asyncio.shield(running)
        except asyncio.CancelledError:
            stop.set()
            raise

    def _give_back(self, envs: list[gymnasium.Env[Any, Any]], played: asyncio.Future[Any]) -> None:
        with self._envs_lock:
            self._free_envs.extend(envs)
        if not played.cancelled():
            played.exception()  # a stopped group's `Stopped` is read here, not left for asyncio to report

    @property
    def idle_envs(self) -> int:
        """Envs in the pool, waiting for a group (each with its sandbox, kept between groups)."""
        with self._envs_lock:
            return len(self._free_envs)

    def _take_envs(self, count: int) -> list[gymnasium.Env[Any, Any]]:
        with self._envs_lock:
            taken, self._free_envs = self._free_envs[:count], self._free_envs[count:]
        return taken + [self._make_env(self.config) for _ in range(count - len(taken))]

    @staticmethod
    def _make_env(config: GymSweEnvConfig) -> gymnasium.Env[Any, Any]:
        return gymnasium.make(
            config.env_id, tasks=config.tasks, sandbox=config.sandbox, max_turns=config.max_turns,
            max_episode_steps=config.max_turns, max_tool_calls=config.max_tool_calls,
            max_step_seconds=config.max_step_seconds,
        )  # fmt: skip

    def _epochs(self) -> Any:
        """The training tasks, each epoch in a new order (seeded)."""
        for _ in itertools.count():
            order = list(self.train_task_ids)
            self._order.shuffle(order)
            yield from order


def scored_group(trajectories: Sequence[Trajectory]) -> dict[str, Any] | None:
    """A group of trajectories as atropos's ``ScoredDataGroup``; None (not sent) where any failed."""
    failed = [t for t in trajectories if t.failed]
    if failed:
        logger.warning(
            "a group of %s is not sent: %s", failed[0].task_id, failed[0].error or failed[0].end_reason
        )
        return None
    keys = ("tokens", "masks", "scores", "inference_logprobs", "messages", "overrides")
    group: dict[str, Any] = {key: [] for key in keys}
    for trajectory in trajectories:
        tokens = list(trajectory.token_ids)
        group["tokens"].append(tokens)
        group["masks"].append([t if m else MASKED for t, m in zip(tokens, trajectory.loss_mask)])
        group["inference_logprobs"].append(
            [
                lp if m and lp is not None else MASKED_LOGPROB
                for lp, m in zip(trajectory.logprobs, trajectory.loss_mask)
            ]
        )
        group["scores"].append(float(trajectory.reward))
        group["messages"].append(atropos_messages(trajectory))
        grade = trajectory.grade or {}
        group["overrides"].append(
            {"task_id": trajectory.task_id, "end_reason": trajectory.end_reason,
             "resolved": trajectory.resolved, "tests_passed": grade.get("passed"),
             "tests": grade.get("total")}
        )  # fmt: skip
    return group


def _checked(field: str, ids: str, known: list[str]) -> list[str]:
    """The task ids of a comma-separated flag (all of ``known`` when it is empty), each checked."""
    chosen = [part.strip() for part in ids.split(",") if part.strip()]
    for task_id in chosen:
        if task_id not in known:
            raise ConfigError(f"--env.{field}: " + unknown_name("task", task_id, known))
    return list(chosen) if chosen else list(known)


def atropos_messages(trajectory: Trajectory) -> list[dict[str, Any]]:
    """The episode's chat as atropos shows it (its HTML view reads ``content`` only): each assistant message
    with the text the model wrote, tool calls and all."""
    texts = iter(turn.text for turn in trajectory.turns)
    messages = []
    for message in trajectory.messages:
        if message["role"] == "assistant":
            message = {**message, "content": next(texts, message.get("content") or "")}
        messages.append({**message, "content": message.get("content") or ""})
    return messages


def _root_cause(error: BaseException) -> str:
    """What went wrong under tenacity's ``RetryError`` (atropos retries each request)."""
    last = getattr(error, "last_attempt", None)
    if last is not None and last.exception() is not None:
        error = last.exception()
    return f"{type(error).__name__}: {error}"


def main() -> None:
    """atropos's CLI (``serve``, ``process``, ``evaluate``) for `GymSweAtroposEnv`; a bad gym_swe setting is
    one line and exit 2."""
    from pydantic import ValidationError

    try:
        GymSweAtroposEnv.cli()
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    except (
        ValidationError
    ) as error:  # a --env.* value the config refuses (its checks run on the merged config)
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        print(f"error: --env.{where}: {first['msg']}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
