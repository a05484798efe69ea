"""From trajectories to the update's tensors (trainers/grpo_batching.py): packing within the token budget,
left padding that keeps each row's positions, and log-probabilities computed only where tokens were sampled."""

from __future__ import annotations

import pytest
import torch
from grpo_batching import MicroBatch, Row, pack_microbatches, token_logprobs


def test_pack_microbatches_respects_the_padded_budget() -> None:
    lengths = [100, 30, 60, 60, 500, 10]
    packed = pack_microbatches(lengths, 200)
    assert sorted(i for indices in packed for i in indices) == list(range(6))
    for indices in packed:
        assert len(indices) == 1 or max(lengths[i] for i in indices) * len(indices) <= 200
    assert [4] in packed  # longer than the budget: alone


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
    assert logps.shape == entropy.shape == (2, 4) and bool((entropy > 0).all())
