"""EXPERIMENTAL: a ``vllm-server``'s weights pushed over NCCL, GPU to GPU, instead of through a file.

**Untested here.** gym_swe's tests and benchmarks run on machines without a GPU, so no test has run this
path: it is written against vLLM's weight-transfer API as documented, and has never moved a tensor. The
disk path (`gym_swe.rollout.generators.vllm_server`, ``via="disk"``) is the one that is tested. Try this one
on a machine that has what it needs, compare the served log-probabilities with the trainer's after a sync
(as ``tests/rollout/test_weight_sync.py`` does for the disk path), and treat a mismatch as its bug.

What it needs (`nccl_refusal` says which is missing):

- CUDA in this process, and vLLM importable here (its ``NCCLTrainerWeightTransferEngine`` sends);
- a vLLM server on CUDA, started with ``VLLM_SERVER_DEV_MODE=1`` (its config at ``/server_info``) and
  ``--weight-transfer-config '{"backend": "nccl"}'`` (its RL routes ``/init_weight_transfer_engine``,
  ``/start_weight_update``, ``/update_weights``, ``/finish_weight_update``);
- a route from the server's workers to this machine: this process is rank 0 of a group with the server's
  workers, listening at ``address:port`` (default: the address this machine reaches the server from, and
  a free port).

The first send sets the group up; each send then broadcasts every tensor from this GPU.
"""

from __future__ import annotations

import socket
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from typing import Any

Control = Callable[[str, "dict[str, Any] | None"], Any]
"""A call to the server's control routes: path and JSON body (None: a GET), the JSON answer back; a failure
or a timeout raises (`GeneratorError` from `VLLMServerGenerator`)."""


def nccl_refusal(server_info: Any) -> str | None:
    """Why weights cannot go over NCCL from this process to the vLLM server whose
    ``/server_info?config_format=json`` answer is ``server_info`` (None: not a dev-mode server), or None."""
    try:
        import torch

        if not torch.cuda.is_available():
            return "this process has no CUDA device"
        import vllm.distributed.weight_transfer.nccl_engine  # noqa: F401
    except ImportError as error:
        return f"this process cannot import vLLM's NCCL weight-transfer engine ({error}): install vllm here"
    try:
        config = server_info["vllm_config"]
        device = config["device_config"]["device"]
        transfer = config.get("weight_transfer_config") or {}
    except (TypeError, KeyError, AttributeError):
        return "the server shows no config (start it with VLLM_SERVER_DEV_MODE=1)"
    if str(device) != "cuda":
        return f"the server runs on {device}, not CUDA"
    if transfer.get("backend") != "nccl":
        return """the server was started without --weight-transfer-config '{"backend": "nccl"}'"""
    return None


class NCCLSender:
    """Sends weights to one vLLM server over NCCL (EXPERIMENTAL, untested: see the module's docstring).

    Args:
        control: the server's control routes (see `Control`).
        base_url: the server, to find the address its workers reach this machine at.
        address: this machine's address as the server's workers reach it (default: found from
            ``base_url``); port: where this process listens for them (default: a free one).
    """

    def __init__(self, control: Control, base_url: str, address: str | None = None, port: int | None = None):
        self.control = control
        self.base_url = base_url
        self.address = address
        self.port = port
        self._engine: Any = None  # vLLM's NCCLTrainerWeightTransferEngine, once the group is set up

    def send(self, weights: Mapping[str, Any]) -> None:
        """One round of vLLM's NCCL weight transfer (the group is set up on the first)."""
        import torch
        from vllm.distributed.weight_transfer.base import ParamMeta, WeightSource
        from vllm.distributed.weight_transfer.nccl_engine import (
            NCCLTrainerInitInfo,
            NCCLTrainerWeightTransferEngine,
        )

        device = torch.device("cuda", torch.cuda.current_device())

        class Weights(WeightSource):  # type: ignore[misc]  # what vLLM's engine sends: these, on this GPU
            def metadata(self) -> list[ParamMeta]:
                return [ParamMeta(name, t.dtype, tuple(t.shape)) for name, t in weights.items()]

            def __iter__(self) -> Iterator[tuple[str, Any]]:
                for name, tensor in weights.items():
                    yield name, tensor.to(device)

        if self._engine is None:
            workers = self.control("/get_world_size", None)["world_size"]
            info = NCCLTrainerInitInfo(
                master_address=self.address or _address_towards(self.base_url),
                master_port=self.port or _free_port(),
                world_size=workers + 1,  # this process sends as rank 0
                rank=0,
            )
            self._engine = NCCLTrainerWeightTransferEngine.trainer_init(
                info, client=_TransferRoutes(self.control), source=Weights()
            )
        self._engine.source = Weights()
        self._engine.send_weights()


class _TransferRoutes:
    """vLLM's weight-transfer control plane (its ``VLLMWeightSyncClient`` protocol) over ``control``."""

    def __init__(self, control: Control) -> None:
        self.control = control

    def init_weight_transfer_engine(self, init_info: dict[str, Any]) -> None:
        self.control("/init_weight_transfer_engine", {"init_info": init_info})

    def start_weight_update(self) -> None:
        self.control("/start_weight_update", {})

    def update_weights(self, update_info: Any) -> None:
        self.control("/update_weights", {"update_info": update_info})

    def finish_weight_update(self, weight_version: str | None = None) -> None:
        body = {} if weight_version is None else {"weight_version": weight_version}
        self.control("/finish_weight_update", body)


def _address_towards(base_url: str) -> str:
    """This machine's address on the route to ``base_url``'s host."""
    url = urllib.parse.urlsplit(base_url)
    with socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=10) as sock:
        return str(sock.getsockname()[0])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("", 0))
        return int(sock.getsockname()[1])
