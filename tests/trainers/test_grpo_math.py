"""The trainer's math (trainers/grpo.py) against hand-computed tensors."""

from __future__ import annotations

import math

import grpo  # trainers/ (on the path: tests/trainers/conftest.py)
import pytest
import torch

T = torch.tensor


def close(a: torch.Tensor, b: list | torch.Tensor, tol: float = 1e-5) -> bool:
    return torch.allclose(a.float(), torch.as_tensor(b, dtype=torch.float32), atol=tol, rtol=tol)


# -- advantages ---------------------------------------------------------------------------------------------------
def test_group_advantages_mean_and_group_std() -> None:
    rewards = T([1.0, 0.0, 0.0, 1.0, 2.0, 2.0])  # two groups of 3
    # group 1: mean 1/3, sample std sqrt(1/3); group 2: mean 5/3, std sqrt(1/3)
    std = math.sqrt(1 / 3)
    expected = [
        (1 - 1 / 3) / std,
        (-1 / 3) / std,
        (-1 / 3) / std,
        (1 - 5 / 3) / std,
        (1 / 3) / std,
        (1 / 3) / std,
    ]
    assert close(grpo.group_advantages(rewards, 3, "group", eps=0.0), expected)


def test_group_advantages_unscaled_and_leave_one_out() -> None:
    rewards = T([1.0, 0.0, 0.0, 3.0])
    assert close(grpo.group_advantages(rewards, 4, "none"), [0.0, -1.0, -1.0, 2.0])
    # leave one out: baseline of r0 = (0 + 0 + 3) / 3 = 1; of r1 = (1 + 0 + 3) / 3; of r3 = 1 / 3
    assert close(
        grpo.group_advantages(rewards, 4, "none", leave_one_out=True), [0.0, -4 / 3, -4 / 3, 3 - 1 / 3]
    )


def test_group_advantages_batch_scale() -> None:
    rewards = T([1.0, 0.0, 3.0, 2.0])
    std = float(rewards.std())
    assert close(
        grpo.group_advantages(rewards, 2, "batch", eps=0.0), [0.5 / std, -0.5 / std, 0.5 / std, -0.5 / std]
    )
    assert close(
        grpo.group_advantages(rewards, 2, "batch", batch_std=2.0, eps=0.0), [0.25, -0.25, 0.25, -0.25]
    )


def test_failed_trajectories_leave_the_baseline_and_get_nothing() -> None:
    rewards = T([1.0, 0.0, 0.0, 0.0])  # the last one failed: its 0 is no answer
    valid = T([1.0, 1.0, 1.0, 0.0])
    advantages = grpo.group_advantages(rewards, 4, "none", valid=valid)
    assert close(advantages, [2 / 3, -1 / 3, -1 / 3, 0.0])
    lonely = grpo.group_advantages(T([1.0, 0.0]), 2, "group", valid=T([1.0, 0.0]))
    assert close(lonely, [0.0, 0.0])  # one valid member: no baseline, no signal


def test_zero_std_groups() -> None:
    rewards = T([1.0, 1.0, 0.0, 1.0, 0.5, 0.5])
    assert grpo.zero_std_groups(rewards, 2).tolist() == [True, False, True]
    assert grpo.zero_std_groups(T([1.0, 0.0]), 2, valid=T([1.0, 0.0])).tolist() == [True]


# -- importance weights --------------------------------------------------------------------------------------------
def test_truncated_is_weights_and_geometric_mask() -> None:
    old = T([[0.0, -1.0, -1.0], [0.0, -2.0, -2.0]])
    gen = T([[0.0, -1.0 - math.log(3.0), -1.0], [0.0, -2.0 + math.log(4.0), -2.0 - math.log(4.0)]])
    mask = T([[0.0, 1.0, 1.0], [0.0, 1.0, 1.0]])
    weights, stats = grpo.truncated_is_weights(old, gen, mask, cap=2.0)
    # ratios exp(old - gen): row 0: 3, 1; row 1: 1/4, 4 -> capped at 2
    assert close(weights, [[0.0, 2.0, 1.0], [0.0, 0.25, 2.0]])
    assert stats["is_ratio_max"] == pytest.approx(4.0, rel=1e-5) and stats["is_ratio_min"] == pytest.approx(
        0.25
    )
    assert stats["is_ratio_mean"] == pytest.approx((3 + 1 + 0.25 + 4) / 4, rel=1e-5)
    deltas = [math.log(3), 0.0, -math.log(4), math.log(4)]
    assert stats["kl"] == pytest.approx(sum(math.exp(d) - d - 1 for d in deltas) / 4, rel=1e-5)
    # geometric means: row 0 sqrt(3) = 1.73 (kept at 2), row 1: 1 (kept); threshold 1.5 drops row 0
    masked, _ = grpo.truncated_is_weights(old, gen, mask, cap=2.0, geo_threshold=1.5)
    assert close(masked, [[0.0, 0.0, 0.0], [0.0, 0.25, 2.0]])


# -- losses -----------------------------------------------------------------------------------------------------
LOGPS = T([[-1.0, -2.0, 0.0], [-0.5, -1.0, -1.5]])
OLD = T([[-1.0, -1.0, 0.0], [-1.0, -1.0, -1.0]])
MASK = T([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
ADV = T([1.0, -2.0])


def surrogate(ratio: float, advantage: float, low: float = 0.2, high: float = 0.28) -> float:
    return -min(ratio * advantage, min(max(ratio, 1 - low), 1 + high) * advantage)


def token_losses() -> list[list[float]]:
    ratios = [[1.0, math.exp(-1.0)], [math.exp(0.5), 1.0, math.exp(-0.5)]]
    return [[surrogate(r, 1.0) for r in ratios[0]], [surrogate(r, -2.0) for r in ratios[1]]]


def test_dapo_is_the_mean_over_all_tokens_of_the_batch() -> None:
    losses = token_losses()
    loss, stats = grpo.grpo_loss(LOGPS, OLD, ADV, MASK, "dapo")
    assert float(loss) == pytest.approx(sum(map(sum, losses)) / 5, rel=1e-5)
    # exp(-1) < 0.8 with A > 0: no clip (min takes the ratio); exp(0.5) > 1.28 with A < 0: -min picks the ratio
    assert float(stats["tokens"]) == 5
    # with a batch-wide token count, micro-batch losses add up to the batch's
    half, _ = grpo.grpo_loss(LOGPS[:1], OLD[:1], ADV[:1], MASK[:1], "dapo", total_tokens=5)
    other, _ = grpo.grpo_loss(LOGPS[1:], OLD[1:], ADV[1:], MASK[1:], "dapo", total_tokens=5)
    assert float(half + other) == pytest.approx(float(loss), rel=1e-5)


def test_grpo_and_dr_grpo_normalisations() -> None:
    losses = token_losses()
    loss, _ = grpo.grpo_loss(LOGPS, OLD, ADV, MASK, "grpo")
    assert float(loss) == pytest.approx((sum(losses[0]) / 2 + sum(losses[1]) / 3) / 2, rel=1e-5)
    loss, _ = grpo.grpo_loss(LOGPS, OLD, ADV, MASK, "dr_grpo", generation_budget=10)
    assert float(loss) == pytest.approx(sum(map(sum, losses)) / (2 * 10), rel=1e-5)


def test_clipping_counts_and_the_gradient_of_a_clipped_token_is_zero() -> None:
    logps = T([[0.5, -0.5]], requires_grad=True)
    old = T([[0.0, 0.0]])
    loss, stats = grpo.grpo_loss(logps, old, T([1.0]), T([[1.0, 1.0]]), "dapo")
    loss.backward()
    # token 0: ratio e^0.5 = 1.65 > 1.28 with A > 0: clipped, no gradient; token 1: ratio 0.61, unclipped
    assert logps.grad[0, 0] == 0.0 and logps.grad[0, 1] == pytest.approx(-math.exp(-0.5) / 2, rel=1e-5)
    assert float(stats["clipped_high"]) == 1 and float(stats["clipped_low"]) == 0


def test_gspo_uses_the_sequence_ratio() -> None:
    loss, _ = grpo.grpo_loss(LOGPS, OLD, ADV, MASK, "gspo", eps_low=0.2, eps_high=0.28)
    # sequence ratios: row 0 exp((0 - 1) / 2), row 1 exp((0.5 + 0 - 0.5) / 3) = 1
    s0, s1 = math.exp(-0.5), 1.0
    expected = (surrogate(s0, 1.0) + surrogate(s1, -2.0)) / 2
    assert float(loss) == pytest.approx(expected, rel=1e-5)


def test_cispo_weights_the_log_probability_by_the_clipped_ratio() -> None:
    logps = LOGPS.clone().requires_grad_(True)
    loss, _ = grpo.grpo_loss(logps, OLD, ADV, MASK, "cispo")
    ratios = [[1.0, math.exp(-1.0)], [math.exp(0.5), 1.0, math.exp(-0.5)]]
    clipped = [[min(max(r, 0.8), 1.28) for r in row] for row in ratios]
    values = [[-1.0, -2.0], [-0.5, -1.0, -1.5]]
    expected = -(sum(c * 1.0 * v for c, v in zip(clipped[0], values[0]))
                 + sum(c * -2.0 * v for c, v in zip(clipped[1], values[1]))) / 5  # fmt: skip
    assert float(loss.detach()) == pytest.approx(expected, rel=1e-5)
    loss.backward()
    assert float(logps.grad[0, 1]) == pytest.approx(
        -0.8 * 1.0 / 5, rel=1e-5
    )  # the weight carries no gradient


def test_kl_penalty_is_the_k3_estimate() -> None:
    ref = T([[-1.5, -2.0, 0.0], [-0.5, -0.5, -1.5]])
    base, _ = grpo.grpo_loss(LOGPS, OLD, ADV, MASK, "dapo")
    with_kl, stats = grpo.grpo_loss(LOGPS, OLD, ADV, MASK, "dapo", ref_logps=ref, beta=0.1)
    deltas = [-0.5, 0.0, 0.0, 0.5, 0.0]  # ref - logp on the masked tokens
    k3 = sum(math.exp(d) - d - 1 for d in deltas)
    assert float(with_kl - base) == pytest.approx(0.1 * k3 / 5, rel=1e-5)
    assert float(stats["kl"]) == pytest.approx(k3, rel=1e-5)
