"""From a step's trajectories to the tensors the update runs on: one row per sequence the model saw, rows
packed into micro-batches within a token budget, left-padded so that they all end together, and the model's
log-probabilities of the sampled tokens computed only where tokens were sampled.

Words used here as in ``grpo.py``: the *batch* is everything one step trains on; a *micro-batch* is the part
of it one forward and backward pass takes; a *row* is one sequence of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F

if TYPE_CHECKING:
    from grpo import Rollout


@dataclass
class Row:
    """One sequence the model saw, as the update sees it: its ids, which of them were sampled (``mask``),
    their log-probabilities (the generator's; the trainer's old and the reference model's once computed),
    and its trajectory's advantage."""

    ids: torch.Tensor
    mask: torch.Tensor
    gen_logps: torch.Tensor | None
    advantage: float
    old_logps: torch.Tensor | None = None
    ref_logps: torch.Tensor | None = None


def rows_of(rollout: Rollout, advantages: torch.Tensor) -> list[Row]:
    """The rows of the valid trajectories that sampled anything, one per segment, with their advantages."""
    rows = []
    for trajectory, advantage, valid in zip(
        rollout.trajectories, advantages.tolist(), rollout.valid.tolist()
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


def pack_microbatches(lengths: Sequence[int], max_tokens: int) -> list[list[int]]:
    """Indices grouped so that each group's padded size (its longest length x its count) stays within
    ``max_tokens`` (a longer sequence gets a group of its own). Longest first, so padding stays small."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    packed: list[list[int]] = []
    for index in order:
        if packed and lengths[packed[-1][0]] * (len(packed[-1]) + 1) <= max_tokens:
            packed[-1].append(index)
        else:
            packed.append([index])
    return packed


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


def token_logprobs(model: Any, micro: MicroBatch, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """log p(token | the tokens before it) over ``micro``'s last ``keep`` positions, at the sampling
    temperature, and the entropy of each of those distributions (no gradient). Only those positions get
    logits (``logits_to_keep``): a prompt's thousand tokens cost no vocabulary-wide softmax. The chosen
    id's log-probability is its logit minus a logsumexp: no vocabulary-sized log-softmax is kept."""
    positions = (micro.attention.cumsum(dim=-1) - 1).clamp(min=0).long()  # left padding: rows start at 0
    inputs = {"input_ids": micro.ids, "attention_mask": micro.attention, "position_ids": positions}
    try:
        logits = model(**inputs, logits_to_keep=micro.keep + 1).logits
    except TypeError:  # a model without logits_to_keep computes every position's
        logits = model(**inputs).logits
    logits = logits[:, -(micro.keep + 1) : -1].float()
    if temperature != 1.0:  # (at 1, no vocabulary-sized copy)
        logits = logits / max(temperature, 1e-6)
    normaliser = torch.logsumexp(logits, dim=-1)
    logps = logits.gather(2, micro.ids[:, -micro.keep :, None])[..., 0] - normaliser
    with torch.no_grad():  # row by row: one vocabulary-sized probability tensor at a time
        entropy = torch.stack(
            [norm - (torch.softmax(row, -1) * row).sum(-1) for norm, row in zip(normaliser, logits)]
        )
    return logps, entropy


def forward_each(
    model: Any, rows: list[Row], packed: list[list[int]], attr: str, temperature: float, device: Any
) -> None:
    """Set ``attr`` of every row to its log-probabilities under ``model``, without gradients."""
    model.eval()
    with torch.no_grad():
        for indices in filter(None, packed):
            micro = MicroBatch([rows[i] for i in indices], device)
            micro.store(attr, token_logprobs(model, micro, temperature)[0])
