"""From trajectories to the update's tensors (trainers/grpo_batching.py): packing within the token budget,
left padding that keeps each row's positions, and log-probabilities computed only where tokens were sampled;
the fused LM head (`ScoredHead`) against the plain computation it replaces: the same log-probabilities,
entropy, losses and gradients of every parameter."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import grpo
import grpo_batching
import grpo_setup
import pytest
import torch
from grpo_batching import (
    LOGIT_TILE_BYTES,
    MIN_TILE_COLUMNS,
    MicroBatch,
    Row,
    ScoredHead,
    fused_head,
    pack_microbatches,
    plain_token_logprobs,
    tile_shape,
    token_logprobs,
)
from grpo_config import LOSS_DEFAULTS, LOSSES
from torch.testing import assert_close

from tests.conftest import REPO_ROOT


def test_pack_microbatches_respects_the_padded_budget() -> None:
    lengths = [100, 30, 60, 60, 500, 10]
    packed = pack_microbatches(lengths, 200)
    assert sorted(i for indices in packed for i in indices) == list(range(6))
    for indices in packed:
        assert len(indices) == 1 or max(lengths[i] for i in indices) * len(indices) <= 200
    assert [4] in packed  # longer than the budget: alone


def test_pack_microbatches_within_a_scored_budget_too() -> None:
    """With ``max_scored``, a group also holds at most that many scored positions; the padded budget still
    holds; a row over the scored budget alone is a group of its own; 0 is no scored limit."""
    lengths, scored = [100, 90, 80, 70, 60, 50], [40, 10, 30, 25, 5, 70]
    assert pack_microbatches(lengths, 1000) == [[0, 1, 2, 3, 4, 5]]
    assert pack_microbatches(lengths, 1000, scored, 0) == [[0, 1, 2, 3, 4, 5]]
    packed = pack_microbatches(lengths, 1000, scored, 60)
    assert packed == [[0, 1], [2, 3, 4], [5]]  # 50, 60, then 70 alone: over 60 by itself
    for indices in packed:
        assert len(indices) == 1 or sum(scored[i] for i in indices) <= 60
    assert pack_microbatches(lengths, 200, scored, 60) == [[0, 1], [2, 3], [4], [5]]  # both budgets hold


def row(ids: list[int], sampled_from: int) -> Row:
    mask = torch.tensor([0.0] * sampled_from + [1.0] * (len(ids) - sampled_from))
    return Row(torch.tensor(ids), mask, gen_logps=None, advantage=1.0)


def test_a_micro_batch_keeps_from_the_first_sampled_token_and_stores_back_per_row() -> None:
    rows = [row([5, 6, 7, 8, 9], sampled_from=3), row([1, 2, 3], sampled_from=1)]
    micro = MicroBatch(rows, "cpu")
    assert micro.keep == 2  # row 1 samples its last 2 tokens; row 0 its last 2 as well
    assert micro.ids.tolist() == [[5, 6, 7, 8, 9], [0, 0, 1, 2, 3]]
    assert micro.attention.tolist() == [[1, 1, 1, 1, 1], [0, 0, 1, 1, 1]]
    assert micro.tail("mask").tolist() == [[1.0, 1.0], [1.0, 1.0]]
    micro.store("old_logps", torch.tensor([[-1.0, -2.0], [-3.0, -4.0]]))
    assert rows[0].old_logps.tolist() == [0.0, 0.0, 0.0, -1.0, -2.0]
    assert rows[1].old_logps.tolist() == [0.0, -3.0, -4.0]


def test_token_logprobs_of_a_left_padded_row_are_those_of_the_row_alone() -> None:
    """Left padding with shifted positions changes nothing: each row's log-probabilities (at temperature 0.7)
    are what the model gives it unpadded, from a full log-softmax."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=2)  # fmt: skip
    model = transformers.LlamaForCausalLM(config).eval()
    rows = [row([5, 6, 7, 8, 9, 10], sampled_from=2), row([1, 2, 3], sampled_from=1)]
    with torch.no_grad():
        logps, entropy = token_logprobs(model, MicroBatch(rows, "cpu"), temperature=0.7)
        for number, one in enumerate(rows):
            logits = model(input_ids=one.ids[None]).logits[0, :-1] / 0.7
            alone = torch.log_softmax(logits, -1).gather(1, one.ids[1:, None])[:, 0]
            keep = int(one.mask.sum())
            assert torch.allclose(logps[number, -keep:], alone[-keep:], atol=1e-5)
    assert logps.shape == entropy.shape == (2, 4)
    sampled = MicroBatch(rows, "cpu").tail("mask") > 0
    assert bool((entropy[sampled] > 0).all()) and not entropy[~sampled].any()  # only sampled tokens scored


# -- the fused head against the plain computation -----------------------------------------------------------
def test_scored_head_gradients_are_the_analytic_ones() -> None:
    """`ScoredHead`'s hand-written backward (tiles of 3 positions x 4 ids, both splits with a remainder, a bias,
    temperature 0.7) against autograd's numerical gradients in float64, and its values against a full
    log-softmax."""
    torch.manual_seed(0)
    hidden = torch.randn(7, 5, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(11, 5, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(11, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(0, 11, (7,))

    def logps(h: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return ScoredHead.apply(h, w, b, targets, 0.7, (3, 4))[0]

    assert torch.autograd.gradcheck(logps, (hidden, weight, bias))
    values, entropy = ScoredHead.apply(hidden, weight, bias, targets, 0.7, (3, 4))
    full = torch.log_softmax((hidden @ weight.T + bias) / 0.7, dim=-1)
    assert_close(values, full.gather(1, targets[:, None])[:, 0])
    assert_close(entropy, -(full.exp() * full).sum(-1))
    without = ScoredHead.apply(hidden, weight, bias, targets, 0.7, (3, 4), False)
    assert_close(without[0], values) and bool(without[1].isnan().all())  # no entropy asked for: none


def test_a_tile_takes_every_position_while_the_budget_allows() -> None:
    """A tile holds every scored position and as much of the vocabulary as the byte budget allows; past
    `MIN_TILE_COLUMNS` ids per position, the positions are split instead."""
    budget = LOGIT_TILE_BYTES["cpu"] // 4  # fp32 logits
    assert tile_shape(288, 151_665, "cpu") == (288, budget // 288)
    assert tile_shape(3, 11, "cpu") == (3, 11)  # a small head: one tile
    many = budget // MIN_TILE_COLUMNS * 3
    assert tile_shape(many, 151_665, "cpu") == (budget // MIN_TILE_COLUMNS, MIN_TILE_COLUMNS)
    assert tile_shape(288, 151_665, "cuda")[1] > tile_shape(288, 151_665, "cpu")[1]


def tiny_model(kind: str = "qwen2", seed: int = 0) -> torch.nn.Module:
    """A random tiny causal LM: a Qwen2 (tied embeddings: the head's weight is the input embedding) or a Llama
    (a head of its own)."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(seed)
    common = {"vocab_size": 96, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
              "num_attention_heads": 2, "num_key_value_heads": 2}  # fmt: skip
    if kind == "qwen2":
        return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**common, tie_word_embeddings=True))
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**common, tie_word_embeddings=False))


def trajectory_rows(seed: int = 1) -> list[Row]:
    """Three rows of different lengths, each a prompt, then sampled turns with a bridge (mask 0) between them,
    with the generator's log-probabilities and advantages of both signs."""
    generator = torch.Generator().manual_seed(seed)
    rows = []
    for prompt, turns, advantage in ((9, (5, 3, 4), 1.0), (6, (7,), -0.5), (12, (2, 6), 0.8)):
        mask = [0.0] * prompt
        for number, turn in enumerate(turns):
            mask += ([0.0] * 3 if number else []) + [1.0] * turn  # a bridge of 3 between turns
        ids = torch.randint(0, 96, (len(mask),), generator=generator)
        gen = torch.randn(len(mask), generator=generator) * 0.1 - 4.6
        rows.append(Row(ids, torch.tensor(mask), gen, advantage))
    return rows


def update_of(
    model: torch.nn.Module, rows: list[Row], scoring: object, loss_type: str, beta: float, temperature: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """What one micro-batch of the trainer's update computes (trainers/grpo.py ``update``) with ``scoring``
    as its token_logprobs: the sampled tokens' log-probabilities and entropy, the loss, every gradient."""
    micro = MicroBatch(rows, "cpu")
    logps, entropy = scoring(model, micro, temperature)  # type: ignore[operator]
    mask, old = micro.tail("mask"), micro.tail("old_logps")
    weights, _ = grpo.truncated_is_weights(old, micro.tail("gen_logps"), mask, 2.0)
    advantages = torch.tensor([row.advantage for row in rows])
    defaults = LOSS_DEFAULTS[loss_type]
    loss, _ = grpo.grpo_loss(
        logps, old, advantages, mask, loss_type, defaults.eps_low, defaults.eps_high, weights,
        micro.tail("ref_logps"), beta, generation_budget=16,
    )  # fmt: skip
    model.zero_grad(set_to_none=True)
    loss.backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    return logps * mask, entropy * mask, loss.detach(), grads


def with_old_and_ref(model: torch.nn.Module, rows: list[Row], temperature: float) -> list[Row]:
    """``rows`` with old and reference log-probabilities near the model's own (seeded noise), so that some
    ratios are clipped and the KL term is not zero."""
    with torch.no_grad():
        logps = plain_token_logprobs(model, MicroBatch(rows, "cpu"), temperature)[0]
    micro = MicroBatch(rows, "cpu")
    generator = torch.Generator().manual_seed(2)
    micro.store("old_logps", logps + 0.3 * torch.randn(logps.shape, generator=generator))
    micro.store("ref_logps", logps + 0.2 * torch.randn(logps.shape, generator=generator))
    return rows


def assert_same_update(
    model: torch.nn.Module, loss_type: str, beta: float, temperature: float, tolerance: dict[str, float]
) -> None:
    rows = with_old_and_ref(model, trajectory_rows(), temperature)
    fused = update_of(model, rows, token_logprobs, loss_type, beta, temperature)
    plain = update_of(model, rows, plain_token_logprobs, loss_type, beta, temperature)
    assert_close(fused[0], plain[0], **tolerance)  # log-probabilities of the sampled tokens
    assert_close(fused[1], plain[1], **tolerance)  # their entropy
    assert_close(fused[2], plain[2], **tolerance)  # the loss
    assert fused[3].keys() == plain[3].keys() and fused[3]
    for name in plain[3]:
        scale = float(plain[3][name].abs().max()) or 1.0  # each gradient to its own size
        assert_close(fused[3][name] / scale, plain[3][name] / scale, **tolerance, msg=name)
    assert float(fused[2]) != 0.0


FP32 = {"rtol": 1e-4, "atol": 1e-5}


@pytest.mark.parametrize("beta", [0.0, 0.04], ids=["no-kl", "kl"])
@pytest.mark.parametrize("loss_type", LOSSES)
def test_fused_update_is_the_plain_one_for_every_loss(
    loss_type: str, beta: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every loss, with and without the KL term, at temperature 1 on a model with tied embeddings (the head's
    weight gets the gradient of both its uses) and at 0.7 on one with a head of its own; in one tile, and in
    tiles of 12 positions x 5 ids (the 96 ids and the ~27 scored positions both split, with remainders)."""
    for tiles in ("one", "small"):
        if tiles == "small":
            monkeypatch.setitem(grpo_batching.LOGIT_TILE_BYTES, "cpu", 4 * 64)
            monkeypatch.setattr(grpo_batching, "MIN_TILE_COLUMNS", 5)
            assert grpo_batching.tile_shape(27, 96, "cpu") == (12, 5)
        for kind, temperature in (("qwen2", 1.0), ("llama", 0.7)):
            model = tiny_model(kind)
            assert fused_head(model) is model.get_output_embeddings()  # the fused path is the one taken
            assert_same_update(model, loss_type, beta, temperature, FP32)


def test_fused_update_is_the_plain_one_with_lora() -> None:
    """LoRA adapters on every linear layer (peft's "all-linear" leaves the head alone): the adapters'
    gradients match; the frozen head gets none."""
    peft = pytest.importorskip("peft")
    config = peft.LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM")
    model = peft.get_peft_model(tiny_model("llama"), config)
    for name, parameter in model.named_parameters():  # LoRA's B starts at 0: give the adapters a value
        if "lora_B" in name:
            torch.nn.init.normal_(parameter, std=0.1, generator=torch.Generator().manual_seed(3))
    assert fused_head(model) is not None
    assert_same_update(model, "dapo", 0.04, 0.7, FP32)


def test_fused_update_under_bf16_autocast() -> None:
    """``--mixed_precision bf16`` runs the model under autocast: the hidden states come in bf16; the fused
    head computes its logits in fp32 where the plain path has them in bf16, so the two agree to bf16's
    precision (8 bits of mantissa), not to fp32's."""
    model = tiny_model("qwen2")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert_same_update(model, "grpo", 0.04, 0.7, {"rtol": 3e-2, "atol": 3e-2})


def rows_of_process(rank: int) -> list[Row]:
    """Process ``rank``'s share of `trajectory_rows` in tests/trainers/fsdp_check.py: two rows, then one."""
    return trajectory_rows()[:2] if rank == 0 else trajectory_rows()[2:]


def coefficients_of(micro: MicroBatch) -> torch.Tensor:
    """Seeded per-token weights of a loss linear in the log-probabilities (0 where nothing was sampled)."""
    generator = torch.Generator().manual_seed(5)
    return torch.randn((len(micro.rows), micro.keep), generator=generator) * micro.tail("mask")


@pytest.mark.parametrize("version", ["1", "2"])
def test_fused_head_under_fsdp_is_the_plain_one_on_one_process(version: str, tmp_path: Path) -> None:
    """FSDP 1 and 2 on two processes (gloo, CPU; tests/trainers/fsdp_check.py): the fused head is taken,
    computes inside the model's forward with the weight FSDP gathered there, and gets its weight's gradient
    in the backward after FSDP gathers it again: the log-probabilities, entropy and every whole gradient
    are those of the plain path on one process with both micro-batches (FSDP's gradient is their mean).
    Then `grpo.update` under FSDP gives the weights of one process. About 80 s each on 2 loaded cores: two
    processes that import torch, transformers and accelerate."""
    pytest.importorskip("transformers")
    out = tmp_path / "fsdp.pt"
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
               str(REPO_ROOT / "tests" / "trainers" / "fsdp_check.py"), version, str(out)]  # fmt: skip
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    results = torch.load(out, weights_only=False)
    for kind, temperature in (("qwen2", 1.0), ("llama", 0.7)):
        result = results[kind]
        assert result["taken"], kind  # the fused path, not the plain one
        model = tiny_model(kind)
        total = torch.zeros(())
        for rank in (0, 1):
            micro = MicroBatch(rows_of_process(rank), "cpu")
            logps, entropy = plain_token_logprobs(model, micro, temperature)
            mask = micro.tail("mask")
            fused_logps, fused_entropy, old = result["each"][rank]
            assert_close(fused_logps, logps.detach() * mask, **FP32)
            assert_close(old, fused_logps, **FP32)
            assert_close(fused_entropy, entropy * mask, **FP32)
            total = total + (logps * coefficients_of(micro)).sum()
        model.zero_grad(set_to_none=True)
        (total / 2).backward()
        plain = {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
        assert result["grads"].keys() == plain.keys(), kind
        for name, gradient in plain.items():
            scale = float(gradient.abs().max()) or 1.0
            assert_close(result["grads"][name] / scale, gradient / scale, **FP32, msg=f"{kind} {name}")
    # grpo.update under FSDP, process 0 with two micro-batches and process 1 with one: the weights of one
    # process's update over all three rows
    from tests.trainers.fsdp_check import UPDATE_FLAGS

    model = tiny_model("qwen2")
    initial = {name: p.detach().clone() for name, p in model.named_parameters()}
    args = grpo.parse_args(UPDATE_FLAGS)
    optimizer, scheduler = grpo_setup.make_optimizer(args, model)
    rows = trajectory_rows()
    budget = max(int(row.mask.sum()) for row in rows)
    grpo.update(args, OneProcess(), model, None, optimizer, scheduler, rows, budget)
    moved = max(float((p.detach() - initial[name]).abs().max()) for name, p in model.named_parameters())
    assert moved > 1e-4  # the step changed the weights
    assert results["update"].keys() == dict(model.named_parameters()).keys()
    for name, parameter in model.named_parameters():
        assert_close(results["update"][name], parameter.detach(), atol=1e-5, rtol=1e-4, msg=name)


class OneProcess:
    """What `grpo.update` asks of accelerate's ``Accelerator``, for one process without it."""

    device = torch.device("cpu")
    num_processes = 1

    def reduce(self, tensor: torch.Tensor, reduction: str) -> torch.Tensor:
        return tensor

    def gather(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor

    def no_sync(self, model: object) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def backward(self, loss: torch.Tensor) -> None:
        loss.backward()

    def clip_grad_norm_(self, parameters: object, max_norm: float) -> torch.Tensor:
        return torch.nn.utils.clip_grad_norm_(parameters, max_norm)  # type: ignore[arg-type]


def test_a_head_it_cannot_take_goes_the_plain_way(capsys: pytest.CaptureFixture[str]) -> None:
    """A model that scales its logits after the head is said once and scored by the plain path."""
    model = tiny_model("llama", seed=4)
    model.config.logit_scale = 0.5
    assert fused_head(model) is None and fused_head(model) is None
    said = capsys.readouterr().err.splitlines()
    assert said == [
        "grpo.py: note: the log-probabilities are computed the plain way (every logit at once): the model "
        "changes its logits after the head (logit_scale in its config)"
    ]
