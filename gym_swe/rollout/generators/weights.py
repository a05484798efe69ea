"""The weights a trainer hands a generator: unwrapped from DDP and friends, named as Hugging Face checkpoints
name them, checked against what the generator serves, written to disk where a reload needs a file, and
loaded within a time limit. Shared by every generator's ``sync_weights``; the check both vLLM generators
make before loading anything is `checked_against_checkpoint`."""

from __future__ import annotations

import difflib
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gym_swe.errors import ConfigError

WRAPPERS = {
    "DistributedDataParallel": "module",
    "DataParallel": "module",
    "DeepSpeedEngine": "module",
    "OptimizedModule": "_orig_mod",  # torch.compile
}
"""Wrapper classes (by name, so that none has to be imported) and the attribute holding the model inside."""
WRAPPER_PREFIXES = ("module.", "_orig_mod.")
"""What those wrappers put in front of the parameter names in their state dicts."""
TIED_HEAD = "lm_head.weight"
"""The output head's checkpoint name: with tied embeddings, vLLM reads the embeddings for it."""


def unwrap_model(model: Any) -> Any:
    """The model inside DDP, DataParallel, DeepSpeed and ``torch.compile`` wrappers (as accelerate's
    ``unwrap_model`` does, without needing accelerate)."""
    while type(model).__name__ in WRAPPERS:
        model = getattr(model, WRAPPERS[type(model).__name__])
    return model


def checkpoint_weights(source: Any) -> dict[str, Any]:
    """``source``'s tensors by name, as the generators load them: Hugging Face checkpoint names.

    ``source``: a model (unwrapped first, see `unwrap_model`) or a state dict; wrapper prefixes
    (``module.``, ``_orig_mod.``) are dropped from the names, and a sharded tensor (FSDP2's ``DTensor``) is
    gathered with ``full_tensor()``, a collective every rank must join. Tensors are detached, not copied.
    A PEFT model is refused: its adapters must be merged first."""
    if isinstance(source, Mapping):
        state = source
    else:
        model = unwrap_model(source)
        if not callable(getattr(model, "state_dict", None)):
            raise ConfigError(f"sync_weights takes a model or a state dict, got {type(source).__name__}")
        state = model.state_dict()
    weights = {}
    for name, tensor in state.items():
        while name.startswith(WRAPPER_PREFIXES):
            name = name.split(".", 1)[1]
        full_tensor = getattr(tensor, "full_tensor", None)
        weights[name] = (full_tensor() if callable(full_tensor) else tensor).detach()
    if any(name.startswith("base_model.model.") or ".lora_" in name for name in weights):
        raise ConfigError(
            "sync_weights got a PEFT model (names like 'base_model.model....lora_A...'): a generator serves "
            "plain weights. Merge the adapters first (peft's merge_adapter(), then unmerge_adapter() after "
            "the sync) and pass the base model (model.get_base_model())."
        )
    return weights


def weight_mismatches(
    weights: Mapping[str, Any],
    expected: Mapping[str, tuple[int, ...]],
    optional: frozenset[str] = frozenset(),
) -> str | None:
    """What keeps ``weights`` from replacing a model whose tensors have the ``expected`` names and shapes
    (names in ``optional``, e.g. tied ones, may be absent), or None when they fit."""
    problems = []
    unknown = sorted(set(weights) - set(expected))
    if unknown:
        hints = []
        for name in unknown[:5]:
            close = difflib.get_close_matches(name, expected, n=1)
            hints.append(f"{name!r} (nearest: {close[0]!r})" if close else repr(name))
        problems.append(f"{len(unknown)} unknown name(s): {', '.join(hints)}")
    missing = sorted(set(expected) - set(weights) - optional)
    if missing:
        problems.append(f"{len(missing)} missing: {', '.join(map(repr, missing[:5]))}")
    shapes = [
        f"{name!r} is {tuple(weights[name].shape)}, the model's is {tuple(shape)}"
        for name, shape in expected.items()
        if name in weights and tuple(weights[name].shape) != tuple(shape)
    ]
    if shapes:
        problems.append(f"{len(shapes)} shape(s) differ: {'; '.join(shapes[:5])}")
    return "; ".join(problems) + "." if problems else None


def save_weights(weights: Mapping[str, Any], directory: str | Path, dtype: Any = None) -> Path:
    """Write ``weights`` as ``model.safetensors`` in ``directory`` (made if needed), converted to ``dtype``
    when given, and return the file. The file is replaced in one step, so a reader holding the old one
    keeps it whole. A tensor sharing memory with an earlier one (tied weights) is written as a copy."""
    from safetensors.torch import save_file

    seen: set[int] = set()
    tensors = {}
    for name, tensor in weights.items():
        tensor = tensor.detach().to("cpu", dtype=dtype or tensor.dtype).contiguous()
        if tensor.untyped_storage().data_ptr() in seen:  # safetensors refuses tensors that share memory
            tensor = tensor.clone()
        seen.add(tensor.untyped_storage().data_ptr())
        tensors[name] = tensor
    path = Path(directory) / "model.safetensors"
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")  # not *.safetensors: no loader picks it up half-written
    save_file(tensors, str(partial), metadata={"format": "pt"})
    os.replace(partial, path)
    return path


def tied_partners(state: Mapping[str, Any]) -> dict[str, str]:
    """Each name in ``state`` whose tensor shares memory with an earlier name's (tied weights): that name."""
    first: dict[tuple[int, tuple[int, ...]], str] = {}
    partners = {}
    for name, tensor in state.items():
        key = (tensor.data_ptr(), tuple(tensor.shape))
        if key in first:
            partners[name] = first[key]
        first.setdefault(key, name)
    return partners


def checkpoint_shapes(model: str) -> dict[str, tuple[int, ...]] | None:
    """The tensor names and shapes in ``model``'s safetensors files (a directory, or a hub id already in
    the local cache), read from their headers; None where there are none to read."""
    directory = Path(model)
    if not directory.is_dir():
        try:
            from huggingface_hub import snapshot_download

            cached = snapshot_download(model, allow_patterns=["*.safetensors"], local_files_only=True)
            directory = Path(cached)
        except Exception:
            return None
    files = sorted(directory.glob("*.safetensors"))
    if not files:
        return None
    from safetensors import safe_open

    shapes = {}
    for file in files:
        with safe_open(str(file), framework="pt") as handle:
            for name in handle.keys():  # noqa: SIM118 - a safetensors handle is no dict
                shapes[name] = tuple(handle.get_slice(name).get_shape())
    return shapes


def checked_against_checkpoint(
    source: Any,
    checkpoint: Mapping[str, tuple[int, ...]] | None,
    tied_embeddings: bool,
    holder: str,
    model: str,
) -> dict[str, Any]:
    """``source``'s weights (see `checkpoint_weights`) as a vLLM engine loads them, checked before anything
    is loaded: what both vLLM generators' ``sync_weights`` do first.

    ``checkpoint``: the names and shapes of the checkpoint the engine serves (`checkpoint_shapes`; None:
    unknown, nothing to check against). ``tied_embeddings``: the engine ties its head to the input
    embeddings (so does a checkpoint without `TIED_HEAD`): the head is dropped, vLLM reads the embeddings
    for it, and a head that differs from them (untied in training) is refused rather than lost. ``holder``
    ("engine", "server") and ``model`` name what serves the weights in a refusal, a `ConfigError`."""
    weights = checkpoint_weights(source)
    tied = tied_embeddings or (checkpoint is not None and TIED_HEAD not in checkpoint)
    if tied and TIED_HEAD in weights:
        head = weights.pop(TIED_HEAD)
        embeddings = [t for t in weights.values() if t.shape == head.shape]  # vocab x hidden: one
        if len(embeddings) == 1 and not _same_values(head, embeddings[0]):
            raise ConfigError(
                f"sync_weights: the {holder}'s model ({model}) ties lm_head to the input embeddings, but "
                "this model's lm_head.weight differs from them (untied in training?). Train with tied "
                "embeddings, or serve a checkpoint saved with tie_word_embeddings=False."
            )
    if checkpoint is not None:
        optional = frozenset({TIED_HEAD}) if tied else frozenset()
        problem = weight_mismatches(weights, checkpoint, optional=optional)
        if problem:
            raise ConfigError(
                f"sync_weights: the weights do not fit the {holder}'s model ({model}): {problem} Nothing "
                f"was loaded; the {holder} keeps its weights."
            )
    return weights


def bounded(step: Callable[[], object], seconds: float, what: str, limit: float) -> str | None:
    """Run ``step`` in a thread for at most ``seconds``: None when it returned, else why not (its error, or
    that it outlasted ``limit``, the timeout as configured). A step that times out goes on in its thread:
    a load cannot be stopped halfway, so the caller treats what it was changing as undefined."""
    import torch

    failure: list[BaseException] = []
    device = torch.cuda.current_device() if torch.cuda.is_initialized() else None

    def run() -> None:
        try:
            if device is not None:  # a new thread starts on device 0
                torch.cuda.set_device(device)
            step()
        except BaseException as error:
            failure.append(error)

    thread = threading.Thread(target=run, name=f"gym_swe: {what}", daemon=True)
    thread.start()
    thread.join(max(0.0, seconds))
    if thread.is_alive():
        return f"{what} did not finish within the sync timeout ({limit:g} s)"
    if failure:
        return f"{what} failed: {type(failure[0]).__name__}: {failure[0]}"
    return None


def _same_values(a: Any, b: Any) -> bool:
    import torch

    return bool(a.data_ptr() == b.data_ptr() or torch.equal(a.to(b.device), b))
