"""The ``vllm-server`` generator: an OpenAI-compatible vLLM server, spoken to over ``/v1/completions`` with
token-id prompts, asking for the sampled token ids and their log-probabilities back.

Real servers are handled as they are: a choice may come back with null logprobs (the trajectory keeps its ids
and records the logprobs as missing); token ids may only be in the logprobs' ``"token_id:<n>"`` strings; a
prompt longer than the server's context is a 400 (that trajectory ends truncated, the batch goes on); a
dropped connection or a 5xx is retried with backoff, up to a limit. `VLLMServer` starts and stops such a
server (the tests and benchmarks use it with vLLM on CPU).

A request carries a seed only when the caller gives one. vLLM's CPU build kills the whole server on a seeded
request whose prefill is chunked ("CPU Generator does not use offset"), and a server chunks prefills by
default. So before its first seeded request the generator reads the server's config (``/server_info``, on
servers run with ``VLLM_SERVER_DEV_MODE=1``, as `VLLMServer` and weight syncing need): a CPU server with
chunked prefill gets no seeds, a `ConfigError` says to restart it with ``--no-enable-chunked-prefill``. A
server that does not show its config is trusted.

Weight sync (`VLLMServerGenerator.sync_weights`) has two paths. Disk: the weights are saved as safetensors
under ``weights_dir`` and the server reloads them in place (``/collective_rpc`` ``reload_weights``); this is
what runs here and in the tests. NCCL: vLLM's own weight transfer (its RL routes
``/init_weight_transfer_engine``, ``/start_weight_update``, ``/update_weights``, ``/finish_weight_update``,
with vLLM's ``NCCLTrainerWeightTransferEngine`` broadcasting from this process), taken only where both
sides have CUDA, vLLM is importable here and the server was started with
``--weight-transfer-config '{"backend": "nccl"}'``; `nccl_refusal` says what is missing. The NCCL path has
not been run by gym_swe's tests (their machines have no GPU): treat it as untested.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from gym_swe.errors import ConfigError, GeneratorError, GymSweError, unknown_name
from gym_swe.rollout.chat import stop_token_ids
from gym_swe.rollout.generators.base import Sample, SamplingParams, request_seeds
from gym_swe.rollout.generators.vllm_local import TIED_HEAD, WORKER_EXTENSION, bounded, checkpoint_shapes
from gym_swe.rollout.generators.weights import checkpoint_weights, save_weights, weight_mismatches

CONTEXT_ERRORS = ("maximum context length", "context length", "too long", "max_model_len", "longer than")
SERVER_SYNC_VIAS = ("auto", "nccl", "disk")
"""How `VLLMServerGenerator.sync_weights` moves weights: "nccl" (vLLM's weight transfer; untested here),
"disk" (a file the server reloads), "auto" (NCCL where `nccl_refusal` finds nothing against it)."""


class VLLMServerGenerator:
    """Args:
    base_url: the server, e.g. ``http://127.0.0.1:8000`` (with or without ``/v1``).
    model: the served model's name.
    tokenizer: the model's tokenizer (or a path to load it from).
    api_key: sent as a bearer token when given.
    concurrency: requests in flight at once.
    max_retries: attempts after the first for dropped connections and server errors.
    weights_dir: where `sync_weights` saves weights for the server to reload (a path the server can read;
        the weights go to its ``gym_swe-weights`` folder); the server must run with
        ``VLLM_SERVER_DEV_MODE=1`` for its ``/collective_rpc`` and ``/reset_prefix_cache`` routes.
    sync_timeout: seconds a `sync_weights` may take (each HTTP call of it, and the whole of it).
    nccl_address: this machine's address as the server's workers reach it, for the NCCL path (default: the
        address this machine reaches the server from); nccl_port: its port (default: a free one).
    """

    name = "vllm-server"
    concurrent = True  # the collector runs episodes independently and sends requests as they come

    def __init__(
        self,
        base_url: str,
        model: str,
        tokenizer: Any,
        api_key: str | None = None,
        concurrency: int = 64,
        max_retries: int = 3,
        timeout: float = 600.0,
        weights_dir: str | None = None,
        sync_timeout: float = 600.0,
        nccl_address: str | None = None,
        nccl_port: int | None = None,
    ) -> None:
        if isinstance(tokenizer, (str, Path)):
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(tokenizer))
        self.base_url = base_url.rstrip("/").removesuffix("/v1")
        self.model = model
        self.tokenizer = tokenizer
        self.api_key = api_key
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.timeout = timeout
        self.weights_dir = weights_dir
        self.sync_timeout = sync_timeout
        self.nccl_address = nccl_address
        self.nccl_port = nccl_port
        self.broken: str | None = None
        """Why the server's weights are undefined (a sync broke off after the load began), or None."""
        self.last_sync: dict[str, Any] = {}
        """How the last `sync_weights` went: ``via`` ("nccl" or "disk") and ``seconds``."""
        self.stop_ids = sorted(stop_token_ids(tokenizer))
        self._threads = ThreadPoolExecutor(max_workers=concurrency)
        self._nccl: Any = None  # vLLM's NCCLTrainerWeightTransferEngine, once set up

    # -- requests ------------------------------------------------------------------------------------------
    def _post(self, path: str, body: dict[str, Any] | None, timeout: float | None = None) -> Any:
        """POST ``body`` as JSON to ``path`` (``None``: a GET) and read the JSON answer."""
        request = urllib.request.Request(
            self.base_url + path,
            data=None if body is None else json.dumps(body).encode(),
            headers={
                "Content-Type": "application/json",
                **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}),
            },
            method="GET" if body is None else "POST",
        )
        with urllib.request.urlopen(request, timeout=timeout or self.timeout) as response:
            return json.loads(response.read() or b"null")

    @functools.cached_property
    def _server_info(self) -> Any:
        """The server's ``/server_info`` answer, read once; None where it shows none."""
        try:
            return self._post("/server_info?config_format=json", None)
        except (urllib.error.URLError, OSError, ValueError):
            return None  # not a dev-mode vLLM server: nothing to read

    @functools.cached_property
    def _seeds_refusal(self) -> str | None:
        """Why a seeded request could kill the server (see the module's docstring), or None."""
        return seeds_refusal(self._server_info)

    def _control(self, path: str, body: dict[str, Any] | None) -> Any:
        """A weight-sync call: ``_post`` with the sync timeout, its failures as `GeneratorError`."""
        try:
            return self._post(path, body, timeout=self.sync_timeout)
        except urllib.error.HTTPError as error:
            detail = error.read().decode("utf-8", "replace")[:2000]
            raise GeneratorError(f"{path} on {self.base_url}: HTTP {error.code}: {detail}") from None
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise GeneratorError(
                f"{path} on {self.base_url}: no answer within {self.sync_timeout:g} s: {error}"
            ) from None

    def _complete(self, prompt: Sequence[int], params: SamplingParams, seed: int | None) -> Sample:
        body = {
            "model": self.model,
            "prompt": list(prompt),
            "max_tokens": params.max_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "top_k": params.top_k if params.top_k > 0 else -1,
            "stop_token_ids": sorted(set(self.stop_ids) | set(params.stop_token_ids)),
            "logprobs": 1,
            "return_token_ids": True,
            "return_tokens_as_token_ids": True,
            "skip_special_tokens": False,
        }
        if seed is not None:
            body["seed"] = seed
        delay = 0.5
        for attempt in range(self.max_retries + 1):
            try:
                return parse_completion(self._post("/v1/completions", body))
            except urllib.error.HTTPError as error:
                detail = error.read().decode("utf-8", "replace")[:2000]
                if error.code == 400 and any(marker in detail.lower() for marker in CONTEXT_ERRORS):
                    return Sample([], [], "", "length", details={"context_exceeded": True, "server": detail})
                if error.code < 500 or attempt == self.max_retries:
                    return Sample.failed(f"HTTP {error.code} from the server: {detail}")
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as error:
                if attempt == self.max_retries:
                    return Sample.failed(f"no answer from {self.base_url} after {attempt + 1} tries: {error}")
            except (ValueError, KeyError, TypeError) as error:
                return Sample.failed(f"unreadable answer from the server: {type(error).__name__}: {error}")
            time.sleep(delay)
            delay *= 2
        return Sample.failed("unreachable")  # pragma: no cover - the loop returns

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        params: SamplingParams,
        seeds: Sequence[int | None] | None = None,
    ) -> list[Sample]:
        if self.broken:
            raise GeneratorError(f"generate: the vLLM server's weights are undefined: {self.broken}")
        per_prompt = request_seeds(prompts, seeds)
        if any(seed is not None for seed in per_prompt) and self._seeds_refusal:
            raise ConfigError(f"the vLLM server at {self.base_url} cannot take seeds: {self._seeds_refusal}")
        return list(
            self._threads.map(lambda pair: self._complete(pair[0], params, pair[1]), zip(prompts, per_prompt))
        )

    def sync_weights(self, model: Any, via: str = "auto") -> None:
        """Have the server generate with ``model``'s current weights, then reset its prefix cache.

        ``model``: the trainer's model (unwrapped from DDP, accelerate, DeepSpeed or ``torch.compile``) or
        a state dict, in Hugging Face checkpoint names. Where the served model's checkpoint is readable
        here (``model=`` a local path, or a hub id in the local cache), names and shapes are checked
        against it first: a mismatch is a `ConfigError` and nothing reaches the server. ``via``: "disk"
        (saved under ``weights_dir``, in the server's dtype, and reloaded by the server), "nccl" (vLLM's
        NCCL weight transfer: untested here, see the module's docstring; a `ConfigError` says what is
        missing for it), or "auto" (NCCL where nothing is missing for it, else disk).

        Each HTTP call, and the whole sync, is bounded by ``sync_timeout``. A failure or a timeout is a
        `GeneratorError`; once the server had begun loading, the server's weights are undefined and this
        generator is `broken` (restart the server and make a new generator)."""
        if self.broken:
            raise GeneratorError(f"sync_weights: the vLLM server's weights are undefined: {self.broken}")
        if via not in SERVER_SYNC_VIAS:
            raise ConfigError(unknown_name("weight sync path", via, SERVER_SYNC_VIAS))
        weights = self._checked_weights(model)
        if via != "disk":
            refusal = nccl_refusal(self._server_info)
            if refusal and via == "nccl":
                raise ConfigError(f"sync_weights(via='nccl'): {refusal}")
            via = "disk" if refusal else "nccl"
        if via == "disk" and not self.weights_dir:
            raise ConfigError("VLLMServerGenerator.sync_weights needs weights_dir= (a path the server reads)")
        started = time.monotonic()
        deadline = started + self.sync_timeout
        if via == "nccl":
            self._bounded(lambda: self._send_nccl(weights), "the NCCL weight transfer", deadline)
        else:
            directory = str(Path(self.weights_dir or "") / "gym_swe-weights")
            dtype = _torch_dtype(self._server_info)
            save = functools.partial(save_weights, weights, directory, dtype=dtype)
            self._bounded(save, "saving the weights", deadline, breaks_server=False)
            self._bounded(lambda: self._reload(directory), "the server's reload", deadline)
        try:
            self._control("/reset_prefix_cache", {})
        except GeneratorError as error:
            raise GeneratorError(
                f"sync_weights: the weights are loaded, but cached prompts may use the old ones: {error}"
            ) from None
        self.last_sync = {"via": via, "seconds": time.monotonic() - started}

    def _reload(self, directory: str) -> None:
        self._control("/collective_rpc", {"method": "reload_weights", "kwargs": {"weights_path": directory}})
        if _device(self._server_info) != "cpu":
            return
        try:  # vLLM's CPU build: a head tied to the embeddings keeps its old weights unless re-packed
            self._control("/collective_rpc", {"method": "gym_swe_refresh_tied_head"})
        except GeneratorError as error:
            raise GeneratorError(
                f"{error}. On CPU, gym_swe re-packs a tied head after a reload with its worker extension: "
                f"start the server with --worker-extension-cls {WORKER_EXTENSION} (VLLMServer does)."
            ) from None

    def _checked_weights(self, model: Any) -> dict[str, Any]:
        weights = checkpoint_weights(model)
        expected = checkpoint_shapes(self.model)
        if expected is None:
            return weights
        if TIED_HEAD not in expected:
            weights.pop(TIED_HEAD, None)  # tied to the embeddings: the server loads none
        problem = weight_mismatches(weights, expected)
        if problem:
            raise ConfigError(
                f"sync_weights: the weights do not fit the served model ({self.model}): {problem} Nothing "
                "was sent; the server keeps its weights."
            )
        return weights

    def _bounded(
        self, step: Callable[[], object], what: str, deadline: float, breaks_server: bool = True
    ) -> None:
        reason = bounded(step, deadline - time.monotonic(), what, self.sync_timeout)
        if reason is None:
            return
        if breaks_server:
            self.broken = f"a weight sync broke off: {reason}"
            raise GeneratorError(
                f"sync_weights: {self.broken}. The server's weights are undefined: restart it and make a "
                "new generator."
            )
        raise GeneratorError(f"sync_weights: {reason}. The server keeps its previous weights.")

    def _send_nccl(self, weights: dict[str, Any]) -> None:
        """One round of vLLM's NCCL weight transfer (the group is set up on the first). UNTESTED here."""
        import torch
        from vllm.distributed.weight_transfer.base import ParamMeta, WeightSource
        from vllm.distributed.weight_transfer.nccl_engine import (
            NCCLTrainerInitInfo,
            NCCLTrainerWeightTransferEngine,
        )

        device = torch.device("cuda", torch.cuda.current_device())

        class Weights(WeightSource):  # what vLLM's trainer engine sends: these tensors, on this GPU
            def metadata(self) -> list[ParamMeta]:
                return [ParamMeta(name, t.dtype, tuple(t.shape)) for name, t in weights.items()]

            def __iter__(self) -> Iterator[tuple[str, Any]]:
                for name, tensor in weights.items():
                    yield name, tensor.to(device)

        if self._nccl is None:
            workers = self._control("/get_world_size", None)["world_size"]
            info = NCCLTrainerInitInfo(
                master_address=self.nccl_address or _address_towards(self.base_url),
                master_port=self.nccl_port or free_port(),
                world_size=workers + 1,  # this process sends as rank 0
                rank=0,
            )
            self._nccl = NCCLTrainerWeightTransferEngine.trainer_init(
                info, client=_TransferRoutes(self), source=Weights()
            )
        self._nccl.source = Weights()
        self._nccl.send_weights()

    def close(self) -> None:
        self._threads.shutdown(wait=False)


def parse_completion(response: Any) -> Sample:
    """One ``/v1/completions`` response, as vLLM sends it, into a `Sample`."""
    choice = response["choices"][0]
    logprobs = choice.get("logprobs")
    ids = choice.get("token_ids")
    if ids is None and logprobs and logprobs.get("tokens"):
        ids = [int(token.split(":", 1)[1]) for token in logprobs["tokens"]]  # "token_id:<n>"
    if ids is None:
        raise ValueError("no token ids: the server needs return_token_ids or return_tokens_as_token_ids")
    values = None
    if logprobs and logprobs.get("token_logprobs") is not None:
        values = [None if v is None else float(v) for v in logprobs["token_logprobs"]]
        values = None if any(v is None for v in values) or len(values) != len(ids) else values
    finish = "stop" if choice.get("finish_reason") == "stop" else "length"
    details = {} if values is not None else {"logprobs_missing": True}
    return Sample(
        token_ids=list(ids),
        logprobs=values,
        text=choice.get("text") or "",
        finish_reason=finish,
        details=details,
    )


def seeds_refusal(server_info: Any) -> str | None:
    """Why a vLLM server whose ``/server_info?config_format=json`` answer is ``server_info`` must get no
    seeded request, or None (also when the answer does not say)."""
    try:
        config = server_info["vllm_config"]
        device = config["device_config"]["device"]
        chunked = config["scheduler_config"]["enable_chunked_prefill"]
    except (TypeError, KeyError):
        return None
    if str(device) == "cpu" and chunked:
        return (
            "it runs on CPU with chunked prefill, and vLLM's CPU build kills the server on a seeded request "
            "whose prefill is chunked ('CPU Generator does not use offset'). Restart it with "
            "--no-enable-chunked-prefill, or sample without seeds."
        )
    return None


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


class _TransferRoutes:
    """vLLM's weight-transfer control plane (its ``VLLMWeightSyncClient`` protocol) over the generator's
    HTTP calls, with their timeout and errors."""

    def __init__(self, generator: VLLMServerGenerator) -> None:
        self.generator = generator

    def init_weight_transfer_engine(self, init_info: dict[str, Any]) -> None:
        self.generator._control("/init_weight_transfer_engine", {"init_info": init_info})

    def start_weight_update(self) -> None:
        self.generator._control("/start_weight_update", {})

    def update_weights(self, update_info: Any) -> None:
        self.generator._control("/update_weights", {"update_info": update_info})

    def finish_weight_update(self, weight_version: str | None = None) -> None:
        body = {} if weight_version is None else {"weight_version": weight_version}
        self.generator._control("/finish_weight_update", body)


def _device(server_info: Any) -> str | None:
    try:
        return str(server_info["vllm_config"]["device_config"]["device"])
    except (TypeError, KeyError):
        return None


def _torch_dtype(server_info: Any) -> Any:
    """The server's model dtype as a torch dtype, or None where its config does not say."""
    import torch

    try:
        name = str(server_info["vllm_config"]["model_config"]["dtype"])
    except (TypeError, KeyError):
        return None
    dtype = getattr(torch, name.removeprefix("torch."), None)
    return dtype if isinstance(dtype, torch.dtype) else None


def _address_towards(base_url: str) -> str:
    """This machine's address on the route to ``base_url``'s host."""
    url = urllib.parse.urlsplit(base_url)
    with socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=10) as sock:
        return sock.getsockname()[0]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class VLLMServer:
    """A vLLM OpenAI-compatible server in a subprocess, on loopback, stopped on exit.

    ``python`` is the interpreter of the environment vLLM is installed in (vLLM pins its own torch and
    transformers, so it often lives in a virtual environment of its own). ``sync_extension``: load
    gym_swe's worker extension into the server (``--worker-extension-cls``), which weight sync needs on
    CPU (see `gym_swe.rollout.generators.vllm_local.refresh_tied_head`); that environment must then
    have gym_swe installed too.
    """

    def __init__(
        self,
        model: str,
        python: str = "python",
        port: int | None = None,
        max_model_len: int = 4096,
        extra_args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        startup_timeout: float = 600,
        sync_extension: bool = True,
    ) -> None:
        self.model = model
        self.port = port or free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(tempfile.mkstemp(prefix="gym_swe-vllm-", suffix=".log")[1])
        command = [
            python,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            model,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--max-model-len",
            str(max_model_len),
            "--logprobs-mode",
            "processed_logprobs",
            "--served-model-name",
            model,
            *(["--worker-extension-cls", WORKER_EXTENSION] if sync_extension else []),
            *extra_args,
        ]
        environment = {**os.environ, "VLLM_SERVER_DEV_MODE": "1", **(env or {})}
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=log, env=environment, start_new_session=True
            )
        self._wait(startup_timeout)

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise GymSweError(
                    f"the vLLM server exited ({self.process.returncode}):\n{self.log()[-4000:]}"
                )
            try:
                with urllib.request.urlopen(self.base_url + "/health", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(1)
        self.close()
        raise GymSweError(f"the vLLM server did not start within {timeout:.0f} s:\n{self.log()[-4000:]}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait()

    def __enter__(self) -> VLLMServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
