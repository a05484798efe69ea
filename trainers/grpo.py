"""Multi-turn GRPO on gym_swe envs, token-exact, on accelerate.

    python trainers/grpo.py --env CodeDebug-v0 --model PATH                      # one process
    accelerate launch --num_processes 2 trainers/grpo.py --env CodeDebug-v0 --model PATH
    python trainers/grpo.py --config run.yaml --learning_rate 5e-6              # a YAML file, then flags

Each step samples ``tasks_per_step`` tasks and collects ``group_size`` (G) episodes of each through gym_swe's
collector: envs in parallel, one generator batch per turn. A trajectory is one token sequence exactly as the
model saw and wrote it (prompt ids, then per turn the sampled ids with their sampling log-probabilities and
the chat template's bridge ids); nothing the model wrote is ever re-tokenized.

The math, for the trajectories i = 1..G of one task, rewards r_i, sampled tokens t of trajectory i:

    advantage       A_i = r_i - mean_j r_j          (leave-one-out: r_i - mean_{j != i} r_j)
                    A_i /= std_j r_j + eps          (scale="group"; "batch": the batch's std; "none": not)
    ratio           rho_t = exp(logp_t - logp_old_t)
    surrogate       L_t = -min(rho_t A_i, clip(rho_t, 1 - eps_low, 1 + eps_high) A_i) * w_t
    dapo            L = sum_{i,t} L_t / (tokens in the batch)
    grpo            L = mean_i ( sum_t L_t / |i| )
    dr_grpo         L = sum_{i,t} L_t / (sequences * max_model_len)
    gspo            s_i = exp(mean_t (logp_t - logp_old_t)),  L = mean_i -min(s_i A_i, clip(s_i) A_i)
    cispo           L = -sum_{i,t} sg(clip(rho_t, 1 - eps_low, 1 + eps_high)) A_i logp_t w_t / tokens
    KL (beta > 0)   + beta * mean_t ( exp(ref_t - logp_t) - (ref_t - logp_t) - 1 )

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

import ast
import contextlib
import dataclasses
import importlib
import inspect
import itertools
import json
import math
import random
import shutil
import sys
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium
import torch
import torch.nn.functional as F

import gym_swe  # noqa: F401  (registers the envs)
from gym_swe.errors import ConfigError, GymSweError, unknown_name
from gym_swe.rollout.collector import collect, derive_seed
from gym_swe.rollout.generators import Generator, SamplingParams, make_generator
from gym_swe.rollout.generators.model_names import check_model_name, loading
from gym_swe.rollout.stopping import Stop, interrupt_of, signals_interrupt
from gym_swe.rollout.trajectory import JsonlAppender, Trajectory, save_jsonl

LOSSES = ("dapo", "grpo", "dr_grpo", "gspo", "cispo")
SCALES = ("group", "batch", "none")
GENERATORS = ("hf", "vllm", "vllm-server")


@dataclass
class Args:
    # --- the env --------------------------------------------------------------------------------------------
    env: str = "CodeDebug-v0"
    """A registered gym_swe env id (``gym-swe envs`` lists them)."""
    tasks: str = "bundled"
    """The env's task source: "bundled", a dataset name, or a .jsonl/.parquet path."""
    sandbox: str = "local"
    """Where agent code runs: "local" (bubblewrap) or "docker"."""
    max_turns: int = 4
    """Turns per episode (the env's max_turns and max_episode_steps)."""
    env_kwargs: str = ""
    """More kwargs for the env, as JSON: '{"reward": "fraction", "show_tests": "full"}'."""
    ray_address: str = ""
    """Run the envs (each with its sandbox) in Ray actors on the cluster at this address ("auto": the one
    `ray start` made here); empty: in this process."""
    ray_resources: str = ""
    """With --ray_address: the custom resources each env actor needs, as JSON: '{"docker_slot": 1}'."""
    harness: str = ""
    """"mini-swe-agent": each episode is played by that agent, unmodified, through gym_swe's proxy (which
    records the exact token ids); empty: gym_swe's own tool loop."""
    eval_holdout: int = 4
    """Tasks held out of training and evaluated every ``eval_every`` steps (none with eval_every 0)."""
    train_task_ids: str = ""
    """Comma-separated task ids to train on (default: every task not held out)."""
    eval_task_ids: str = ""
    """Comma-separated task ids to evaluate on (instead of ``eval_holdout``)."""
    # --- the model ------------------------------------------------------------------------------------------
    model: str = ""
    """A model directory or Hugging Face id (required)."""
    tokenizer: str = ""
    """Its tokenizer, when not beside the model."""
    lora: bool = False
    """Train LoRA adapters (peft) instead of every weight."""
    lora_r: int = 16
    """LoRA rank."""
    lora_alpha: int = 32
    """LoRA scaling."""
    # --- generation -----------------------------------------------------------------------------------------
    generator: str = "hf"
    """"hf" (shares the trainer's model), "vllm" (in-process) or "vllm-server" (an OpenAI-compatible vLLM)."""
    base_url: str = ""
    """vllm-server: the server's address, e.g. http://127.0.0.1:8000."""
    weights_dir: str = ""
    """vllm-server: a directory the server can read, where weights go after each update."""
    generation_batch_size: int = 16
    """hf: prompts per generate call (1: no padding at all, generation exactly repeatable)."""
    vllm_sleep: bool = False
    """vllm: release the engine's GPU memory during each update (vLLM's sleep mode; CUDA only)."""
    max_new_tokens: int = 256
    """Tokens the model may sample per turn."""
    max_model_len: int = 4096
    """A trajectory's most tokens (prompt, turns and bridges); a longer one ends truncated."""
    temperature: float = 1.0
    """Sampling temperature (the trainer's log-probabilities use it too)."""
    top_p: float = 1.0
    """Nucleus sampling."""
    seed: int = 0
    """Seeds initialisation, task order and (for hf and vllm) one sampling seed per (step, task, sample,
    turn): a run repeats, its samples still differ."""
    # --- GRPO -----------------------------------------------------------------------------------------------
    steps: int = 20
    """Optimisation steps (each collects a batch)."""
    tasks_per_step: int = 4
    """Groups per step (divided among processes)."""
    group_size: int = 4
    """Trajectories per task (G)."""
    advantage_scale: str = "group"
    """"group" (divide by the group's std), "batch" (the batch's std) or "none"."""
    leave_one_out: bool = False
    """Baseline: the mean of the other trajectories of the group."""
    dynamic_sampling: bool = False
    """Collect more groups until the batch holds ``tasks_per_step`` groups whose rewards differ."""
    max_resample_rounds: int = 3
    """dynamic_sampling: rounds of extra collection at most."""
    mask_truncated: bool = False
    """Leave trajectories cut by max_model_len out of the loss and the baselines."""
    loss: str = "dapo"
    """"dapo", "grpo", "dr_grpo", "gspo" or "cispo" (formulas in the module docstring)."""
    eps_low: float = 0.2
    """Lower clip: rho >= 1 - eps_low."""
    eps_high: float = 0.28
    """Upper clip: rho <= 1 + eps_high."""
    beta: float = 0.0
    """KL penalty to the initial model (0: no reference model is loaded)."""
    tis_cap: float = 2.0
    """Truncated importance sampling: the most a token's trainer/generator ratio may weigh (0: off)."""
    geo_mask_threshold: float = 0.0
    """Leave out sequences whose geometric-mean trainer/generator ratio is beyond [1/x, x] (0: off)."""
    recompute_old_logps: bool = False
    """Compute the old log-probabilities in a forward pass before the update (for backends without them)."""
    # --- optimisation ---------------------------------------------------------------------------------------
    learning_rate: float = 1e-6
    """AdamW's learning rate."""
    weight_decay: float = 0.0
    """AdamW's weight decay."""
    adam_epsilon: float = 1e-8
    """AdamW's epsilon."""
    warmup_steps: int = 0
    """Steps of linear warmup."""
    lr_schedule: str = "constant"
    """"constant" or "cosine" (after the warmup)."""
    max_grad_norm: float = 1.0
    """Gradient clipping (0: off)."""
    updates_per_batch: int = 1
    """Optimizer steps on each collected batch."""
    max_tokens_per_microbatch: int = 8192
    """Micro-batches are packed up to this many (padded) tokens; their gradients accumulate."""
    mixed_precision: str = "no"
    """accelerate's mixed precision: "no", "bf16" or "fp16"."""
    async_mode: bool = field(default=False, metadata={"aliases": ["--async"]})
    """One step off: collect step t+1 while step t trains (not with hf, whose model is the trainer's)."""
    max_staleness: int = 1
    """async: how many updates old a batch's weights may be."""
    # --- output ---------------------------------------------------------------------------------------------
    output_dir: str = "runs"
    """Where the run directory goes."""
    run_name: str = ""
    """The run directory's name (default: the env and a timestamp)."""
    save_every: int = 0
    """Checkpoint every N steps (0: only at the end)."""
    eval_every: int = 5
    """Evaluate on the held-out tasks every N steps, step 0 included (0: never)."""
    log_with: str = "tensorboard"
    """accelerate tracker: "tensorboard", "wandb", "trackio" or "none" (metrics.jsonl is always written)."""
    resume: str = ""
    """A run directory (or one of its checkpoints) to continue exactly where it stopped."""
    overwrite: bool = False
    """Start afresh in a run directory that holds an earlier run (a --run_name used before): that run's
    metrics, trajectories, checkpoints, model, curve and logs are deleted first; other files stay. Without it
    (or --resume) such a run is refused, so that two runs never mix."""


def _help_from_docstrings(cls: type) -> type:
    """Give each field the string under it as its ``--help`` (cleanrl style: the docstring is the help)."""
    source = ast.parse(inspect.getsource(cls))
    body = source.body[0].body  # type: ignore[attr-defined]
    docs = {}
    for node, after in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
        ):
            docs[node.target.id] = " ".join(str(after.value.value).split())  # type: ignore[attr-defined]
    for item in dataclasses.fields(cls):
        item.metadata = {**item.metadata, "help": docs.get(item.name, "")}  # type: ignore[misc]
    return cls


_help_from_docstrings(Args)


def parse_args(argv: Sequence[str] | None = None) -> Args:
    """``--config run.yaml`` (its keys are Args fields) then flags, which win."""
    from transformers import HfArgumentParser

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = HfArgumentParser(Args, description=__doc__.split("\n\n")[0])
    if "--config" in argv:
        import yaml

        at = argv.index("--config")
        config = yaml.safe_load(Path(argv[at + 1]).read_text()) or {}
        unknown = sorted(set(config) - {f.name for f in dataclasses.fields(Args)})
        if unknown:
            raise ConfigError(
                unknown_name("config key", unknown[0], [f.name for f in dataclasses.fields(Args)])
            )
        parser.set_defaults(**config)
        del argv[at : at + 2]
    args, unused = parser.parse_args_into_dataclasses(args=argv, return_remaining_strings=True)
    if unused:  # one line naming the nearest flag, where HfArgumentParser raises a bare ValueError
        flag = next((word for word in unused if word.startswith("-")), unused[0])
        if not flag.startswith("-"):
            raise ConfigError(f"unexpected argument {flag!r}: every value follows its --flag")
        known = ["--config", *(f"--{item.name}" for item in dataclasses.fields(Args))]
        raise ConfigError(unknown_name("flag", flag.partition("=")[0], known) + " See --help.")
    validate(args)
    return args


def validate(args: Args) -> None:
    """Refuse what cannot work, and knobs that would do nothing in the chosen setting, saying why."""
    default = Args()

    def changed(name: str) -> bool:
        return getattr(args, name) != getattr(default, name)

    server = args.generator == "vllm-server"
    choices = {
        "generator": GENERATORS,
        "loss": LOSSES,
        "advantage_scale": SCALES,
        "lr_schedule": ("constant", "cosine"),
        "log_with": ("tensorboard", "wandb", "trackio", "none"),
        "harness": ("", "mini-swe-agent"),
    }
    for name, allowed in choices.items():
        if getattr(args, name) not in allowed:
            raise ConfigError(unknown_name(name, getattr(args, name), allowed))
    problems = [
        (not args.model, "--model is required: a model directory or a Hugging Face id"),
        (args.group_size < 2, f"--group_size must be >= 2: a group of {args.group_size} has no baseline"),
        (
            min(args.steps, args.tasks_per_step, args.updates_per_batch) < 1,
            "--steps, --tasks_per_step and --updates_per_batch must be >= 1",
        ),
        (server and not args.base_url, "--generator vllm-server needs --base_url (the server's address)"),
        (
            not server and (changed("base_url") or changed("weights_dir")),
            "--base_url and --weights_dir are for --generator vllm-server; they would do nothing here",
        ),
        (
            args.generator != "hf" and changed("generation_batch_size"),
            "--generation_batch_size is for --generator hf; vLLM batches by itself",
        ),
        (not args.lora and (changed("lora_r") or changed("lora_alpha")), "--lora_r/--lora_alpha need --lora"),
        (not args.ray_address and changed("ray_resources"), "--ray_resources needs --ray_address"),
        (
            bool(args.harness and args.ray_address),
            "--harness runs its agents beside the proxy on this host: it does not take --ray_address",
        ),
        (
            not args.dynamic_sampling and changed("max_resample_rounds"),
            "--max_resample_rounds needs --dynamic_sampling",
        ),
        (not args.async_mode and changed("max_staleness"), "--max_staleness needs --async"),
        (args.vllm_sleep and args.generator != "vllm", "--vllm_sleep is for --generator vllm (in-process)"),
        (
            args.async_mode and args.generator == "hf",
            "--async needs a generator with weights of its own (vllm, "
            "vllm-server): hf shares the trainer's model, which would change under the episodes it collects",
        ),
        (args.max_staleness != 1, "--max_staleness: only 1 (one step off) is supported"),
        (not (0 <= args.eps_low < 1 and args.eps_high >= 0), "--eps_low must be in [0, 1), --eps_high >= 0"),
        (0 < args.tis_cap < 1, "--tis_cap must be 0 (off) or >= 1"),
        (0 < args.geo_mask_threshold <= 1, "--geo_mask_threshold must be 0 (off) or > 1"),
        (
            args.eval_every > 0 and args.eval_holdout == 0 and not args.eval_task_ids,
            "--eval_every needs tasks to evaluate: --eval_holdout N or --eval_task_ids",
        ),
        (
            bool(args.eval_task_ids) and changed("eval_holdout"),
            "give --eval_task_ids or --eval_holdout, not both",
        ),
        (
            args.eval_every == 0 and (changed("eval_holdout") or bool(args.eval_task_ids)),
            "--eval_holdout and --eval_task_ids need --eval_every N: without it nothing is evaluated",
        ),
        (
            args.warmup_steps >= args.steps > 0 and args.warmup_steps > 0,
            "--warmup_steps must be below --steps",
        ),
    ]
    for bad, why in problems:
        if bad:
            raise ConfigError(why)
    if args.resume and args.overwrite:
        raise ConfigError("give --resume (continue a run) or --overwrite (start it afresh), not both")
    check_env(args.env)
    check_model_name("--model", args.model)  # a missing directory, before anything loads
    check_model_name("--tokenizer", args.tokenizer)
    if args.vllm_sleep:
        from gym_swe.rollout.generators.vllm_local import sleep_mode_refusal

        if (reason := sleep_mode_refusal()) is not None:
            raise ConfigError(f"--vllm_sleep cannot work here: {reason}")


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
    """Advantages of ``rewards`` (groups of ``group_size`` in a row), with invalid entries (failed
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
    max_len: int = 1,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The policy loss of one micro-batch (rows: sequences; ``mask``: the sampled tokens) as in the module
    docstring. ``total_tokens`` / ``total_sequences`` are the whole batch's (every micro-batch and process),
    so that summing micro-batch losses gives the batch's loss; by default this micro-batch's own."""
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
            loss = per_token.sum() / max(sequences * max_len, 1.0)
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


def pack_microbatches(lengths: Sequence[int], max_tokens: int) -> list[list[int]]:
    """Indices grouped so that each group's padded size (its longest length x its count) stays within
    ``max_tokens`` (a longer sequence gets a group of its own). Longest first, so padding stays small."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    for index in order:
        if batches and lengths[batches[-1][0]] * (len(batches[-1]) + 1) <= max_tokens:
            batches[-1].append(index)
        else:
            batches.append([index])
    return batches


def token_logprobs(model: Any, batch: MicroBatch, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """log p(token | the tokens before it) over ``batch``'s last ``keep`` positions, at the sampling
    temperature, and the entropy of each of those distributions (no gradient). Only those positions get
    logits (``logits_to_keep``): a prompt's thousand tokens cost no vocabulary-wide softmax. The chosen
    id's log-probability is its logit minus a logsumexp: no vocabulary-sized log-softmax is kept."""
    positions = (batch.attention.cumsum(dim=-1) - 1).clamp(min=0).long()  # left padding: rows start at 0
    inputs = {"input_ids": batch.ids, "attention_mask": batch.attention, "position_ids": positions}
    try:
        logits = model(**inputs, logits_to_keep=batch.keep + 1).logits
    except TypeError:  # a model without logits_to_keep computes every position's
        logits = model(**inputs).logits
    logits = logits[:, -(batch.keep + 1) : -1].float()
    if temperature != 1.0:  # (at 1, no vocabulary-sized copy)
        logits = logits / max(temperature, 1e-6)
    normaliser = torch.logsumexp(logits, dim=-1)
    logps = logits.gather(2, batch.ids[:, -batch.keep :, None])[..., 0] - normaliser
    with torch.no_grad():  # row by row: one vocabulary-sized probability tensor at a time
        entropy = torch.stack(
            [n - (torch.softmax(row, -1) * row).sum(-1) for n, row in zip(normaliser, logits)]
        )
    return logps, entropy


# --- the parts of a step ----------------------------------------------------------------------------------
def load_policy(args: Args) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with loading("--tokenizer" if args.tokenizer else "--model", args.tokenizer or args.model):
        tokenizer = AutoTokenizer.from_pretrained(args.tokenizer or args.model)
    with loading("--model", args.model):  # not on disk nor on the hub (or the hub out of reach): exit 2
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    if args.lora:
        try:
            from peft import LoraConfig, get_peft_model
        except ImportError:
            raise ConfigError('--lora needs peft: pip install "gym-swe[train]"') from None
        config = LoraConfig(
            r=args.lora_r, lora_alpha=args.lora_alpha, target_modules="all-linear", task_type="CAUSAL_LM"
        )
        model = get_peft_model(model, config)
    return model, tokenizer


def check_env(env_id: str) -> None:
    """--env must be a registered id (``module:EnvId``: a module that registers it, imported here), found
    before the model loads and before the run directory is made."""
    module, _, name = env_id.rpartition(":")
    if module:
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise ConfigError(f"--env {env_id!r}: cannot import {module!r}: {error}") from None
    if name not in gymnasium.registry:
        ours = [env for env in gymnasium.registry if env in ("CodeDebug-v0", "SWEGym-v0")]
        message = unknown_name("env", name, ours if not module else gymnasium.registry)
        raise ConfigError(f"--env: {message} Your own env: module:EnvId, the module registering EnvId.")


def make_env(args: Args) -> Any:
    try:
        extra = json.loads(args.env_kwargs) if args.env_kwargs else {}
    except ValueError as error:
        raise ConfigError(f"--env_kwargs is not JSON: {error}") from None
    try:
        return gymnasium.make(args.env, tasks=args.tasks, sandbox=args.sandbox, max_turns=args.max_turns,
                              max_episode_steps=args.max_turns, **extra)  # fmt: skip
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
    extra = json.loads(args.env_kwargs) if args.env_kwargs else {}  # make_env has checked it
    make_kwargs = dict(tasks=args.tasks, sandbox=args.sandbox, max_turns=args.max_turns,
                       max_episode_steps=args.max_turns, **extra)  # fmt: skip
    pool = RayEnvPool(args.env, make_kwargs, num_envs=num_envs, resources=resources)
    print(f"envs: {len(pool)} in {len(pool.actors)} Ray actors at {args.ray_address} (run {pool.run_id})")
    return pool


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


def step_tasks(train_ids: list[str], step: int, count: int, seed: int, salt: str = "") -> list[str]:
    """The tasks of one step: the same on every process, a fresh draw each step (cycling through them)."""
    rng = random.Random(derive_seed(seed, "tasks", step, salt))
    return [train_ids[i % len(train_ids)] for i in rng.sample(range(max(count, len(train_ids))), count)]


def sampling_seed(args: Args, *key: Any) -> int | None:
    """A run seed for `collect` (one seed per task, sample and turn follows), or None where the backend takes
    no seeds safely (a vLLM server may chunk prefills, which its CPU build cannot do with seeds)."""
    if args.generator == "vllm-server" or args.harness:  # a harness's proxy sends no per-request seeds
        return None
    return derive_seed(args.seed, *key)


@dataclass
class Rollout:
    """One step's trajectories, with what the update needs about them."""

    trajectories: list[Trajectory]
    valid: torch.Tensor
    """1 for trajectories that enter the loss and the baselines."""
    version: int
    """The policy version (updates done) that generated them."""
    seconds: float = 0.0
    zero_std_fraction: float = 0.0


def play_episodes(args: Args) -> Any:
    """gym_swe's collector, or with --harness that harness's, which has the same surface."""
    if not args.harness:
        return collect
    from gym_swe.integrations.mini_swe_agent import collect_with_harness

    return collect_with_harness


def collect_groups(
    args: Args,
    envs: list,
    generator: Any,
    tasks: list[str],
    step: int,
    salt: str = "",
    on_trajectory: Any = None,
    stop: Stop | None = None,
) -> list:
    return play_episodes(args)(
        envs,
        generator,
        tasks,
        samples_per_task=args.group_size,
        sampling=SamplingParams(
            max_tokens=args.max_new_tokens, temperature=args.temperature, top_p=args.top_p
        ),
        max_model_len=args.max_model_len,
        seed=sampling_seed(args, "step", step, salt),
        on_trajectory=on_trajectory,
        stop=stop,
    )


def validity(args: Args, trajectories: list[Trajectory]) -> torch.Tensor:
    """Failed trajectories (and, with mask_truncated, those cut by max_model_len) are left out."""
    return torch.tensor(
        [
            not t.failed and not (args.mask_truncated and t.end_reason == "max_model_len") and bool(t.turns)
            for t in trajectories
        ],
        dtype=torch.float32,
    )


def rollout(
    args: Args,
    envs: list,
    generator: Any,
    tasks: list[str],
    train_ids: list[str],
    step: int,
    version: int,
    on_trajectory: Any = None,
    stop: Stop | None = None,
) -> Rollout:
    """Collect this process's groups; with dynamic sampling, more groups until they all carry signal.
    ``on_trajectory``: called as each episode ends (the step's trajectory file)."""
    started = time.monotonic()
    trajectories = collect_groups(args, envs, generator, tasks, step, on_trajectory=on_trajectory, stop=stop)
    zero = zero_std_groups(
        torch.tensor([t.reward for t in trajectories]), args.group_size, validity(args, trajectories)
    )
    zero_fraction = float(zero.float().mean()) if len(zero) else 0.0
    if args.dynamic_sampling:
        groups = [trajectories[i : i + args.group_size] for i in range(0, len(trajectories), args.group_size)]
        kept = [group for group, flat in zip(groups, zero.tolist()) if not flat]
        for round_ in range(args.max_resample_rounds):
            if len(kept) >= len(tasks):
                break
            salt = f"resample{round_}"
            extra = step_tasks(train_ids, step, len(tasks) - len(kept), args.seed, salt=salt)
            more = collect_groups(args, envs, generator, extra, step, salt, on_trajectory, stop)
            more_zero = zero_std_groups(
                torch.tensor([t.reward for t in more]), args.group_size, validity(args, more)
            )
            kept += [
                more[i * args.group_size : (i + 1) * args.group_size]
                for i, flat in enumerate(more_zero.tolist())
                if not flat
            ]
        if kept:
            trajectories = [t for group in kept[: len(tasks)] for t in group]
    for trajectory in trajectories:
        trajectory.policy_version = version
    return Rollout(
        trajectories, validity(args, trajectories), version, time.monotonic() - started, zero_fraction
    )


@dataclass
class Row:
    """One trajectory as the update sees it."""

    ids: torch.Tensor
    mask: torch.Tensor
    gen_logps: torch.Tensor | None
    advantage: float
    old_logps: torch.Tensor | None = None
    ref_logps: torch.Tensor | None = None


def rows_of(rollout_: Rollout, advantages: torch.Tensor) -> list[Row]:
    rows = []
    for trajectory, advantage, valid in zip(
        rollout_.trajectories, advantages.tolist(), rollout_.valid.tolist()
    ):
        if not valid or not any(trajectory.loss_mask):
            continue
        # A harness that rewrote its history left segments: each is a sequence the model saw, a row of its own
        for start, end in trajectory.segment_bounds():
            mask = trajectory.loss_mask[start:end]
            if not any(mask):
                continue
            logprobs = trajectory.logprobs[start:end]
            sampled = [lp for lp, m in zip(logprobs, mask) if m]
            gen = None if any(lp is None for lp in sampled) else torch.tensor([lp or 0.0 for lp in logprobs])
            rows.append(
                Row(
                    torch.tensor(trajectory.token_ids[start:end]),
                    torch.tensor(mask, dtype=torch.float32),
                    gen,
                    advantage,
                )
            )
    return rows


class MicroBatch:
    """Rows left-padded to one width, so that they all end together; logits are computed for the last
    ``keep`` positions only: from the earliest sampled token of any row to the end."""

    def __init__(self, rows: list[Row], device: Any) -> None:
        self.rows, self.device = rows, device
        width = max(len(row.ids) for row in rows)
        self.keep = max(len(row.ids) - int(row.mask.nonzero()[0]) for row in rows)
        self.ids = _left_padded([row.ids for row in rows], width).long().to(device)
        self.attention = _left_padded([torch.ones(len(row.ids)) for row in rows], width).to(device)

    def tail(self, attr: str) -> torch.Tensor:
        """A per-token field of the rows over the last ``keep`` positions, (rows, keep)."""
        return _left_padded([getattr(row, attr)[-self.keep :] for row in self.rows], self.keep).to(
            self.device
        )

    def store(self, attr: str, values: torch.Tensor) -> None:
        """Set a per-token field of each row from (rows, keep) values (positions before them: 0)."""
        for row, tail in zip(self.rows, values.detach().cpu()):
            span = min(self.keep, len(row.ids))
            full = torch.zeros(len(row.ids))
            full[len(row.ids) - span :] = tail[self.keep - span :]
            setattr(row, attr, full)


def _left_padded(values: list[torch.Tensor], width: int) -> torch.Tensor:
    return torch.stack([F.pad(value, (width - len(value), 0)) for value in values])


def forward_each(
    model: Any, rows: list[Row], batches: list[list[int]], attr: str, args: Args, device: Any
) -> None:
    """Set ``attr`` of every row to its log-probabilities under ``model``, without gradients."""
    model.eval()
    with torch.no_grad():
        for index in filter(None, batches):
            batch = MicroBatch([rows[i] for i in index], device)
            batch.store(attr, token_logprobs(model, batch, args.temperature)[0])


def update(
    args: Args, accelerator: Any, model: Any, ref_model: Any, optimizer: Any, scheduler: Any, rows: list[Row]
) -> dict[str, float]:
    """``updates_per_batch`` optimizer steps over ``rows``, in micro-batches whose gradients accumulate."""
    device = accelerator.device
    world = accelerator.num_processes
    local = torch.tensor([float(sum(r.mask.sum() for r in rows)), float(len(rows))], device=device)
    total_tokens, total_sequences = accelerator.reduce(local, reduction="sum").tolist()
    batches = pack_microbatches([len(r.ids) for r in rows], args.max_tokens_per_microbatch) or [[]]
    if args.recompute_old_logps:
        forward_each(model, rows, batches, "old_logps", args, device)
    if args.beta > 0:
        forward_each(ref_model, rows, batches, "ref_logps", args, device)
    model.train()
    sums: dict[str, float] = {"loss": 0.0, "clipped_low": 0.0, "clipped_high": 0.0, "entropy": 0.0, "kl": 0.0}
    mismatch: list[dict[str, float]] = []
    for _ in range(args.updates_per_batch):
        for number, index in enumerate(batches):
            last = number == len(batches) - 1
            with contextlib.nullcontext() if last else accelerator.no_sync(model):
                if not index:  # nothing to learn from here: an empty backward keeps the processes in step
                    dummy = torch.zeros((1, 2), dtype=torch.long, device=device)
                    accelerator.backward(model(input_ids=dummy).logits.sum() * 0.0)
                    continue
                batch = MicroBatch([rows[i] for i in index], device)
                logps, entropy = token_logprobs(model, batch, args.temperature)
                if batch.rows[0].old_logps is None:  # the first pass sees the weights that sampled
                    batch.store("old_logps", logps)
                mask, old = batch.tail("mask"), batch.tail("old_logps")
                weights = None
                if all(row.gen_logps is not None for row in batch.rows):
                    weights, stats = truncated_is_weights(
                        old, batch.tail("gen_logps"), mask, args.tis_cap, args.geo_mask_threshold
                    )
                    mismatch.append(stats)
                advantages = torch.tensor([row.advantage for row in batch.rows], device=device)
                ref = batch.tail("ref_logps") if args.beta > 0 else None
                loss, stats = grpo_loss(
                    logps, old, advantages, mask, args.loss, args.eps_low, args.eps_high, weights, ref,
                    args.beta, total_tokens, total_sequences, args.max_model_len,
                )  # fmt: skip
                # DDP averages gradients over processes: each process's loss is its share of the batch's
                accelerator.backward(loss * world)
                sums["loss"] += float(loss.detach())
                sums["clipped_low"] += float(stats["clipped_low"])
                sums["clipped_high"] += float(stats["clipped_high"])
                sums["kl"] += float(stats.get("kl", 0.0))
                sums["entropy"] += float((entropy * mask).sum())
        if args.max_grad_norm > 0:
            accelerator.clip_grad_norm_(model.parameters(), args.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
    totals = accelerator.reduce(torch.tensor(list(sums.values()), device=device), reduction="sum").tolist()
    passes = args.updates_per_batch * max(total_tokens, 1.0)
    metrics = {
        "loss/policy": totals[0] / args.updates_per_batch,
        "loss/clip_frac_low": totals[1] / passes,
        "loss/clip_frac_high": totals[2] / passes,
        "loss/entropy": totals[3] / passes,
        "loss/kl": totals[4] / passes,
        "perf/lr": scheduler.get_last_lr()[0],
    }
    for key in ("is_ratio_mean", "is_ratio_min", "is_ratio_max", "is_ratio_truncated_mean", "kl"):
        if mismatch:
            values = [m[key] for m in mismatch]
            metrics[f"mismatch/{key}"] = (
                min(values)
                if key.endswith("min")
                else max(values)
                if key.endswith("max")
                else sum(values) / len(values)
            )
    return metrics


def evaluate(
    args: Args, envs: list, generator: Any, eval_ids: list[str], accelerator: Any, step: int, stop: Stop
) -> float:
    """pass@1 on the held-out tasks (each process plays its share), one sample each."""
    mine = eval_ids[accelerator.process_index :: accelerator.num_processes]
    trajectories = (
        play_episodes(args)(
            envs,
            generator,
            mine,
            samples_per_task=1,
            sampling=SamplingParams(
                max_tokens=args.max_new_tokens, temperature=args.temperature, top_p=args.top_p
            ),
            max_model_len=args.max_model_len,
            seed=sampling_seed(args, "eval", step),
            stop=stop,
        )
        if mine
        else []
    )
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


def close_envs(args: Args, envs: Any, eval_envs: Any) -> None:
    """Close the envs and their sandboxes (with Ray: the pools, their actors too)."""
    for env in [*envs, *eval_envs]:
        env.close()
    for ray_pool in (envs, eval_envs) if args.ray_address else ():
        if ray_pool:  # not an empty list (no eval tasks)
            ray_pool.close()  # its envs, their sandboxes and its actors


def plot(run_dir: Path, history: list[dict[str, Any]]) -> Path:
    """reward.png: mean reward per step, and eval pass@1 where it was measured."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4))
    steps = [row["step"] for row in history if "reward/mean" in row]
    axis.plot(steps, [row["reward/mean"] for row in history if "reward/mean" in row], label="reward/mean")
    evals = [(row["step"], row["eval/pass@1"]) for row in history if "eval/pass@1" in row]
    if evals:
        axis.plot(*zip(*evals), "o-", label="eval/pass@1")
    axis.set_xlabel("step")
    axis.legend()
    axis.grid(alpha=0.3)
    path = run_dir / "reward.png"
    figure.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(figure)
    return path


RUN_OUTPUTS = ("metrics.jsonl", "trajectories", "checkpoints", "model", "reward.png", "args.json")
"""What a run writes into its directory (the tensorboard logs go under the run's name there too)."""


def holds_a_run(run_dir: Path) -> bool:
    """Whether an earlier run wrote results into ``run_dir`` (args.json alone: one that never started)."""
    results = ("metrics.jsonl", "trajectories", "checkpoints", "model")
    return any((run_dir / name).exists() for name in results)


def remove_run(run_dir: Path) -> None:
    """--overwrite: the earlier run's outputs go; anything else in the directory stays."""
    for path in (run_dir / name for name in (*RUN_OUTPUTS, run_dir.name)):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def latest_checkpoint(path: Path) -> Path:
    if (path / "trainer_state.json").exists():
        return path
    found = sorted((path / "checkpoints").glob("step_*"), key=lambda p: int(p.name.split("_")[1]))
    if not found:
        raise ConfigError(f"--resume {path}: no checkpoint there (expected {path}/checkpoints/step_N)")
    return found[-1]


# --- the loop ---------------------------------------------------------------------------------------------
def main(args: Args) -> dict[str, Any]:
    from accelerate import Accelerator
    from accelerate.utils import gather_object, set_seed
    from tqdm import tqdm
    from transformers import get_scheduler

    # SETUP: the run directory, trackers, seeds
    resume_from = latest_checkpoint(Path(args.resume)) if args.resume else None
    run_dir = (
        resume_from.parents[1]
        if resume_from
        else Path(args.output_dir)
        / (args.run_name or f"{args.env.split(':')[-1]}-{time.strftime('%Y%m%d-%H%M%S')}")
    )
    if resume_from is None and not args.overwrite and holds_a_run(run_dir):
        raise ConfigError(
            f"{run_dir} holds an earlier run: pass --resume {run_dir} to continue it or --overwrite to start "
            "it afresh (or another --run_name)"
        )
    log_with = None if args.log_with == "none" else args.log_with
    accelerator = Accelerator(
        mixed_precision=args.mixed_precision, log_with=log_with, project_dir=str(run_dir)
    )
    set_seed(args.seed)
    if args.tasks_per_step % accelerator.num_processes:
        raise ConfigError(
            f"--tasks_per_step {args.tasks_per_step} must divide among {accelerator.num_processes} "
            "processes: groups are never split, so that advantages stay exact"
        )
    if accelerator.is_main_process:
        if args.overwrite:  # never with --resume (validate refuses both)
            remove_run(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "args.json").write_text(json.dumps(dataclasses.asdict(args), indent=2))
    if args.overwrite:
        accelerator.wait_for_everyone()  # no process writes into the run directory while it is cleared
    if log_with:
        accelerator.init_trackers(run_dir.name, config=dataclasses.asdict(args))

    # MODEL: the policy (maybe LoRA), the reference (only with beta > 0), the optimizer and schedule
    model, tokenizer = load_policy(args)
    ref_model = None
    if args.beta > 0:
        ref_model = load_policy(dataclasses.replace(args, lora=False))[0].eval().requires_grad_(False)
        ref_model = ref_model.to(accelerator.device)
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
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)

    # ENVS AND GENERATOR: one env per episode of this process's share of a step. However the run ends (Ctrl-C,
    # SIGTERM, an error), the envs go with their sandboxes, and a collection running in the background stops.
    envs: Any = []
    eval_envs: Any = []
    generator: Any = None
    pending: Future | None = None
    bar: Any = None
    stop = Stop()
    step = 0
    try:
        probe = make_env(args)
        train_ids, eval_ids = split_tasks(args, [task.task_id for task in probe.unwrapped.tasks])
        probe.close()
        local_tasks = args.tasks_per_step // accelerator.num_processes
        local_eval_ids = eval_ids[accelerator.process_index :: accelerator.num_processes]
        if args.ray_address:  # eval has envs of its own there too: with --async, collection overlaps it
            sizes = (local_tasks * args.group_size, len(local_eval_ids))
            envs, eval_envs = (make_ray_pool(args, size) if size else [] for size in sizes)
        else:
            envs = [make_env(args) for _ in range(local_tasks * args.group_size)]
            eval_envs = [make_env(args) for _ in local_eval_ids]
        generator = make_generator_for(args, accelerator.unwrap_model(model), tokenizer)

        start_step, version, history = 0, 0, []
        if resume_from is not None:
            accelerator.load_state(str(resume_from))
            state = json.loads((resume_from / "trainer_state.json").read_text())
            start_step, version = state["step"], state["version"]
            history = [
                json.loads(line)
                for line in (run_dir / "metrics.jsonl").read_text().splitlines()
                if json.loads(line)["step"] < start_step
            ]
            sync_generator(args, accelerator, generator, model)

        def tasks_of(step: int) -> list[str]:
            everyone = step_tasks(train_ids, step, args.tasks_per_step, args.seed)
            return everyone[accelerator.process_index :: accelerator.num_processes]

        def collect_step(step: int, weights_version: int) -> Rollout:
            accelerator.unwrap_model(model).eval()

            # Each trajectory is written as its episode ends: a crash or Ctrl-C loses at most those in flight.
            # (The main process rewrites the file with every process's, in order, once the step is done.)
            def versioned(trajectory: Trajectory) -> None:
                trajectory.policy_version = weights_version

            with JsonlAppender(step_file(step), before=versioned) as saved:
                tasks = tasks_of(step)
                return rollout(args, envs, generator, tasks, train_ids, step, weights_version, saved, stop)

        def step_file(step: int) -> Path:
            """Where this process writes its trajectories of ``step`` as they end."""
            mine = "" if accelerator.num_processes == 1 else f".process{accelerator.process_index}"
            return run_dir / "trajectories" / f"step_{step:05d}{mine}.jsonl"

        def save(step: int) -> Path:
            path = run_dir / "checkpoints" / f"step_{step}"
            accelerator.save_state(str(path))
            if accelerator.is_main_process:
                (path / "trainer_state.json").write_text(json.dumps({"step": step, "version": version}))
            accelerator.wait_for_everyone()
            return path

        pool = ThreadPoolExecutor(max_workers=1) if args.async_mode else None
        bar = tqdm(
            range(start_step, args.steps),
            desc="grpo",
            disable=not accelerator.is_main_process,
            initial=start_step,
            total=args.steps,
        )
        for step in bar:
            started = time.monotonic()
            row: dict[str, Any] = {"step": step}
            # ROLLOUT: this step's groups (async: collected while the last step trained, one update old)
            batch = pending.result() if pending is not None else None
            if pool is not None and step > start_step:
                sync_generator(args, accelerator, generator, model)  # the weights after the last update

            # EVAL: held-out tasks, step 0 (the base model) included; never while a collection runs
            if eval_ids and args.eval_every and step % args.eval_every == 0:
                row["eval/pass@1"] = evaluate(args, eval_envs, generator, eval_ids, accelerator, step, stop)

            batch = batch or collect_step(step, version)
            if pool is not None and step + 1 < args.steps:
                pending = pool.submit(collect_step, step + 1, version)

            # ADVANTAGES: within each group, failed trajectories out of the baseline
            rewards = torch.tensor([t.reward for t in batch.trajectories])
            batch_std = None
            if args.advantage_scale == "batch":
                everyone = accelerator.gather(rewards[batch.valid > 0].to(accelerator.device)).float()
                batch_std = float(everyone.std()) if everyone.numel() > 1 else 0.0
            advantages = group_advantages(
                rewards, args.group_size, args.advantage_scale, args.leave_one_out, batch.valid, batch_std
            )

            # UPDATE (an in-process vLLM engine may give its GPU memory back meanwhile)
            if args.vllm_sleep:
                generator.release_memory()
            update_started = time.monotonic()
            metrics = update(
                args, accelerator, model, ref_model, optimizer, scheduler, rows_of(batch, advantages)
            )
            metrics["perf/update_seconds"] = time.monotonic() - update_started
            version += 1
            if pool is None:
                sync_generator(args, accelerator, generator, model)

            # LOG: namespaced metrics, means over every process
            trajectories = gather_object([t.to_dict() for t in batch.trajectories])
            everything = [Trajectory.from_dict(t) for t in trajectories]
            turns = [turn for t in everything for turn in t.turns]
            sampled = sum(sum(t.loss_mask) for t in everything)
            row.update(metrics)
            row.update(
                {
                    "reward/mean": sum(t.reward for t in everything) / max(len(everything), 1),
                    "reward/std": float(torch.tensor([t.reward for t in everything]).std())
                    if len(everything) > 1
                    else 0.0,
                    "reward/resolved": sum(t.resolved for t in everything) / max(len(everything), 1),
                    "rollout/turns": len(turns) / max(len(everything), 1),
                    "rollout/tool_error_rate": sum(turn.tool_errors > 0 for turn in turns)
                    / max(len(turns), 1),
                    "rollout/failed": sum(t.failed for t in everything) / max(len(everything), 1),
                    "rollout/truncated": sum(t.truncated for t in everything) / max(len(everything), 1),
                    "rollout/frac_zero_std_groups": float(
                        accelerator.reduce(
                            torch.tensor(batch.zero_std_fraction, device=accelerator.device), reduction="mean"
                        )
                    ),
                    "rollout/env_seconds": sum(turn.env_seconds for turn in turns),
                    "rollout/generate_seconds": sum(turn.generate_seconds for turn in turns),
                    "rollout/seconds": batch.seconds,
                    "rollout/sampled_tokens": sampled,
                    "async/staleness": version - 1 - batch.version,
                    "perf/step_seconds": time.monotonic() - started,
                    "perf/tokens_per_s": sampled / max(time.monotonic() - started, 1e-9),
                }
            )
            history.append(row)
            if accelerator.is_main_process:
                # every process's trajectories, in order (atomically: the file is never half written)
                save_jsonl(everything, run_dir / "trajectories" / f"step_{step:05d}.jsonl")
                with (run_dir / "metrics.jsonl").open("a") as handle:
                    handle.write(json.dumps(row) + "\n")
                plot(run_dir, history)
                bar.set_postfix(reward=f"{row['reward/mean']:.3f}", solved=f"{row['reward/resolved']:.2f}")
            if accelerator.num_processes > 1:  # this process's part of the step's file, as it was written
                step_file(step).unlink(missing_ok=True)
            if log_with:
                accelerator.log({k: v for k, v in row.items() if k != "step"}, step=step)

            # SAVE
            if args.save_every and (step + 1) % args.save_every == 0 and step + 1 < args.steps:
                save(step + 1)

        # FINISH: the last checkpoint, the final model, the curve, and where everything is
        if pending is not None:
            pending.result()
        if pool is not None:
            pool.shutdown()
        checkpoint = save(args.steps)
        final = run_dir / "model"
        if accelerator.is_main_process:
            accelerator.unwrap_model(model).save_pretrained(final)
            tokenizer.save_pretrained(final)
        close_envs(args, envs, eval_envs)
        envs, eval_envs = [], []
        generator.close()
        if log_with:
            accelerator.end_training()
        summary = {
            "run_dir": str(run_dir),
            "model": str(final),
            "checkpoint": str(checkpoint),
            "metrics": str(run_dir / "metrics.jsonl"),
            "trajectories": str(run_dir / "trajectories"),
            "curve": str(run_dir / "reward.png"),
            "history": history,
        }
        if accelerator.is_main_process:
            last = history[-1] if history else {}
            print(
                f"done: {args.steps} steps, reward {last.get('reward/mean', float('nan')):.3f}; "
                f"run {run_dir} (model {final}, curve {run_dir / 'reward.png'}, "
                f"metrics {run_dir / 'metrics.jsonl'}, trajectories {run_dir / 'trajectories'}, "
                f"checkpoint {checkpoint})"
            )
        return summary
    except BaseException as error:
        stop.set()  # a collection in the background (--async) ends too
        if pending is not None:
            with contextlib.suppress(BaseException):
                pending.result()
        with contextlib.suppress(Exception):  # the first error is the one to report
            close_envs(args, envs, eval_envs)
        if generator is not None:
            with contextlib.suppress(Exception):
                generator.close()
        if bar is not None:
            bar.close()
        if isinstance(error, KeyboardInterrupt) and accelerator.is_main_process:
            checkpoints = run_dir / "checkpoints"
            resume = f", checkpoints in {checkpoints} (--resume)" if checkpoints.is_dir() else ""
            print(
                f"grpo.py: interrupted by {interrupt_of(error).signal_name} in step {step}: the episodes "
                f"that ended are in {run_dir / 'trajectories'}{resume}; the others were stopped and every "
                "sandbox closed",
                file=sys.stderr,
            )
        raise


if __name__ == "__main__":
    with signals_interrupt():  # SIGTERM too: schedulers stop jobs with it
        try:
            main(parse_args())
        except KeyboardInterrupt as error:  # main has closed everything and said so
            sys.exit(interrupt_of(error).exit_code)
        except ConfigError as error:
            print(f"grpo.py: error: {error}", file=sys.stderr)
            sys.exit(2)
        except GymSweError as error:  # a generator or sandbox that broke down mid-run: what broke, one line
            print(f"grpo.py: error: {type(error).__name__}: {error}", file=sys.stderr)
            sys.exit(1)
