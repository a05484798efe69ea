"""From a step's trajectories to the tensors the update runs on: one row per sequence the model saw, rows
packed into micro-batches within a token budget, left-padded so that they all end together, and the model's
log-probabilities of the sampled tokens, computed only where tokens were sampled: the LM head fused with the
log-softmax (`ScoredHead`), a chunk of positions at a time: a micro-batch's logits never exist at once.

Words used here as in ``grpo.py``: the *batch* is everything one step trains on; a *micro-batch* is the part
of it one forward and backward pass takes; a *row* is one sequence of it.
"""

from __future__ import annotations

import sys
import weakref
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
    """Rows left-padded to one width, so that they all end together; the per-token fields the update uses
    cover the last ``keep`` positions only: from the earliest sampled token of any row to the end."""

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


# --- the log-probabilities: the LM head fused with the log-softmax, a chunk of positions at a time ---------
LOGIT_CHUNK_ELEMENTS = 1 << 23
"""How many logits (positions x vocabulary) the fused head computes at once: 32 MB in fp32, 55 positions of
a 151,665-id vocabulary (the forward holds two such buffers, the backward one)."""


class ScoredHead(torch.autograd.Function):
    """log p(target) and the entropy at N positions, from their final hidden states (N, H) and the LM head's
    weight (V, H) and bias, a chunk of positions at a time: the (N, V) logits never exist at once.

    Each chunk's logits are computed in fp32 (in the weight's dtype where it is bf16/fp16: a fp32 copy of a
    low-precision head would cost more than its logits), divided by the temperature unless it is 1, then
    reduced to a logsumexp, the chosen id's log-probability and the entropy. The backward recomputes them and
    forms d logp / d logits = (onehot - softmax) / temperature, scaled by the incoming gradient, and from it
    the gradients of the hidden states, the weight and the bias. The entropy carries no gradient."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        hidden: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        targets: torch.Tensor,
        temperature: float,
        chunk: int,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        ctx.hidden_dtype = hidden.dtype
        hidden = hidden.to(weight.dtype)
        logps = torch.empty(len(hidden), dtype=_wide(weight), device=hidden.device)
        entropy, normaliser = torch.empty_like(logps), torch.empty_like(logps)
        with torch.autocast(hidden.device.type, enabled=False):
            for start in range(0, len(hidden), chunk):
                end = start + chunk
                shifted = _chunk_logits(hidden[start:end], weight, bias, temperature)
                peak = shifted.amax(dim=-1)
                shifted -= peak[:, None]  # in place: each pass over the chunk's logits counts
                exps = shifted.exp()
                total = exps.sum(dim=-1)
                log_total = total.log()
                normaliser[start:end] = peak + log_total  # the logsumexp
                logps[start:end] = shifted.gather(1, targets[start:end, None])[:, 0] - log_total
                # entropy = logsumexp - sum_v p_v z_v (the shifted logits are not needed after this: in place)
                entropy[start:end] = log_total - shifted.mul_(exps).sum(dim=-1) / total
        ctx.save_for_backward(hidden, weight, bias, targets, normaliser)
        ctx.temperature, ctx.chunk = temperature, chunk
        ctx.mark_non_differentiable(entropy)
        return logps, entropy

    @staticmethod
    def backward(ctx: Any, grad_logps: torch.Tensor, _: torch.Tensor) -> tuple[Any, ...]:  # type: ignore[override]
        hidden, weight, bias, targets, normaliser = ctx.saved_tensors
        temperature, chunk = ctx.temperature, ctx.chunk
        want_hidden, want_weight, want_bias = ctx.needs_input_grad[:3]
        grad_hidden = torch.empty_like(hidden) if want_hidden else None
        wide = _wide(weight)  # sums over the chunks: in fp32 at least
        grad_weight = torch.zeros(weight.shape, dtype=wide, device=weight.device) if want_weight else None
        grad_bias = torch.zeros(weight.shape[0], dtype=wide, device=weight.device) if want_bias else None
        rows = torch.arange(min(chunk, len(hidden)), device=hidden.device)
        with torch.autocast(hidden.device.type, enabled=False):
            for start in range(0, len(hidden), chunk):
                end = start + chunk
                part = hidden[start:end]
                grad = grad_logps[start:end].to(wide)
                logits = _chunk_logits(part, weight, bias, temperature)
                # d logp / d logits = onehot - softmax, scaled by the incoming gradient (in place: no copies)
                softmax = logits.sub_(normaliser[start:end, None]).exp_()
                dlogits = softmax.mul_(-grad[:, None])
                dlogits[rows[: len(part)], targets[start:end]] += grad
                if temperature != 1.0:
                    dlogits /= temperature
                if grad_bias is not None:
                    grad_bias += dlogits.sum(dim=0)
                dlogits = dlogits.to(weight.dtype)
                if grad_hidden is not None:
                    grad_hidden[start:end] = dlogits @ weight
                if grad_weight is not None:
                    if weight.dtype == wide:
                        grad_weight.addmm_(dlogits.t(), part)
                    else:  # a bf16/fp16 head: each chunk's product summed in fp32
                        grad_weight += (dlogits.t() @ part).to(wide)
        return (
            None if grad_hidden is None else grad_hidden.to(ctx.hidden_dtype),
            None if grad_weight is None else grad_weight.to(weight.dtype),
            None if grad_bias is None else grad_bias.to(bias.dtype),
            None,
            None,
            None,
        )


def _wide(weight: torch.Tensor) -> torch.dtype:
    """The dtype of the logits and of the sums: fp32, or the weight's where it is wider (fp64 in tests)."""
    return torch.promote_types(weight.dtype, torch.float32)


def _chunk_logits(
    hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, temperature: float
) -> torch.Tensor:
    logits = F.linear(hidden, weight, bias).to(_wide(weight))
    if temperature != 1.0:  # at 1, no division at all
        logits /= temperature
    return logits


_HEADS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
"""Per model: its LM head when the fused path can take it, else None (decided once, said once)."""


def fused_head(model: Any) -> torch.nn.Linear | None:
    """``model``'s LM head (a plain ``nn.Linear``) when `ScoredHead` can stand for it, else None after one
    line on stderr saying why. ``model`` may be wrapped (DDP's ``.module``; peft finds the head through)."""
    inner = getattr(model, "module", model)  # DDP and FSDP hold the model as .module
    if inner in _HEADS:
        return _HEADS[inner]
    head, reason = _check_head(model, inner)
    if reason:
        plain = "the log-probabilities are computed the plain way (every logit at once)"
        print(f"grpo.py: note: {plain}: {reason}", file=sys.stderr)
    _HEADS[inner] = head
    return head


def _check_head(model: Any, inner: Any) -> tuple[torch.nn.Linear | None, str]:
    kinds = {type(module).__name__ for module in model.modules()}
    if any(kind.startswith(("FullyShardedDataParallel", "FSDP")) for kind in kinds):
        return None, "FSDP shards the LM head's weight"
    get_head = getattr(inner, "get_output_embeddings", None)
    head = get_head() if callable(get_head) else None
    if type(head) is not torch.nn.Linear:  # a LoRA-wrapped or quantized head computes something else
        return None, f"the LM head is a {type(head).__name__}, not a plain torch.nn.Linear"
    config = getattr(inner, "config", None)
    for name in ("final_logit_softcapping", "logit_scale", "logits_scaling", "output_multiplier_scale"):
        if getattr(config, name, None) not in (None, 1, 1.0):
            return None, f"the model changes its logits after the head ({name} in its config)"
    # A short probe: the model's logits must be exactly what its head module returns, from the hidden states
    # it was given (a model that post-processes its logits, or calls its head otherwise, goes the plain way)
    seen: dict[str, torch.Tensor] = {}

    def take_input(_: Any, args: tuple[Any, ...]) -> None:
        if args and isinstance(args[0], torch.Tensor):
            seen["hidden"] = args[0]

    def take_output(_: Any, args: tuple[Any, ...], output: torch.Tensor) -> None:
        seen["logits"] = output

    handles = [head.register_forward_pre_hook(take_input), head.register_forward_hook(take_output)]
    ids = torch.arange(1, 5, device=head.weight.device)[None] % head.weight.shape[0]
    try:
        with torch.no_grad():
            logits = inner(input_ids=ids).logits
    finally:
        for handle in handles:
            handle.remove()
    if "hidden" not in seen or not torch.equal(logits.float(), seen.get("logits", logits[:0]).float()):
        return None, "its logits are not its LM head's output"
    return head, ""


def token_logprobs(model: Any, micro: MicroBatch, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """log p(token | the tokens before it) over ``micro``'s last ``keep`` positions, at the sampling
    temperature, and the entropy of each of those distributions (no gradient), as (rows, keep) tensors.

    Only sampled tokens are scored (the prompt's and the bridges' positions hold 0): the model's final hidden
    states go through `ScoredHead`, which never holds the (rows, positions, vocabulary) logits at once. A
    model whose head it cannot take (see `fused_head`) gets `plain_token_logprobs`, which scores every
    kept position at once."""
    head = fused_head(model)
    if head is None:
        return plain_token_logprobs(model, micro, temperature)
    seen: dict[str, torch.Tensor] = {}

    def take_hidden(_: Any, args: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        seen["hidden"] = args[0]
        return (args[0][..., :0, :], *args[1:])  # the head computes no logits

    handle = head.register_forward_pre_hook(take_hidden)
    try:
        model(**_model_inputs(micro))  # no logits_to_keep: every position's hidden state reaches the hook
    finally:
        handle.remove()
    hidden = seen["hidden"]
    width = micro.ids.shape[1]
    rows, columns = (micro.tail("mask") > 0).nonzero(as_tuple=True)
    positions = width - micro.keep + columns  # of the scored tokens; the state before each predicts it
    chunk = max(1, LOGIT_CHUNK_ELEMENTS // head.weight.shape[0])
    scored = hidden[rows, positions - 1]
    logps, entropy = ScoredHead.apply(
        scored, head.weight, head.bias, micro.ids[rows, positions], max(temperature, 1e-6), chunk
    )
    shape = (len(micro.rows), micro.keep)
    return (
        logps.new_zeros(shape).index_put((rows, columns), logps),
        entropy.new_zeros(shape).index_put((rows, columns), entropy),
    )


def _model_inputs(micro: MicroBatch) -> dict[str, torch.Tensor]:
    positions = (micro.attention.cumsum(dim=-1) - 1).clamp(min=0).long()  # left padding: rows start at 0
    return {"input_ids": micro.ids, "attention_mask": micro.attention, "position_ids": positions}


def plain_token_logprobs(
    model: Any, micro: MicroBatch, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """`token_logprobs` the straightforward way, for a model `ScoredHead` cannot take: the logits of every
    kept position at once (``logits_to_keep``: a prompt's thousand tokens cost no vocabulary-wide softmax),
    the chosen id's log-probability as its logit minus a logsumexp (no vocabulary-sized log-softmax kept)."""
    inputs = _model_inputs(micro)
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
