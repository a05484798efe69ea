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


def pack_microbatches(
    lengths: Sequence[int], max_tokens: int, scored: Sequence[int] | None = None, max_scored: int = 0
) -> list[list[int]]:
    """Indices grouped so that each group's padded size (its longest length x its count) stays within
    ``max_tokens``, and, with ``max_scored``, its scored positions (``scored``: the sampled tokens of each)
    within that too; a sequence over either budget alone gets a group of its own. Longest first, so padding
    stays small.

    The padded budget is the one that always holds: the model's body runs over every padded token, so its
    activations (for a 7B model, megabytes per token) grow with it. The scored budget is the issue's: it
    bounds the logits, which the plain path (`plain_token_logprobs`: a head FSDP wraps alone, a LoRA'd or
    softcapped head) holds for every scored position at once; the fused head holds one tile whatever the
    micro-batch, so there it bounds nothing and is off by default (0)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    packed: list[list[int]] = []
    in_group = 0  # scored positions in the last group
    for index in order:
        count = scored[index] if scored is not None else 0
        fits = bool(packed) and lengths[packed[-1][0]] * (len(packed[-1]) + 1) <= max_tokens
        if fits and max_scored and in_group + count > max_scored:
            fits = False
        if fits:
            packed[-1].append(index)
            in_group += count
        else:
            packed.append([index])
            in_group = count
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


# --- the log-probabilities: the LM head fused with the log-softmax, a tile of logits at a time --------------
LOGIT_TILE_BYTES = {"cpu": 1 << 24, "cuda": 1 << 27}
"""How many bytes of fp32 logits the fused head computes at once, by device type (others: cuda's): 16 MB on a
CPU, 128 MB on a GPU (large enough to fill it). On one CPU thread, tiles of 1 to 16 MB cost the same (the
passes over a tile stay in cache; the reused buffer is what counts), but every torch call on a tile ends at an
OpenMP barrier where the threads wait for each other: with two threads on a loaded machine, 1 MB tiles made
the head 5x slower in CPU time, their ~2,700 calls per micro-batch each waiting for a descheduled thread."""
MIN_TILE_COLUMNS = 512
"""The narrowest block of the vocabulary a tile takes (narrower, and each tile's handful of calls costs more
than its arithmetic): where the scored positions times this exceed the budget, the positions are split."""


def tile_shape(positions: int, vocabulary: int, device_type: str) -> tuple[int, int]:
    """(positions, vocabulary ids) of one tile of logits within ``LOGIT_TILE_BYTES``: every position in one
    tile where the budget allows it, so that the weight's gradient is written once per vocabulary block."""
    elements = LOGIT_TILE_BYTES.get(device_type, LOGIT_TILE_BYTES["cuda"]) // 4
    columns = min(vocabulary, max(MIN_TILE_COLUMNS, elements // max(positions, 1)))
    return max(1, min(positions, elements // columns)), columns


class ScoredHead(torch.autograd.Function):
    """log p(target) and the entropy at N positions, from their final hidden states (N, H) and the LM head's
    weight (V, H) and bias, one tile of (positions, vocabulary ids) at a time, as flash attention goes through
    its keys: the (N, V) logits never exist at once, only one tile's, reduced while it is in cache (each row's
    logsumexp kept online across the vocabulary's blocks), in one buffer that every tile reuses.

    The logits are computed in fp32 (in the weight's dtype where it is bf16/fp16, then widened: a fp32 copy of
    a low-precision head would cost more than its logits), at the temperature (folded into the hidden states
    and the bias: no pass over the logits divides them, none at all at 1). The chosen id's logit is the dot of
    its hidden state with its weight row, not read from the tiles. The entropy (no gradient) costs one more
    pass over each tile, skipped when not asked for (NaN then).

    The backward recomputes each tile's logits once and takes its softmax in place. The gradient of log p(t)
    with respect to the logits is g (onehot(t) - softmax) for the incoming gradient g (at the temperature's
    logits), so the onehot's part is a row of the weight per position (the hidden states' gradient) and a row
    added per target (the weight's), and the softmax's part is two products per tile, p @ W_block and
    p^T @ (hidden x g), with the scale g on the small hidden states rather than on the tile: four products of
    the logits' size in all (one forward, three backward) and two cheap passes over each tile in each."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        hidden: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        targets: torch.Tensor,
        temperature: float,
        tile: tuple[int, int],
        with_entropy: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        ctx.hidden_dtype = hidden.dtype
        wide = _wide(weight)
        hidden, bias = _at_temperature(hidden.to(weight.dtype), bias, temperature)
        count, (rows, columns) = len(hidden), tile
        blocks = range(0, weight.shape[0], columns)
        # per (vocabulary block, position): the block's largest logit, its sum of exp(logit - that) and, for
        # the entropy, its sum of (logit - that) x exp(logit - that)
        peaks = torch.empty((len(blocks), count), dtype=wide, device=hidden.device)
        sums, products = torch.empty_like(peaks), torch.empty_like(peaks)
        buffers = _TileBuffers(rows * min(columns, weight.shape[0]), weight, 2)
        with torch.autocast(hidden.device.type, enabled=False):
            for block, first in enumerate(blocks):
                part_weight = weight[first : first + columns]
                part_bias = None if bias is None else bias[first : first + columns]
                for start in range(0, count, rows):
                    end = min(start + rows, count)
                    logits = buffers.logits(hidden[start:end], part_weight, part_bias)
                    peak = torch.amax(logits, dim=-1, out=peaks[block, start:end])
                    logits -= peak[:, None]
                    exp = torch.exp(logits, out=buffers.wide[1][: logits.numel()].view(logits.shape))
                    torch.sum(exp, dim=-1, out=sums[block, start:end])
                    if with_entropy:
                        torch.sum(logits.mul_(exp), dim=-1, out=products[block, start:end])
            peak = peaks.amax(dim=0)
            scale = (peaks - peak).exp_()  # each block's sums to the row's largest logit
            total = (sums * scale).sum(dim=0)
            log_total = total.log()
            normaliser = peak + log_total  # the logsumexp
            logps = _chosen_logits(hidden, weight, bias, targets).to(wide) - normaliser
            if with_entropy:  # logsumexp - sum_v p_v z_v, z shifted by the row's largest logit
                shifted = (products + (peaks - peak) * sums) * scale
                entropy = log_total - shifted.sum(dim=0) / total
            else:
                entropy = torch.full_like(logps, float("nan"))
        ctx.save_for_backward(hidden, weight, bias, targets, normaliser)
        ctx.temperature, ctx.tile = temperature, tile
        ctx.mark_non_differentiable(entropy)
        return logps, entropy

    @staticmethod
    def backward(ctx: Any, grad_logps: torch.Tensor, _: torch.Tensor) -> tuple[Any, ...]:  # type: ignore[override]
        hidden, weight, bias, targets, normaliser = ctx.saved_tensors  # hidden and bias at the temperature
        want_hidden, want_weight, want_bias = ctx.needs_input_grad[:3]
        wide, (rows, columns), count = _wide(weight), ctx.tile, len(hidden)
        # g: d loss / d log p. The softmax's part of the gradient: the hidden states get -g x E_p[W] / T (the
        # expectation summed over the blocks), the weight's block -p^T @ (hidden x g) (hidden already / T)
        grad = grad_logps.to(wide)
        expected = torch.zeros(hidden.shape, dtype=wide, device=hidden.device) if want_hidden else None
        scaled = hidden.to(wide) * grad[:, None]
        negated = (-scaled).to(weight.dtype)  # the sign here, not in a pass over the (V, H) gradient
        grad_weight = torch.empty(weight.shape, dtype=wide, device=weight.device) if want_weight else None
        grad_bias = torch.empty(weight.shape[0], dtype=wide, device=weight.device) if want_bias else None
        buffers = _TileBuffers(rows * min(columns, weight.shape[0]), weight, 1)
        with torch.autocast(hidden.device.type, enabled=False):
            for first in range(0, weight.shape[0], columns):
                last = first + columns
                part_weight = weight[first:last]
                part_bias = None if bias is None else bias[first:last]
                for start in range(0, count, rows):
                    end = min(start + rows, count)
                    logits = buffers.logits(hidden[start:end], part_weight, part_bias)
                    softmax = logits.sub_(normaliser[start:end, None]).exp_()  # in place
                    low = buffers.narrow(softmax)  # itself where the weight is fp32
                    if expected is not None:
                        _product_into(expected[start:end], low, part_weight, accumulate=True)
                    if grad_weight is not None:
                        _product_into(grad_weight[first:last], low.t(), negated[start:end], start > 0)
                    if grad_bias is not None:
                        _product_into(grad_bias[first:last], softmax.t(), -grad[start:end], start > 0)
            # onehot - softmax: the target's row less the softmax's expectation; the targets' rows added
            grad_hidden = None
            if expected is not None:
                grad_hidden = (weight[targets].to(wide) - expected) * (grad / ctx.temperature)[:, None]
            if grad_weight is not None:
                grad_weight.index_add_(0, targets, scaled)
            if grad_bias is not None:
                grad_bias.index_add_(0, targets, grad).div_(ctx.temperature)
        return (
            None if grad_hidden is None else grad_hidden.to(ctx.hidden_dtype),
            None if grad_weight is None else grad_weight.to(weight.dtype),
            None if grad_bias is None else grad_bias.to(bias.dtype),
            None,
            None,
            None,
            None,
        )


class _TileBuffers:
    """The buffers `ScoredHead` reuses for every tile (a fresh one per tile would cost its allocation and, on
    a CPU, its pages' first touch, more than the passes over it): ``count`` fp32 (or wider) logits each, and
    one in the weight's dtype where that is narrower."""

    def __init__(self, size: int, weight: torch.Tensor, count: int) -> None:
        self.weight_dtype, wide = weight.dtype, _wide(weight)
        self.wide = [torch.empty(size, dtype=wide, device=weight.device) for _ in range(count)]
        narrow = wide != weight.dtype
        self.low = torch.empty(size, dtype=weight.dtype, device=weight.device) if narrow else None

    def logits(self, hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        """hidden @ weight.T + bias, widened, in the first buffer."""
        shape = (len(hidden), len(weight))
        logits = self.wide[0][: shape[0] * shape[1]].view(shape)
        out = logits if self.low is None else self.low[: logits.numel()].view(shape)
        if bias is None:
            torch.mm(hidden, weight.t(), out=out)
        else:
            torch.addmm(bias, hidden, weight.t(), out=out)
        return logits if self.low is None else logits.copy_(out)

    def narrow(self, values: torch.Tensor) -> torch.Tensor:
        """``values`` in the weight's dtype (themselves where that is not narrower), in the narrow buffer."""
        if self.low is None:
            return values
        return self.low[: values.numel()].view(values.shape).copy_(values)


def _product_into(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor, accumulate: bool) -> None:
    """out (+)= a @ b, written in place (out may be wider than a and b: bf16 products summed in fp32)."""
    if out.dtype == a.dtype:
        if accumulate:
            out.addmm_(a, b) if b.dim() == 2 else out.addmv_(a, b)
        else:
            torch.mm(a, b, out=out) if b.dim() == 2 else torch.mv(a, b, out=out)
    elif accumulate:
        out += a @ b
    else:
        out.copy_(a @ b)


def _wide(weight: torch.Tensor) -> torch.dtype:
    """The dtype of the logits and of the sums: fp32, or the weight's where it is wider (fp64 in tests)."""
    return torch.promote_types(weight.dtype, torch.float32)


def _at_temperature(
    hidden: torch.Tensor, bias: torch.Tensor | None, temperature: float
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The hidden states and bias whose logits are the head's divided by ``temperature`` (at 1: the same)."""
    if temperature == 1.0:
        return hidden, bias
    return hidden / temperature, None if bias is None else bias / temperature


def _chosen_logits(
    hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, targets: torch.Tensor
) -> torch.Tensor:
    """Each position's logit of its target: its hidden state's dot with the target's row of the weight."""
    rows = weight[targets]
    logits = torch.bmm(rows[:, None, :], hidden[:, :, None]).view(-1)
    return logits if bias is None else logits + bias[targets]


_HEADS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
"""Per model: its LM head when the fused path can take it, else None (decided once, said once)."""


def fused_head(model: Any) -> torch.nn.Linear | None:
    """``model``'s LM head (a plain ``nn.Linear``) when `ScoredHead` can stand for it, else None after one
    line on stderr saying why. ``model`` may be wrapped (DDP's and FSDP 1's ``.module``; peft finds the head
    through). Under FSDP the first call runs a forward (its collectives): every process makes it together."""
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
    ids = torch.arange(1, 5, device=head.weight.device)[None]
    # through FSDP 1's wrapper (its forward gathers the weights; under FSDP 2 the model is its own wrapper),
    # past DDP's (whose forward would broadcast buffers: a collective the other processes may not be in)
    runner = model if type(model).__name__ == "FullyShardedDataParallel" else inner
    try:
        with torch.no_grad():
            logits = runner(input_ids=ids).logits
    finally:
        for handle in handles:
            handle.remove()
    if "hidden" not in seen or not torch.equal(logits.float(), seen.get("logits", logits[:0]).float()):
        return None, "its logits are not its LM head's output"
    return head, ""


def token_logprobs(
    model: Any, micro: MicroBatch, temperature: float, with_entropy: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """log p(token | the tokens before it) over ``micro``'s last ``keep`` positions, at the sampling
    temperature, and the entropy of each of those distributions (no gradient; NaN without ``with_entropy``,
    which saves the fused head a pass over its logits), as (rows, keep) tensors.

    Only sampled tokens are scored (the prompt's and the bridges' positions hold 0): inside the model's own
    forward, the LM head computes no logits and `ScoredHead` scores the sampled tokens from its input, with
    its weight as the forward sees it, and its result comes out as the model's ``logits``. So the weight is
    what the model's wrappers make it there: under FSDP (1 or 2) gathered whole, and gathered again before
    the backward reaches the head, by the hooks FSDP puts on the model's outputs; under DDP, LoRA and
    accelerate's autocast, the head's own. The (rows, positions, vocabulary) logits never exist at once. A
    model whose head it cannot take (see `fused_head`) gets `plain_token_logprobs`, which scores every kept
    position at once."""
    head = fused_head(model)
    if head is None:
        return plain_token_logprobs(model, micro, temperature)
    rows, columns = (micro.tail("mask") > 0).nonzero(as_tuple=True)
    positions = micro.ids.shape[1] - micro.keep + columns  # of the scored tokens
    targets = micro.ids[rows, positions]
    seen: dict[str, torch.Tensor] = {}

    def keep_hidden(_: Any, args: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        seen["hidden"] = args[0][rows, positions - 1]  # the state before each scored token predicts it
        return (args[0][..., :0, :], *args[1:])  # the head computes no logits

    def score(module: torch.nn.Linear, _: Any, __: Any) -> torch.Tensor:
        weight, hidden = module.weight, seen.pop("hidden")
        tile = tile_shape(len(rows), weight.shape[0], weight.device.type)
        logps, seen["entropy"] = ScoredHead.apply(
            hidden, weight, module.bias, targets, max(temperature, 1e-6), tile, with_entropy
        )
        return logps  # the model's logits: (scored tokens,)

    handles = [head.register_forward_pre_hook(keep_hidden), head.register_forward_hook(score)]
    try:
        logps = model(**_model_inputs(micro)).logits
    finally:
        for handle in handles:
            handle.remove()
    shape = (len(micro.rows), micro.keep)
    return (
        logps.new_zeros(shape).index_put((rows, columns), logps),
        seen["entropy"].new_zeros(shape).index_put((rows, columns), seen["entropy"]),
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
    """Set ``attr`` of every row to its log-probabilities under ``model``, without gradients (an empty
    micro-batch: a forward all the same, of two tokens, which other processes under FSDP take part in)."""
    model.eval()
    with torch.no_grad():
        for indices in packed:
            if not indices:
                model(input_ids=torch.zeros((1, 2), dtype=torch.long, device=device))
                continue
            micro = MicroBatch([rows[i] for i in indices], device)
            micro.store(attr, token_logprobs(model, micro, temperature, with_entropy=False)[0])
