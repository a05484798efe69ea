"""The ``vllm-server`` generator: an OpenAI-compatible vLLM server, spoken to over ``/v1/completions`` with
token-id prompts, asking for the sampled token ids and their log-probabilities back.

Real servers are handled as they are: a choice may come back with null logprobs (the trajectory keeps its ids
and records the logprobs as missing); token ids may only be in the logprobs' ``"token_id:<n>"`` strings; a
prompt longer than the server's context is a 400 (that trajectory ends truncated, the batch goes on); a
dropped connection or a 5xx is retried with the policy of `gym_swe.rollout.generators.http`, whose pooled
client the generator owns and `VLLMServerGenerator.close` closes. (The tests start such a server with
``tests/rollout/vllm_server.py``.)

A request carries a seed only when the caller gives one. vLLM's CPU build kills the whole server on a seeded
request whose prefill is chunked ("CPU Generator does not use offset"), and a server chunks prefills by
default. So before its first seeded request the generator reads the server's config (``/server_info``, on
servers run with ``VLLM_SERVER_DEV_MODE=1``, as weight syncing needs): a CPU server with
chunked prefill gets no seeds, a `ConfigError` says to restart it with ``--no-enable-chunked-prefill``. A
server that does not show its config is trusted.

Weight sync (`VLLMServerGenerator.sync_weights`) has two paths. Disk: the weights are saved as safetensors
under ``weights_dir`` and the server reloads them in place (``/collective_rpc`` ``reload_weights``); this is
what runs here and in the tests. NCCL: vLLM's own weight transfer, EXPERIMENTAL and untested (gym_swe's
tests have no GPU), in `gym_swe.rollout.generators.nccl_sync`, taken only where `nccl_refusal` finds
nothing missing for it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gym_swe.errors import ConfigError, GeneratorError, unknown_name
from gym_swe.rollout.chat import stop_token_ids
from gym_swe.rollout.generators.base import Sample, SamplingParams, request_seeds
from gym_swe.rollout.generators.http import HTTPClient, NoAnswer, RetryPolicy, error_detail, server_root
from gym_swe.rollout.generators.nccl_sync import NCCLSender, nccl_refusal
from gym_swe.rollout.generators.vllm_local import WORKER_EXTENSION
from gym_swe.rollout.generators.weights import (
    bounded,
    checked_against_checkpoint,
    checkpoint_shapes,
    save_weights,
)

CONTEXT_ERRORS = ("maximum context length", "context length", "too long", "max_model_len", "longer than")
SERVER_SYNC_VIAS = ("auto", "nccl", "disk")
"""How `VLLMServerGenerator.sync_weights` moves weights: "nccl" (vLLM's weight transfer; untested here),
"disk" (a file the server reloads), "auto" (NCCL where `nccl_refusal` finds nothing against it)."""
INFO_PATH = "/server_info?config_format=json"
"""A dev-mode vLLM server's config."""


class VLLMServerGenerator:
    """Args:
    base_url: the server, e.g. ``http://127.0.0.1:8000`` (with or without ``/v1``).
    model: the served model's name.
    tokenizer: the model's tokenizer (or a path to load it from).
    api_key: sent as a bearer token when given.
    concurrency: requests in flight at once.
    max_retries: attempts after the first for dropped connections and server errors (the rest of the
        policy: `gym_swe.rollout.generators.http.RetryPolicy`).
    timeout: seconds a request may wait for its answer.
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
        self.base_url = server_root(base_url)
        self.model = model
        self.tokenizer = tokenizer
        self.weights_dir = weights_dir
        self.sync_timeout = sync_timeout
        self.broken: str | None = None
        """Why the server's weights are undefined (a sync broke off after the load began), or None."""
        self.last_sync: dict[str, Any] = {}
        """How the last `sync_weights` went: ``via`` ("nccl" or "disk") and ``seconds``."""
        self.stop_ids = sorted(stop_token_ids(tokenizer))
        self.http = HTTPClient(
            self.base_url, api_key, timeout, RetryPolicy(retries=max_retries), concurrency=concurrency
        )
        self._nccl_address, self._nccl_port = nccl_address, nccl_port
        self._nccl: NCCLSender | None = None  # set up on the first sync over NCCL

    # -- requests ------------------------------------------------------------------------------------------
    @functools.cached_property
    def _server_info(self) -> Any:
        """The server's ``/server_info`` answer, read once; None where it shows none."""
        try:
            response = self.http.get(INFO_PATH, retry=False)
            return response.json() if response.is_success else None
        except (NoAnswer, ValueError):
            return None  # not a dev-mode vLLM server: nothing to read

    @functools.cached_property
    def _seeds_refusal(self) -> str | None:
        """Why a seeded request could kill the server (see the module's docstring), or None."""
        return seeds_refusal(self._server_info)

    def _control(self, path: str, body: dict[str, Any] | None) -> Any:
        """A weight-sync call (``body`` None: a GET): one attempt, as long as the sync timeout; its answer
        read as JSON, its failures as `GeneratorError`."""
        try:
            if body is None:
                response = self.http.get(path, timeout=self.sync_timeout, retry=False)
            else:
                response = self.http.post(path, body, timeout=self.sync_timeout, retry=False)
        except NoAnswer as error:
            raise GeneratorError(
                f"{path} on {self.base_url}: no answer within {self.sync_timeout:g} s: {error.reason}"
            ) from None
        if response.is_error:
            raise GeneratorError(
                f"{path} on {self.base_url}: HTTP {response.status_code}: {error_detail(response)}"
            )
        try:
            return response.json() if response.content else None
        except ValueError as error:
            raise GeneratorError(f"{path} on {self.base_url}: unreadable answer: {error}") from None

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
        try:
            response = self.http.post("/v1/completions", body)
        except NoAnswer as error:
            return Sample.failed(str(error))
        if response.is_error:
            detail = error_detail(response)
            if response.status_code == 400 and any(marker in detail.lower() for marker in CONTEXT_ERRORS):
                return Sample([], [], "", "length", details={"context_exceeded": True, "server": detail})
            return Sample.failed(f"HTTP {response.status_code} from the server: {detail}")
        try:
            return parse_completion(response.json())
        except (ValueError, KeyError, TypeError, IndexError) as error:
            return Sample.failed(f"unreadable answer from the server: {type(error).__name__}: {error}")

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
        return self.http.map(lambda pair: self._complete(pair[0], params, pair[1]), zip(prompts, per_prompt))

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
            if self._nccl is None:
                self._nccl = NCCLSender(self._control, self.base_url, self._nccl_address, self._nccl_port)
            sender = self._nccl
            self._bounded(lambda: sender.send(weights), "the NCCL weight transfer", deadline)
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
                f"start the server with --worker-extension-cls {WORKER_EXTENSION} (the tests' launcher does)."
            ) from None

    def _checked_weights(self, model: Any) -> dict[str, Any]:
        """``model``'s weights by checkpoint name, checked against the served checkpoint where it is
        readable here (a head tied to the embeddings dropped: the server loads none)."""
        return checked_against_checkpoint(
            model, checkpoint_shapes(self.model), tied_embeddings=False, holder="server", model=self.model
        )

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

    def close(self) -> None:
        self.http.close()


def parse_completion(response: Any) -> Sample:
    """One ``/v1/completions`` response, as vLLM sends it, into a `Sample`."""
    choice = response["choices"][0]
    logprobs = choice.get("logprobs")
    ids = choice.get("token_ids")
    if ids is None and logprobs and logprobs.get("tokens"):
        ids = [int(token.split(":", 1)[1]) for token in logprobs["tokens"]]  # "token_id:<n>"
    if ids is None:
        raise ValueError("no token ids: the server needs return_token_ids or return_tokens_as_token_ids")
    values: list[float] | None = None
    if logprobs and logprobs.get("token_logprobs") is not None:
        raw = logprobs["token_logprobs"]
        given = [float(v) for v in raw if v is not None]
        values = given if len(given) == len(raw) == len(ids) else None  # all or none
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
