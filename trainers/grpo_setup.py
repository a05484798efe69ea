"""What ``trainers/grpo.py`` sets up around the algorithm: the policy, the envs (in this process, in Ray
actors, or served by ``gym-swe serve``) and the tasks they play, the generator and its weight sync, the
collector that plays the episodes (gym_swe's own or a harness's) and the held-out evaluation, and closing all
of it however the run ends.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import random
import sys
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import gymnasium
import torch

from gym_swe.errors import ConfigError, GymSweError, MissingDependencyError, missing_dependency, unknown_name
from gym_swe.rollout.collector import collect, derive_seed
from gym_swe.rollout.generators import Generator, SamplingParams, make_generator
from gym_swe.rollout.generators.factory import check_server
from gym_swe.rollout.generators.model_names import loading
from gym_swe.rollout.stopping import Stop, interrupt_of, signals_interrupt
from gym_swe.rollout.trajectory import Trajectory

if TYPE_CHECKING:
    from grpo_config import Args


def load_policy(args: Args) -> tuple[Any, Any]:
    """The model to train (with --lora: its adapters) and its tokenizer; a name that does not load fails
    in one line."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with loading("--tokenizer" if args.tokenizer else "--model", args.tokenizer or args.model):
        tokenizer = AutoTokenizer.from_pretrained(args.tokenizer or args.model)
    with loading("--model", args.model):  # not on disk nor on the hub (or the hub out of reach): exit 2
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    if args.lora:
        try:
            from peft import LoraConfig, get_peft_model
        except ImportError:
            raise missing_dependency("peft", "train", feature="--lora") from None
        config = LoraConfig(
            r=args.lora_r, lora_alpha=args.lora_alpha, target_modules="all-linear", task_type="CAUSAL_LM"
        )
        model = get_peft_model(model, config)
    return model, tokenizer


def load_reference(args: Args, device: Any) -> Any:
    """The initial model, frozen, for the KL penalty (never with LoRA adapters of its own)."""
    model = load_policy(dataclasses.replace(args, lora=False))[0]
    return model.eval().requires_grad_(False).to(device)


def make_optimizer(args: Args, model: Any) -> tuple[Any, Any]:
    """AdamW over the trainable weights, and the learning-rate schedule (counted in optimizer steps)."""
    from transformers import get_scheduler

    optimizer = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad],
        lr=args.learning_rate,
        weight_decay=args.weight_decay,
        eps=args.adam_epsilon,
    )
    scheduler = get_scheduler(
        args.lr_schedule,
        optimizer,
        num_warmup_steps=args.warmup_steps * args.updates_per_batch,
        num_training_steps=args.steps * args.updates_per_batch,
    )
    return optimizer, scheduler


def make_kwargs(args: Args) -> dict[str, Any]:
    """``gymnasium.make``'s kwargs for --env: the task source, the sandbox, --env_kwargs, and --max_turns
    where given (the env's max_turns, its episodes' length); else the env keeps its own, as `gym-swe eval`
    does."""
    try:
        extra = json.loads(args.env_kwargs) if args.env_kwargs else {}
    except ValueError as error:
        raise ConfigError(f"--env_kwargs is not JSON: {error}") from None
    turns = {"max_turns": args.max_turns} if args.max_turns else {}
    return {"tasks": args.tasks, "sandbox": args.sandbox, **turns, **extra}


def make_env(args: Args) -> Any:
    try:
        return gymnasium.make(args.env, **make_kwargs(args))
    except gymnasium.error.Error as error:
        raise ConfigError(f"--env {args.env!r}: {error}") from None


def make_ray_pool(args: Args, num_envs: int) -> Any:
    """``num_envs`` envs in Ray actors on the cluster at --ray_address; the collector takes it as a list."""
    from gym_swe.integrations.ray import RayEnvPool, connect

    try:
        resources = json.loads(args.ray_resources) if args.ray_resources else None
    except ValueError as error:
        raise ConfigError(f"--ray_resources is not JSON: {error}") from None
    connect(args.ray_address)
    pool = RayEnvPool(args.env, make_kwargs(args), num_envs=num_envs, resources=resources)
    print(f"envs: {len(pool)} in {len(pool.actors)} Ray actors at {args.ray_address} (run {pool.run_id})")
    return pool


@dataclasses.dataclass
class EnvFacts:
    """What the run needs to know of its env, read from one env made for it (and closed)."""

    train_ids: list[str]
    eval_ids: list[str]
    max_turns: int | None  # the turns an episode may take (None: the env sets no limit we can read)


def make_served_env(args: Args) -> Any:
    """A session of the env served at --env_url (`gym_swe.serve.client.ServedEnv`); a server that cannot be
    reached, or is not a gym_swe env server, is a ConfigError: the run cannot start as given."""
    from gym_swe.serve.client import ServedEnv

    try:
        return ServedEnv(args.env_url)
    except ConfigError:
        raise
    except GymSweError as error:
        raise ConfigError(f"--env_url {args.env_url}: {error}") from None


def check_run(args: Args) -> EnvFacts:
    """What can be told before the model loads and the run directory is made, beyond the flags (which
    grpo_config checked before torch loaded): the env and its tasks (--train_task_ids, --eval_task_ids), the
    served envs answering (--env_url), the vLLM server answering with the model named (--base_url)."""
    facts = read_env(args)
    if args.generator == "vllm-server":
        check_server(args.generator, args.base_url, None, args.model, lambda option: "--" + option)
    return facts


def check_processes(accelerator: Any) -> None:
    """A launch of several processes that accelerate runs as one process each is refused before anything is
    written: each would train on the whole batch alone and all would write the same run directory. accelerate
    does this without a word where FSDP 2 is asked for and no accelerator device is there (FSDP 1 refuses)."""
    launched = int(os.environ.get("WORLD_SIZE", "1"))
    if launched != accelerator.num_processes:
        raise ConfigError(
            f"launched as {launched} processes, but accelerate runs this one alone "
            f"({accelerator.distributed_type}): FSDP needs a GPU or another accelerator device; "
            "on CPU, launch with --cpu (DDP over gloo)"
        )


def read_env(args: Args) -> EnvFacts:
    if args.env_url:  # the server says what it serves
        served = make_served_env(args)
        try:
            train_ids, eval_ids = split_tasks(args, served.task_ids())
            print(f"envs: {served.env_id} served at {args.env_url}")
            return EnvFacts(train_ids, eval_ids, served.max_turns)
        finally:
            served.close()
    probe = make_env(args)
    try:
        train_ids, eval_ids = split_tasks(args, [task.task_id for task in probe.unwrapped.tasks])
        limits = [getattr(probe.unwrapped, "max_turns", None), probe.spec and probe.spec.max_episode_steps]
        known = [limit for limit in limits if isinstance(limit, int) and limit > 0]
        return EnvFacts(train_ids, eval_ids, min(known) if known else None)
    finally:
        probe.close()


def generation_budget(args: Args, max_turns: int | None) -> int:
    """The most tokens a trajectory may sample: --max_new_tokens per turn over the env's turns, within
    --max_model_len (Dr. GRPO's constant: the loss of every trajectory is divided by it, never by its own
    length)."""
    return min(max_turns * args.max_new_tokens, args.max_model_len) if max_turns else args.max_model_len


def split_tasks(args: Args, task_ids: list[str]) -> tuple[list[str], list[str]]:
    """(train, eval) task ids: explicit lists, or the last ``eval_holdout`` of a seeded shuffle held out."""
    known = set(task_ids)
    for given in (args.train_task_ids, args.eval_task_ids):
        for task_id in filter(None, given.split(",")):
            if task_id not in known:
                raise ConfigError(unknown_name("task id", task_id, task_ids))
    shuffled = sorted(task_ids)
    random.Random(args.seed).shuffle(shuffled)
    if args.eval_task_ids:
        held = [t for t in args.eval_task_ids.split(",") if t]
    else:
        evaluating = args.eval_holdout and args.eval_every
        held = shuffled[len(shuffled) - args.eval_holdout :] if evaluating else []
    train = [t for t in args.train_task_ids.split(",") if t] or [t for t in shuffled if t not in held]
    if not train:
        raise ConfigError(f"no task left to train on ({len(task_ids)} tasks, {len(held)} held out for eval)")
    return train, held


def make_envs(args: Args, accelerator: Any, eval_ids: list[str]) -> tuple[Any, Any]:
    """This process's envs: one per episode of its share of a step, and one per eval task it plays."""
    episodes = args.tasks_per_step // accelerator.num_processes * args.group_size
    local_evals = len(eval_ids[accelerator.process_index :: accelerator.num_processes])
    if args.ray_address:  # eval has envs of its own there too: with --async, collection overlaps it
        return tuple(make_ray_pool(args, size) if size else [] for size in (episodes, local_evals))
    make = make_served_env if args.env_url else make_env
    return [make(args) for _ in range(episodes)], [make(args) for _ in range(local_evals)]


def close_envs(args: Args, envs: Any, eval_envs: Any) -> None:
    """Close the envs and their sandboxes (with Ray: the pools, their actors too)."""
    for env in [*envs, *eval_envs]:
        env.close()
    for ray_pool in (envs, eval_envs) if args.ray_address else ():
        if ray_pool:  # not an empty list (no eval tasks)
            ray_pool.close()  # its envs, their sandboxes and its actors


def shut_down(args: Args, pending: Future | None, envs: Any, eval_envs: Any, generator: Any) -> None:
    """After an error or a stop (its Stop set): the collection in the background ended, then the envs and
    the generator closed, each one's failure hushed: the error that ended the run is the one to report."""
    if pending is not None:
        with contextlib.suppress(BaseException):
            pending.result()
    with contextlib.suppress(Exception):
        close_envs(args, envs, eval_envs)
    if generator is not None:
        with contextlib.suppress(Exception):
            generator.close()


def play_episodes(args: Args) -> Any:
    """gym_swe's collector (without a bar of its own: the trainer has one), or with --harness that harness's,
    which has the same surface."""
    if not args.harness:
        return functools.partial(collect, progress=False)
    from gym_swe.integrations.harnesses.collector import collector_for

    return collector_for(args.harness)


def sampling(args: Args) -> SamplingParams:
    return SamplingParams(max_tokens=args.max_new_tokens, temperature=args.temperature, top_p=args.top_p)


def sampling_seed(args: Args, *key: Any) -> int | None:
    """A run seed for `collect` (one seed per task, sample and turn follows), or None where the backend takes
    no seeds safely (a vLLM server may chunk prefills, which its CPU build cannot do with seeds)."""
    if args.generator == "vllm-server" or args.harness:  # a harness's proxy sends no per-request seeds
        return None
    return derive_seed(args.seed, *key)


def evaluate(
    args: Args, envs: list, generator: Any, eval_ids: list[str], accelerator: Any, step: int, stop: Stop,
    save: Callable[[int, list[Trajectory]], None] | None = None,
) -> float:  # fmt: skip
    """pass@1 on the held-out tasks (each process plays its share), one sample each. ``save``: given the step
    and this process's trajectories (the run directory's ``write_eval``, which keeps every process's)."""
    mine = eval_ids[accelerator.process_index :: accelerator.num_processes]
    trajectories = []
    if mine:
        trajectories = play_episodes(args)(
            envs, generator, mine, samples_per_task=1, sampling=sampling(args),
            max_model_len=args.max_model_len, seed=sampling_seed(args, "eval", step), stop=stop,
        )  # fmt: skip
    if save is not None:
        save(step, trajectories)
    counts = torch.tensor(
        [float(sum(t.resolved for t in trajectories)), float(len(trajectories))], device=accelerator.device
    )
    resolved, total = accelerator.reduce(counts, reduction="sum").tolist()
    return resolved / max(total, 1.0)


def make_generator_for(args: Args, model: Any, tokenizer: Any) -> Generator:
    """The generator --generator names: hf generates with the trainer's own model (nothing to sync), vllm
    loads --model in this process, a vllm-server must answer at --base_url before the run starts."""
    return make_generator(
        args.generator,
        model=args.model,
        trainer_model=model,
        tokenizer=tokenizer,
        base_url=args.base_url,
        weights_dir=args.weights_dir,
        max_model_len=args.max_model_len,
        sleep_mode=args.vllm_sleep,
        seed=args.seed,
        eager=not torch.cuda.is_available(),  # CPU: no CUDA graphs to capture, no compile wait
        batch_size=args.generation_batch_size,
        flags=lambda option: "--" + option,
    )


def sync_generator(args: Args, accelerator: Any, generator: Any, model: Any) -> None:
    """After an update the generator serves the new weights (hf shares them already)."""
    if args.generator == "hf":
        return
    accelerator.wait_for_everyone()
    if args.vllm_sleep:
        generator.resume()  # weights back on the GPU before they are replaced
    if args.generator == "vllm" or accelerator.is_main_process:  # a server is synced once, by one process
        generator.sync_weights(_merged(accelerator.unwrap_model(model)))
    accelerator.wait_for_everyone()


def _merged(model: Any) -> Any:
    """The model as plain weights (LoRA merged into a copy) for a generator that loads full weights."""
    if hasattr(model, "merge_and_unload"):
        import copy

        return copy.deepcopy(model).merge_and_unload()
    return model


def run_as_script(run: Callable[[], Any]) -> int:
    """``python trainers/grpo.py``'s exit code: 0, or what ended the run in one line. A refusal before
    anything ran (a ConfigError, a missing dependency) is exit 2; a generator or sandbox that broke down
    mid-run, 1; Ctrl-C or SIGTERM (schedulers stop jobs with it), 130 or 143, after main has closed
    everything and said so."""
    with signals_interrupt():
        try:
            run()
        except KeyboardInterrupt as error:
            return interrupt_of(error).exit_code
        except (ConfigError, MissingDependencyError) as error:
            print(f"grpo.py: error: {error}", file=sys.stderr)
            return 2
        except GymSweError as error:
            print(f"grpo.py: error: {type(error).__name__}: {error}", file=sys.stderr)
            return 1
    return 0
