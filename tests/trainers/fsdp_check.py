"""The fused LM head under FSDP, for tests/trainers/test_grpo_fsdp.py: two processes on gloo (CPU), each a
micro-batch of its own through `token_logprobs` on a model wrapped by torch's FSDP, then a backward.

    python -m torch.distributed.run --nproc_per_node 2 tests/trainers/fsdp_check.py {1,2} OUT.pt

1: ``FullyShardedDataParallel`` (each decoder layer a unit of its own, the rest, the head among it, the
root; ``use_orig_params``); 2: ``fully_shard`` on each decoder layer, then on the model. For both tiny models
of test_grpo_batching (a Qwen2 with tied embeddings at temperature 1, a Llama at 0.7): the old
log-probabilities without gradients first (as the update's first pass does), then the loss
``sum(logps x coefficients)`` over this process's rows and its backward. Process 0 writes OUT.pt: per model,
whether the fused head was taken, each process's log-probabilities and entropy, and every parameter's whole
gradient (FSDP's: the mean over the processes). Then the trainer's `grpo.update` itself, under accelerate
(as MULTI_CPU: its FSDP needs an accelerator) on the Qwen2 wrapped the same way: process 0 has two micro-batches
(rows of 27 and 13 tokens within 30), process 1 one; OUT.pt holds the weights after its optimizer step.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "trainers")]

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from tests.trainers.test_grpo_batching import coefficients_of, rows_of_process, tiny_model  # noqa: E402

CASES = (("qwen2", 1.0), ("llama", 0.7))


def wrapped(model: torch.nn.Module, version: str) -> torch.nn.Module:
    layers = model.model.layers
    if version == "2":
        from torch.distributed.fsdp import fully_shard

        for layer in layers:
            fully_shard(layer)
        fully_shard(model)
        return model
    from torch.distributed.fsdp import FullyShardedDataParallel
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    policy = ModuleWrapPolicy({type(layers[0])})
    return FullyShardedDataParallel(
        model, auto_wrap_policy=policy, use_orig_params=True, device_id=torch.device("cpu")
    )


def whole_gradients(model: torch.nn.Module, version: str) -> dict[str, torch.Tensor]:
    if version == "2":
        return {
            name: p.grad.full_tensor().clone() for name, p in model.named_parameters() if p.grad is not None
        }
    from torch.distributed.fsdp import FullyShardedDataParallel

    with FullyShardedDataParallel.summon_full_params(model, with_grads=True):
        return {
            name.replace("_fsdp_wrapped_module.", ""): p.grad.clone()
            for name, p in model.named_parameters()
            if p.grad is not None
        }


UPDATE_FLAGS = ["--env", "CodeDebug-v0", "--model", "unused", "--max_tokens_per_microbatch", "30",
                "--learning_rate", "1e-2", "--adam_epsilon", "1.0", "--max_grad_norm", "0",
                "--log_with", "none"]  # fmt: skip
"""`grpo.update`'s flags here and in the test's one-process run (Adam's epsilon 1: see test_grpo_runs' DDP test;
no clipping: accelerate clips an FSDP model's gradients only when it runs FSDP itself)."""


def updated(model: torch.nn.Module, accelerator: object, rows: list) -> torch.nn.Module:
    """``model`` after `grpo.update` over ``rows`` (one optimizer step)."""
    import grpo
    import grpo_setup

    args = grpo.parse_args(UPDATE_FLAGS)
    optimizer, scheduler = grpo_setup.make_optimizer(args, model)
    budget = max(int(row.mask.sum()) for row in rows)
    grpo.update(args, accelerator, model, None, optimizer, scheduler, rows, budget)
    return model


def whole_weights(model: torch.nn.Module, version: str) -> dict[str, torch.Tensor]:
    if version == "2":
        return {name: p.full_tensor().detach().clone() for name, p in model.named_parameters()}
    from torch.distributed.fsdp import FullyShardedDataParallel

    with FullyShardedDataParallel.summon_full_params(model):
        return {
            name.replace("_fsdp_wrapped_module.", ""): p.detach().clone()
            for name, p in model.named_parameters()
        }


def main() -> None:
    version, out = sys.argv[1], sys.argv[2]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    from grpo_batching import MicroBatch, fused_head, token_logprobs

    results = {}
    for kind, temperature in CASES:
        model = wrapped(tiny_model(kind), version)
        micro = MicroBatch(rows_of_process(rank), "cpu")
        with torch.no_grad():  # the first call probes the model: a forward, both processes at once
            old = token_logprobs(model, micro, temperature, with_entropy=False)[0]
        taken = fused_head(model) is not None
        logps, entropy = token_logprobs(model, micro, temperature)
        (logps * coefficients_of(micro)).sum().backward()
        each: list[object] = [None, None]
        dist.all_gather_object(each, (logps.detach(), entropy, old))
        results[kind] = {"taken": taken, "each": each, "grads": whole_gradients(model, version)}
    from accelerate import Accelerator

    accelerator = Accelerator(cpu=True)
    assert accelerator.num_processes == 2
    model = updated(wrapped(tiny_model("qwen2"), version), accelerator, rows_of_process(rank))
    results["update"] = whole_weights(model, version)
    if rank == 0:
        torch.save(results, out)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
