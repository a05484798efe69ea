"""The weights a trainer hands a generator: unwrapped from DDP and friends, named as Hugging Face checkpoints
name them, checked against what the generator serves, and written to disk where a reload needs a file.
Shared by every generator's ``sync_weights``."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
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
