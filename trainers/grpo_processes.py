"""What the update's processes do together under accelerate (DDP or FSDP): count the batch, run as many
micro-batches each, and add up what they measured. One process does the same with nothing to exchange.

Under FSDP every forward and backward gathers and scatters the weights with all processes at once, so a
process with fewer micro-batches than another would leave it waiting forever: the short ones pad with empty
micro-batches, whose backward is zero, and every process decides the fused head together.
"""

from __future__ import annotations

from typing import Any

import torch

# isort: split
from grpo_batching import Row, fused_head, pack_microbatches
from grpo_config import Args


def batch_totals(accelerator: Any, rows: list[Row]) -> tuple[float, float]:
    """(sampled tokens, sequences) of the whole batch, over every process: the loss's denominators."""
    local = torch.tensor(
        [float(sum(r.mask.sum() for r in rows)), float(len(rows))], device=accelerator.device
    )
    tokens, sequences = accelerator.reduce(local, reduction="sum").tolist()
    return tokens, sequences


def plan_microbatches(
    args: Args, accelerator: Any, models: tuple[Any, ...], rows: list[Row]
) -> list[list[int]]:
    """This process's rows packed into micro-batches (lists of row indices; ``[]``: an empty one), as many as
    the process with the most has; ``models`` (the policy, and the reference when it runs) get their fused
    head decided here, by every process at once."""
    packed = pack_microbatches(
        [len(r.ids) for r in rows],
        args.max_tokens_per_microbatch,
        [int(r.mask.sum()) for r in rows],
        args.max_scored_per_microbatch,
    ) or [[]]
    if accelerator.num_processes > 1:
        most = int(accelerator.gather(torch.tensor([len(packed)], device=accelerator.device)).max())
        packed += [[] for _ in range(most - len(packed))]
        for model in models:
            fused_head(model)
    return packed


def empty_backward(accelerator: Any, model: Any) -> None:
    """A backward with nothing to learn from, which keeps this process in step with the others."""
    dummy = torch.zeros((1, 2), dtype=torch.long, device=accelerator.device)
    accelerator.backward(model(input_ids=dummy).logits.sum() * 0.0)


def update_metrics(
    args: Args, accelerator: Any, sums: dict[str, float], total_tokens: float, lr: float,
    mismatch: list[dict[str, float]],
) -> dict[str, float]:  # fmt: skip
    """The update's metrics: the loss per pass, per-token shares over the batch of every process, and the
    generator/trainer mismatch over this process's micro-batches (the extremes, or the mean)."""
    totals = accelerator.reduce(torch.tensor(list(sums.values()), device=accelerator.device), reduction="sum")
    loss, clipped_low, clipped_high, entropy, kl = totals.tolist()
    passes = args.updates_per_batch * max(total_tokens, 1.0)
    metrics = {
        "loss/policy": loss / args.updates_per_batch,
        "loss/clip_frac_low": clipped_low / passes,
        "loss/clip_frac_high": clipped_high / passes,
        "loss/entropy": entropy / passes,
        "loss/kl": kl / passes,
        "perf/lr": lr,
    }
    for key in (
        ("is_ratio_mean", "is_ratio_min", "is_ratio_max", "is_ratio_truncated_mean", "kl") if mismatch else ()
    ):
        values = [m[key] for m in mismatch]
        extreme = {"is_ratio_min": min, "is_ratio_max": max}.get(key)
        metrics[f"mismatch/{key}"] = extreme(values) if extreme else sum(values) / len(values)
    return metrics
