"""`gym-swe view`'s token-level view: what the page carries of each episode's token sequence, and the
tokenizer that decodes it.

An episode's tokens travel as compact JSON (`token_data`), drawn by the page's script only when its token
view is opened: the ids, the runs of the loss mask that are 1, the sampling log-probabilities where the
backend gave them, where each turn starts, ends and why, and where each segment starts. The page decodes ids
with one table for the whole page (`vocabulary`), made here when a tokenizer is given (``--tokenizer PATH``,
a local folder: nothing is fetched); without one it shows the ids. A trajectory holds the sampled token's
log-probability only, not the distribution it was drawn from, so the view shows no entropy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gym_swe.errors import ConfigError, missing_dependency
from gym_swe.rollout.trajectory import Trajectory


def _runs(flags: Sequence[object]) -> list[list[int]]:
    """``[start, end)`` of each run of truthy entries (numpy: a run's episodes hold millions of ids)."""
    padded = np.concatenate(([False], np.asarray(flags, dtype=bool), [False]))
    edges = np.flatnonzero(padded[1:] != padded[:-1]).tolist()
    return [[edges[k], edges[k + 1]] for k in range(0, len(edges), 2)]


def token_data(trajectory: Trajectory) -> dict[str, Any] | None:
    """What the token view of ``trajectory`` draws, or None where it has no token ids (a chat generator's).

    ``ids``; ``mask``: ``[start, end)`` runs of loss mask 1; ``lp``: ``[start, [logprob, ...]]`` runs of the
    ids that have one (rounded to 3 places); ``turns``: ``[start, length, finish_reason, bridge_length]`` per
    model turn; ``segments``: where each segment after the first starts; ``prompt``: the first prompt's
    length."""
    if not trajectory.has_token_ids or not trajectory.token_ids:
        return None
    ids = trajectory.token_ids
    logprobs = list(trajectory.logprobs[: len(ids)])
    logprobs += [None] * (len(ids) - len(logprobs))
    lp: list[list[Any]] = [
        [start, np.round(np.asarray(logprobs[start:end], dtype=np.float64), 3).tolist()]
        for start, end in _runs([value is not None for value in logprobs])
    ]
    return {
        "ids": ids,
        "mask": _runs(trajectory.loss_mask[: len(ids)]),
        "lp": lp,
        "turns": [[t.start, t.length, t.finish_reason, t.bridge_length] for t in trajectory.turns],
        "segments": trajectory.segment_starts,
        "prompt": trajectory.prompt_length,
    }


def check_tokenizer_path(path: str | Path) -> Path:
    """``--tokenizer``: a local folder (a model's, or one holding tokenizer.json); a ConfigError at once
    otherwise, before anything loads."""
    folder = Path(path)
    if not folder.is_dir():
        reason = "is a file" if folder.exists() else "no such directory"
        raise ConfigError(
            f"--tokenizer {path}: {reason}; give a local folder holding the tokenizer (tokenizer.json or "
            "tokenizer_config.json, as a model's folder has): gym-swe view fetches nothing"
        )
    if not any(
        (folder / name).exists() for name in ("tokenizer.json", "tokenizer_config.json", "vocab.json")
    ):
        raise ConfigError(
            f"--tokenizer {path}: no tokenizer.json, tokenizer_config.json or vocab.json there; give the "
            "folder of the model the trajectories were sampled from"
        )
    return folder


def load_tokenizer(path: str | Path) -> Any:
    """The tokenizer in the local folder ``path``, loaded without any download: its tokenizer.json with the
    tokenizers library where it has one (quick: transformers is not imported), else with transformers."""
    folder = check_tokenizer_path(path)
    if (folder / "tokenizer.json").is_file():
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise missing_dependency("tokenizers", "train", "Decoding tokens (--tokenizer)") from None
        try:
            return Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as error:
            raise ConfigError(
                f"--tokenizer {path}: its tokenizer.json does not load ({_first_line(error)})"
            ) from None
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise missing_dependency("transformers", "train", "Decoding tokens (--tokenizer)") from None
    try:
        return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except Exception as error:
        raise ConfigError(
            f"--tokenizer {path}: transformers cannot load a tokenizer from it ({_first_line(error)})"
        ) from None


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


def _size(tokenizer: Any) -> int:
    """How many ids the tokenizer knows: a `tokenizers.Tokenizer`'s or a transformers tokenizer's."""
    if hasattr(tokenizer, "get_vocab_size"):
        return int(tokenizer.get_vocab_size(with_added_tokens=True))
    return len(tokenizer)


def _decode(tokenizer: Any, token_id: int) -> str:
    if hasattr(tokenizer, "get_vocab_size"):  # tokenizers' Tokenizer: no spaces cleaned up to begin with
        return str(tokenizer.decode([token_id], skip_special_tokens=False))
    return str(tokenizer.decode([token_id], skip_special_tokens=False, clean_up_tokenization_spaces=False))


def vocabulary(tokenizer: Any, ids: Iterable[int]) -> dict[str, str]:
    """Each of ``ids`` as its text (special tokens included), keyed by the id as a string (a JSON object's
    key). ``tokenizer``: `load_tokenizer`'s, or any transformers tokenizer. An id it does not know is left
    out: the page shows it as its number."""
    size = _size(tokenizer)
    table: dict[str, str] = {}
    for token_id in sorted(set(ids)):
        if not 0 <= token_id < size:
            continue
        try:
            table[str(token_id)] = _decode(tokenizer, token_id)
        except Exception:  # a tokenizer that cannot decode one id alone: shown as its number
            continue
    return table


def unknown_ids(tokenizer: Any, ids: Iterable[int]) -> int:
    """How many of ``ids`` lie outside the tokenizer's vocabulary (not 0: likely not the run's tokenizer)."""
    size = _size(tokenizer)
    return sum(1 for token_id in set(ids) if not 0 <= token_id < size)
