"""Multi-turn GRPO on gym_swe envs, token-exact, on accelerate.

    python trainers/grpo.py --env CodeDebug-v0 --model PATH                      # one process
    accelerate launch --num_processes 2 trainers/grpo.py --env CodeDebug-v0 --model PATH
    python trainers/grpo.py --config run.yaml --learning_rate 5e-6              # a YAML file, then flags

Beside it: grpo_config.py (every flag, with its help and checks), grpo_batching.py (the update's tensors),
grpo_run_dir.py (what a run writes, and resume) and grpo_setup.py (the model, envs and generator).

Each step samples ``tasks_per_step`` tasks and collects ``group_size`` (G) episodes of each through gym_swe's
collector: envs in parallel, their turns generated together. A trajectory is one token sequence exactly as
the model saw and wrote it (prompt ids, then per turn the sampled ids with their sampling log-probabilities
and the chat template's bridge ids); nothing the model wrote is ever re-tokenized.

The math, for the trajectories i = 1..G of one task, rewards r_i, sampled tokens t of trajectory i:

    advantage       A_i = r_i - mean_j r_j          (leave-one-out: r_i - mean_{j != i} r_j)
                    A_i /= std_j r_j + eps          (scale="group"; "batch": the batch's std; "none": not)
    ratio           rho_t = exp(logp_t - logp_old_t)
    surrogate       L_t = -min(rho_t A_i, clip(rho_t, 1 - eps_low, 1 + eps_high) A_i) * w_t
    dapo            L = sum_{i,t} L_t / (tokens in the batch)
    grpo            L = mean_i ( sum_t L_t / |i| )
    dr_grpo         L = sum_{i,t} L_t / (sequences * B),  B = min(turns * max_new_tokens, max_model_len)
    gspo            s_i = exp(mean_t (logp_t - logp_old_t)),  L = mean_i -min(s_i A_i, clip(s_i) A_i)
    cispo           L = -sum_{i,t} sg(clip(rho_t, 1 - eps_low, 1 + eps_high)) A_i logp_t w_t / tokens
    KL (beta > 0)   + beta * mean_t ( exp(ref_t - logp_t) - (ref_t - logp_t) - 1 )

Each loss takes its paper's eps_low/eps_high and advantage scale unless told (grpo_config.LOSS_DEFAULTS):
dapo 0.2/0.28, grpo and dr_grpo 0.2/0.2, gspo 3e-4/4e-4 (on s_i), cispo 1/0.28 (no lower bound); "none"
for dr_grpo, "group" for the others. B is a trajectory's generation budget (its turns: the env's limit).

Old log-probabilities: the trainer's own, from the first pass over the batch (the weights that pass sees are
the ones the generator sampled with, so this costs no extra forward pass; ``--recompute_old_logps`` runs one
before the update instead). Generator and trainer never agree to the last bit (kernels, precision, top-p), so
each token is weighted by the truncated importance ratio w_t = min(exp(logp_old_t - logp_gen_t), tis_cap),
and with ``geo_mask_threshold`` a sequence whose geometric-mean ratio is farther than that from 1 is left out.

A trajectory that failed (sandbox, env or generator error) is masked out of the loss and out of its group's
baseline: a broken rollout is data, not a wrong answer. A submission the grader rejected scores 0 like any
other wrong answer (see gym_swe's security notes). Groups whose rewards are all equal carry no signal; with
``--dynamic_sampling`` more groups are collected until the batch is full of informative ones.
"""

from __future__ import annotations

import sys

if __name__ == "__main__":  # the command line is checked before torch loads: --help or a refusal at once
    from grpo_config import command_line

    ARGS = command_line()

import contextlib
import math
import random
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import torch

from gym_swe.errors import ConfigError, unknown_name
from gym_swe.rollout.collector import derive_seed
from gym_swe.rollout.stopping import Stop
from gym_swe.rollout.trajectory import Trajectory

# isort: split
import grpo_setup as setup  # the modules beside this one, by name (a script's directory is on the path)
from grpo_batching import MicroBatch, Row, forward_each, rows_of, token_logprobs
from grpo_config import LOSSES, Args, parse_args  # noqa: F401  (grpo.parse_args: for scripts driving main)
from grpo_processes import batch_totals, empty_backward, plan_microbatches, update_metrics
from grpo_run_dir import RunDirectory, run_directory, trajectory_metrics


# --- the math: small pure functions, each tested against hand-computed tensors ---
def group_advantages(
    rewards: torch.Tensor,
    group_size: int,
    scale: str = "group",
    leave_one_out: bool = False,
    valid: torch.Tensor | None = None,
    batch_std: float | None = None,
    eps: float = 1e-6,
) -> torch.Tensor:
    """Advantages of ``rewards`` (consecutive groups of ``group_size``), with invalid entries (failed
    trajectories) out of the baselines and given 0.

    A_i = r_i - mean_{valid j} r_j (leave-one-out: the mean over valid j != i); then divided by the group's
    std over its valid members ("group"), by ``batch_std`` or the std of every valid reward ("batch"), or
    not ("none"). A group with fewer than two valid members gets 0 everywhere: it has no baseline.
    """
    if rewards.numel() % group_size:
        raise ValueError(f"{rewards.numel()} rewards are not whole groups of {group_size}")
    r = rewards.float().view(-1, group_size)
    v = (torch.ones_like(r) if valid is None else valid.float().view(-1, group_size)) > 0
    count = v.sum(dim=1, keepdim=True).float()
    total = (r * v).sum(dim=1, keepdim=True)
    baseline = (total - r) / (count - 1).clamp(min=1) if leave_one_out else total / count.clamp(min=1)
    advantages = r - baseline
    if scale == "group":
        mean = total / count.clamp(min=1)
        var = (((r - mean) ** 2) * v).sum(dim=1, keepdim=True) / (count - 1).clamp(min=1)
        advantages = advantages / (var.sqrt() + eps)
    elif scale == "batch":
        std = batch_std if batch_std is not None else float(r[v].std()) if int(v.sum()) > 1 else 0.0
        advantages = advantages / (std + eps)
    advantages = torch.where(v & (count >= 2), advantages, torch.zeros_like(advantages))
    return advantages.view(-1)


def zero_std_groups(
    rewards: torch.Tensor, group_size: int, valid: torch.Tensor | None = None
) -> torch.Tensor:
    """Per group: True when its valid rewards are all equal (no signal)."""
    r = rewards.float().view(-1, group_size)
    v = (torch.ones_like(r) if valid is None else valid.float().view(-1, group_size)) > 0
    high = torch.where(v, r, torch.full_like(r, -math.inf)).max(dim=1).values
    low = torch.where(v, r, torch.full_like(r, math.inf)).min(dim=1).values
    return (high - low <= 0) | (v.sum(dim=1) < 2)


def truncated_is_weights(
    old_logps: torch.Tensor,
    gen_logps: torch.Tensor,
    mask: torch.Tensor,
    cap: float,
    geo_threshold: float = 0.0,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Per token w = min(exp(old - gen), cap) (cap 0: 1 everywhere), and, with ``geo_threshold`` x > 1,
    0 for whole sequences whose geometric-mean ratio exp(mean_t(old - gen)) is outside [1/x, x]. Also the
    ratio's statistics and the mismatch KL estimate k3 = mean_t (exp(old - gen) - (old - gen) - 1)."""
    mask = mask.float()
    delta = (old_logps - gen_logps) * mask
    ratio = torch.exp(delta)
    weights = ratio.clamp(max=cap) if cap > 0 else torch.ones_like(ratio)
    tokens = mask.sum().clamp(min=1)
    if geo_threshold > 0:
        geo = torch.exp(delta.sum(dim=1) / mask.sum(dim=1).clamp(min=1))
        keep = (geo <= geo_threshold) & (geo >= 1 / geo_threshold)
        weights = weights * keep[:, None].float()
    stats = {
        "is_ratio_mean": float((ratio * mask).sum() / tokens),
        "is_ratio_min": float(ratio[mask > 0].min()) if mask.any() else 1.0,
        "is_ratio_max": float(ratio[mask > 0].max()) if mask.any() else 1.0,
        "is_ratio_truncated_mean": float((weights * mask).sum() / tokens),
        "is_ratio_truncated_max": float(weights[mask > 0].max()) if mask.any() else 1.0,
        "kl": float(((ratio - delta - 1) * mask).sum() / tokens),
    }
    return weights.detach() * mask, stats


def grpo_loss(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    loss_type: str = "dapo",
    eps_low: float = 0.2,
    eps_high: float = 0.28,
    weights: torch.Tensor | None = None,
    ref_logps: torch.Tensor | None = None,
    beta: float = 0.0,
    total_tokens: float | None = None,
    total_sequences: float | None = None,
    generation_budget: int = 1,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The policy loss of one micro-batch (rows: sequences; ``mask``: the sampled tokens) as in the module
    docstring. ``total_tokens`` / ``total_sequences`` are the whole batch's (every micro-batch and process),
    so that summing micro-batch losses gives the batch's loss; by default this micro-batch's own.
    ``generation_budget``: dr_grpo's constant, the most tokens a trajectory may sample."""
    mask = mask.float()
    weights = mask if weights is None else weights * mask
    tokens = float(mask.sum()) if total_tokens is None else total_tokens
    sequences = float((mask.sum(dim=1) > 0).sum()) if total_sequences is None else total_sequences
    advantage = advantages[:, None]
    log_ratio = (logps - old_logps) * mask
    ratio = torch.exp(log_ratio)
    stats: dict[str, torch.Tensor] = {}
    if loss_type == "gspo":
        lengths = mask.sum(dim=1).clamp(min=1)
        sequence_ratio = torch.exp(log_ratio.sum(dim=1) / lengths)
        # per-token form with the sequence ratio's value: s_i * exp(logp - sg(logp)) (GSPO-token)
        token_ratio = sequence_ratio.detach()[:, None] * torch.exp(logps - logps.detach())
        clipped = token_ratio.clamp(1 - eps_low, 1 + eps_high)
        per_token = -torch.min(token_ratio * advantage, clipped * advantage) * weights
        loss = (per_token.sum(dim=1) / lengths).sum() / max(sequences, 1.0)
        ratio = sequence_ratio[:, None].expand_as(mask)
    elif loss_type == "cispo":
        clipped = ratio.clamp(1 - eps_low, 1 + eps_high).detach()
        per_token = -clipped * advantage * logps * weights
        loss = per_token.sum() / max(tokens, 1.0)
    else:
        clipped = ratio.clamp(1 - eps_low, 1 + eps_high)
        per_token = -torch.min(ratio * advantage, clipped * advantage) * weights
        if loss_type == "dapo":
            loss = per_token.sum() / max(tokens, 1.0)
        elif loss_type == "grpo":
            loss = (per_token.sum(dim=1) / mask.sum(dim=1).clamp(min=1)).sum() / max(sequences, 1.0)
        elif loss_type == "dr_grpo":
            loss = per_token.sum() / max(sequences * generation_budget, 1.0)
        else:
            raise ConfigError(unknown_name("loss", loss_type, LOSSES))
    if beta > 0 and ref_logps is not None:
        delta = (ref_logps - logps) * mask
        kl = (torch.exp(delta) - delta - 1) * mask
        loss = loss + beta * kl.sum() / max(tokens, 1.0)
        stats["kl"] = kl.sum().detach()
    with torch.no_grad():
        stats["clipped_low"] = (((ratio < 1 - eps_low) & (advantage < 0)).float() * mask).sum()
        stats["clipped_high"] = (((ratio > 1 + eps_high) & (advantage > 0)).float() * mask).sum()
        stats["tokens"] = mask.sum()
    return loss, stats


# --- the rollout: G episodes of each task, more groups with dynamic sampling -----------
def step_tasks(train_ids: list[str], step: int, count: int, seed: int, salt: str = "") -> list[str]:
    """The tasks of one step: the same on every process, a fresh draw each step (cycling through them)."""
    rng = random.Random(derive_seed(seed, "tasks", step, salt))
    return [train_ids[i % len(train_ids)] for i in rng.sample(range(max(count, len(train_ids))), count)]


@dataclass
class Rollout:
    """One step's trajectories, with what the update needs about them."""

    trajectories: list[Trajectory]
    valid: torch.Tensor  # 1 for the trajectories that enter the loss and the baselines
    version: int  # the policy version (updates done) that generated them
    seconds: float = 0.0  # collecting them took
    zero_std_fraction: float = 0.0  # of the groups first collected (before dynamic sampling's)


def collect_groups(
    args: Args, envs: list, generator: Any, tasks: list[str], step: int, salt: str = "",
    on_trajectory: Any = None, stop: Stop | None = None,
) -> list[Trajectory]:  # fmt: skip
    """``group_size`` episodes of each task (``salt``: a round of dynamic sampling, seeded apart)."""
    return setup.play_episodes(args)(
        envs, generator, tasks, samples_per_task=args.group_size, sampling=setup.sampling(args),
        max_model_len=args.max_model_len, seed=setup.sampling_seed(args, "step", step, salt),
        on_trajectory=on_trajectory, stop=stop,
    )  # fmt: skip


def validity(args: Args, trajectories: list[Trajectory]) -> torch.Tensor:
    """1 for the trajectories that enter the loss and the baselines: not failed, not empty, and (with
    --mask_truncated) not cut by max_model_len."""
    truncated = [args.mask_truncated and t.end_reason == "max_model_len" for t in trajectories]
    kept = [not t.failed and not cut and bool(t.turns) for t, cut in zip(trajectories, truncated)]
    return torch.tensor(kept, dtype=torch.float32)


def zero_std_of(args: Args, trajectories: list[Trajectory]) -> torch.Tensor:
    """Per group of ``trajectories``: True when its valid rewards are all equal (it carries no signal)."""
    rewards = torch.tensor([t.reward for t in trajectories])
    return zero_std_groups(rewards, args.group_size, validity(args, trajectories))


def informative_groups(args: Args, trajectories: list[Trajectory]) -> list[list[Trajectory]]:
    size, zero_std = args.group_size, zero_std_of(args, trajectories).tolist()
    return [trajectories[i * size : (i + 1) * size] for i, flat in enumerate(zero_std) if not flat]


def rollout(
    args: Args, envs: list, generator: Any, tasks: list[str], train_ids: list[str], step: int, version: int,
    on_trajectory: Any = None, stop: Stop | None = None,
) -> Rollout:  # fmt: skip
    """Collect this process's groups; with dynamic sampling, more groups until they all carry signal.
    ``on_trajectory``: called as each episode ends (the step's trajectory file)."""
    started = time.monotonic()
    trajectories = collect_groups(args, envs, generator, tasks, step, on_trajectory=on_trajectory, stop=stop)
    zero = zero_std_of(args, trajectories)
    zero_fraction = float(zero.float().mean()) if len(zero) else 0.0
    if args.dynamic_sampling:
        kept = informative_groups(args, trajectories)
        for round_ in range(args.max_resample_rounds):
            if len(kept) >= len(tasks):
                break
            salt = f"resample{round_}"
            extra = step_tasks(train_ids, step, len(tasks) - len(kept), args.seed, salt=salt)
            more = collect_groups(args, envs, generator, extra, step, salt, on_trajectory, stop)
            kept += informative_groups(args, more)
        if kept:
            trajectories = [t for group in kept[: len(tasks)] for t in group]
    for trajectory in trajectories:
        trajectory.policy_version = version
    valid = validity(args, trajectories)
    return Rollout(trajectories, valid, version, time.monotonic() - started, zero_fraction)


# --- the update: the loss over the batch, in micro-batches whose gradients accumulate --------------------
def update(
    args: Args, accelerator: Any, model: Any, ref_model: Any, optimizer: Any, scheduler: Any, rows: list[Row],
    generation_budget: int,
) -> dict[str, float]:  # fmt: skip
    """``updates_per_batch`` optimizer steps over ``rows`` (the batch: one row per sequence)."""
    device = accelerator.device
    total_tokens, total_sequences = batch_totals(accelerator, rows)
    packed = plan_microbatches(args, accelerator, (model, ref_model) if args.beta > 0 else (model,), rows)
    if args.recompute_old_logps:
        forward_each(model, rows, packed, "old_logps", args.temperature, device)
    if args.beta > 0:
        forward_each(ref_model, rows, packed, "ref_logps", args.temperature, device)
    model.train()
    sums: dict[str, float] = {"loss": 0.0, "clipped_low": 0.0, "clipped_high": 0.0, "entropy": 0.0, "kl": 0.0}
    mismatch: list[dict[str, float]] = []
    for _ in range(args.updates_per_batch):
        for number, indices in enumerate(packed):
            last = number == len(packed) - 1
            with contextlib.nullcontext() if last else accelerator.no_sync(model):
                if not indices:  # nothing to learn from here (see grpo_processes)
                    empty_backward(accelerator, model)
                    continue
                micro = MicroBatch([rows[i] for i in indices], device)
                logps, entropy = token_logprobs(model, micro, args.temperature)
                if micro.rows[0].old_logps is None:  # the first pass sees the weights that sampled
                    micro.store("old_logps", logps)
                mask, old = micro.tail("mask"), micro.tail("old_logps")
                weights = None
                if all(row.gen_logps is not None for row in micro.rows):
                    weights, stats = truncated_is_weights(
                        old, micro.tail("gen_logps"), mask, args.tis_cap, args.geo_mask_threshold
                    )
                    mismatch.append(stats)
                advantages = torch.tensor([row.advantage for row in micro.rows], device=device)
                ref = micro.tail("ref_logps") if args.beta > 0 else None
                loss, stats = grpo_loss(
                    logps, old, advantages, mask, args.loss, args.eps_low, args.eps_high, weights, ref,
                    args.beta, total_tokens, total_sequences, generation_budget,
                )  # fmt: skip
                # DDP averages gradients over processes: each process's loss is its share of the batch's
                accelerator.backward(loss * accelerator.num_processes)
                sums["loss"] += float(loss.detach())
                for key in ("clipped_low", "clipped_high", "kl"):
                    sums[key] += float(stats.get(key, 0.0))
                sums["entropy"] += float((entropy * mask).sum())
        if args.max_grad_norm > 0:
            accelerator.clip_grad_norm_(model.parameters(), args.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
    return update_metrics(args, accelerator, sums, total_tokens, scheduler.get_last_lr()[0], mismatch)


# --- the loop ---------------------------------------------------------------------------------------------
def main(args: Args) -> dict[str, Any]:
    from accelerate import Accelerator
    from accelerate.utils import set_seed
    from tqdm import tqdm

    # CHECKS beyond the flags (which were checked before torch loaded), before anything loads or is written:
    # the run directory's name free, the env and its tasks, the served envs or the vLLM server answering
    path, resume_from = run_directory(args)
    facts = setup.check_run(args)  # the env's tasks, split for training and eval, and its turn limit

    # SETUP: the run directory, trackers, seeds
    log_with = None if args.log_with == "none" else args.log_with
    accelerator = Accelerator(mixed_precision=args.mixed_precision, log_with=log_with, project_dir=str(path))
    setup.check_processes(accelerator)
    set_seed(args.seed)
    if args.tasks_per_step % accelerator.num_processes:
        raise ConfigError(
            f"--tasks_per_step {args.tasks_per_step} must divide among {accelerator.num_processes} "
            "processes: groups are never split, so that advantages stay exact"
        )
    run_dir = RunDirectory(path, accelerator)
    run_dir.start(args, log_with, resume_from)  # resumed: the logs from the checkpoint's step on dropped

    # MODEL: the policy (maybe LoRA), the reference (only with beta > 0), the optimizer and schedule
    model, tokenizer = setup.load_policy(args)
    ref_model = setup.load_reference(args, accelerator.device) if args.beta > 0 else None
    model, optimizer, scheduler = accelerator.prepare(model, *setup.make_optimizer(args, model))

    # ENVS AND GENERATOR: one env per episode of this process's share of a step. However the run ends (Ctrl-C,
    # SIGTERM, an error), the envs go with their sandboxes, and a collection running in the background stops.
    envs: Any = []
    eval_envs: Any = []
    generator: Any = None
    pending: Future | None = None  # --async: the next step's collection, running while this step trains
    bar: Any = None
    stop = Stop()
    step = 0
    try:
        train_ids, eval_ids = facts.train_ids, facts.eval_ids
        budget = setup.generation_budget(args, facts.max_turns)  # dr_grpo's constant
        envs, eval_envs = setup.make_envs(args, accelerator, eval_ids)
        generator = setup.make_generator_for(args, accelerator.unwrap_model(model), tokenizer)
        start_step, version = 0, 0
        if resume_from is not None:
            start_step, version = run_dir.load_checkpoint(resume_from)
            setup.sync_generator(args, accelerator, generator, model)

        def collect_step(step: int, weights_version: int) -> Rollout:
            """This process's groups of ``step``: every process draws the step's tasks and plays its share."""
            accelerator.unwrap_model(model).eval()
            all_tasks = step_tasks(train_ids, step, args.tasks_per_step, args.seed)
            tasks = all_tasks[accelerator.process_index :: accelerator.num_processes]
            # each trajectory is written as its episode ends: a crash or Ctrl-C loses at most those in flight
            with run_dir.appending(step, weights_version) as saved:
                return rollout(args, envs, generator, tasks, train_ids, step, weights_version, saved, stop)

        background = ThreadPoolExecutor(max_workers=1) if args.async_mode else None
        bar = tqdm(range(start_step, args.steps), desc="grpo", disable=not accelerator.is_main_process,
                   initial=start_step, total=args.steps)  # fmt: skip
        for step in bar:
            started = time.monotonic()
            metrics: dict[str, Any] = {"step": step}  # the step's line of metrics.jsonl
            # ROLLOUT: this step's groups (async: collected while the last step trained, one update old)
            collected = pending.result() if pending is not None else None
            if background is not None and step > start_step:
                setup.sync_generator(args, accelerator, generator, model)  # the weights after the last update

            # EVAL: held-out tasks, step 0 (the base model) included; never while a collection runs
            if eval_ids and args.eval_every and step % args.eval_every == 0:
                metrics["eval/pass@1"] = setup.evaluate(
                    args, eval_envs, generator, eval_ids, accelerator, step, stop, run_dir.write_eval
                )

            collected = collected or collect_step(step, version)
            if background is not None and step + 1 < args.steps:
                pending = background.submit(collect_step, step + 1, version)

            # ADVANTAGES: within each group, failed trajectories out of the baseline
            rewards = torch.tensor([t.reward for t in collected.trajectories])
            batch_std = None
            if args.advantage_scale == "batch":  # the std of every process's valid rewards
                all_rewards = accelerator.gather(rewards[collected.valid > 0].to(accelerator.device)).float()
                batch_std = float(all_rewards.std()) if all_rewards.numel() > 1 else 0.0
            advantages = group_advantages(
                rewards, args.group_size, args.advantage_scale, args.leave_one_out, collected.valid, batch_std
            )
            for trajectory, advantage in zip(collected.trajectories, advantages.tolist()):
                trajectory.advantage = advantage  # saved with it: gym-swe view's group view shows the loss's

            # UPDATE (an in-process vLLM engine may give its GPU memory back meanwhile)
            if args.vllm_sleep:
                generator.release_memory()
            update_started = time.monotonic()
            rows = rows_of(collected, advantages)
            metrics.update(update(args, accelerator, model, ref_model, optimizer, scheduler, rows, budget))
            metrics["perf/update_seconds"] = time.monotonic() - update_started
            version += 1
            if background is None:
                setup.sync_generator(args, accelerator, generator, model)

            # LOG: namespaced metrics over every process's trajectories (means; zero-std groups: their share)
            trajectories = run_dir.gather(collected.trajectories)
            zero_std = run_dir.mean_over_processes(collected.zero_std_fraction)
            metrics.update(trajectory_metrics(trajectories, args.group_size, zero_std, collected.seconds))
            metrics["async/staleness"] = version - 1 - collected.version
            metrics["perf/step_seconds"] = elapsed = time.monotonic() - started
            metrics["perf/tokens_per_s"] = metrics["rollout/sampled_tokens"] / max(elapsed, 1e-9)
            run_dir.write_step(metrics, trajectories, log_with)  # metrics.jsonl, the tracker, reward.png
            bar.set_postfix(
                reward=f"{metrics['reward/mean']:.3f}", solved=f"{metrics['reward/resolved']:.2f}"
            )

            # SAVE
            if args.save_every and (step + 1) % args.save_every == 0 and step + 1 < args.steps:
                run_dir.save_checkpoint(step + 1, version)

        # FINISH: the final model evaluated (each eval above saw the weights before its step's update), the
        # last checkpoint, the final model, and where everything is
        if pending is not None:
            pending.result()
        if background is not None:
            background.shutdown()
        if eval_ids and args.eval_every:
            if background is not None:  # --async syncs as a step starts: the last update is not in yet
                setup.sync_generator(args, accelerator, generator, model)
            passed = setup.evaluate(
                args, eval_envs, generator, eval_ids, accelerator, args.steps, stop, run_dir.write_eval
            )
            run_dir.write_step({"step": args.steps, "eval/pass@1": passed}, None, log_with)
        checkpoint = run_dir.save_checkpoint(args.steps, version)
        final = run_dir.save_model(model, tokenizer)
        setup.close_envs(args, envs, eval_envs)
        envs, eval_envs = [], []
        generator.close()
        if log_with:
            accelerator.end_training()
        return run_dir.finish(args.steps, final, checkpoint)
    except BaseException as error:
        stop.set()  # a collection in the background (--async) ends too
        setup.shut_down(args, pending, envs, eval_envs, generator)
        if bar is not None:
            bar.close()
        if isinstance(error, KeyboardInterrupt):
            run_dir.say_interrupted(step, error)
        raise


if __name__ == "__main__":  # a refusal, a breakdown or Ctrl-C / SIGTERM: one line and its exit code
    sys.exit(setup.run_as_script(lambda: main(ARGS)))
