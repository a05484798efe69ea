"""Where a model comes from, a local directory or a Hugging Face id: the name checked before anything loads,
and a load that fails said in one line. Shared by the trainer, ``gym-swe eval`` and the ``hf`` generator."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gym_swe.errors import ConfigError, GymSweError

HUB_ID = re.compile(r"(?:[A-Za-z0-9][\w.-]*/)?[A-Za-z0-9][\w.-]*")
"""A Hugging Face model id: "owner/name" (or a bare legacy "name" such as "gpt2"), never a path."""


def check_model_name(option: str, value: str | Path | None) -> None:
    """A model or tokenizer given by name must be an existing path or look like a Hugging Face id: anything
    else (``/no/such/dir``, ``./model``, ``runs/x/model``) is a missing directory, said in one line, where
    transformers would print a traceback about a malformed repo id."""
    if value and not Path(value).expanduser().exists() and not HUB_ID.fullmatch(str(value)):
        raise ConfigError(
            f"{option} {str(value)!r}: no such directory; give a local model directory or a Hugging Face "
            "model id (e.g. Qwen/Qwen2.5-0.5B-Instruct)"
        )


@contextmanager
def loading(option: str, name: str | Path) -> Iterator[None]:
    """Turns transformers' way of saying that a model or tokenizer is not there (not on disk, not on the hub,
    or the hub out of reach) into one ConfigError line: the run cannot start as given."""
    try:
        yield
    except GymSweError:
        raise
    except (OSError, ValueError) as error:
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise ConfigError(f"{option} {str(name)!r} could not be loaded: {first_line}") from None
