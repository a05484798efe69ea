"""The observation and action space of the envs: text that can hold real code, in any script.

Also how `CodeText` travels through the shared memory of gymnasium's `AsyncVectorEnv` (its default). The
`Text` functions gymnasium registers store one charset index per character, which any-Unicode text has
no index for, and read the buffer once, when the vector env is made, into strings that never change. The
functions registered here for `CodeText` store UTF-8 with a length header, and read it back as a live view
(`SharedTexts`) that decodes the buffer each time it is read, like the numpy views gymnasium gives for
`Box` spaces.
"""

from __future__ import annotations

import multiprocessing
import string
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any, overload

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

# Sampling draws from these; membership accepts any Unicode text (tool output and code are not ASCII-only).
SAMPLE_CHARSET = string.printable + "éèàüößçñ→←✓✗…“”‘’€£¥λπΣ中文日本語한국어"

HEADER_BYTES = 8  # each slot opens with the byte length of its text, little-endian
BYTES_PER_CHAR = 4  # the most UTF-8 takes for one character (a lone surrogate takes 3)


class CodeText(spaces.Text):
    """``spaces.Text`` for code and tool output: every string up to ``max_length`` characters is a member.

    Gymnasium's Text checks each character against a charset; a charset of all of Unicode is too large to
    hold, and a smaller one would reject real programs and their output. Samples still come from a charset
    of printable ASCII, whitespace and some common non-ASCII letters and symbols.
    """

    def __init__(self, max_length: int, min_length: int = 0, seed: Any = None) -> None:
        super().__init__(max_length=max_length, min_length=min_length, charset=SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    @property
    def is_np_flattenable(self) -> bool:
        return False  # flattening maps characters to charset indices, which any-Unicode text lacks

    def __repr__(self) -> str:
        return f"CodeText({self.min_length}, {self.max_length})"


def _slot_bytes(space: CodeText) -> int:
    return HEADER_BYTES + BYTES_PER_CHAR * space.max_length


def _encode(text: str) -> bytes:
    # surrogatepass: a lone surrogate (which a str may hold) survives the round trip instead of raising
    return text.encode("utf-8", errors="surrogatepass")


class SharedTexts(Sequence[str]):
    """The texts of a vector env's sub-envs, read from its shared memory each time they are indexed.

    ``AsyncVectorEnv`` hands this out as its observations when ``copy=False``; with ``copy=True`` (the
    default) it deep-copies it, which gives a plain tuple of str.
    """

    def __init__(self, space: CodeText, buffer: Any, n: int) -> None:
        self.space, self.buffer, self.n = space, buffer, n

    def __len__(self) -> int:
        return self.n

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(self.n)))
        if not -self.n <= index < self.n:
            raise IndexError(f"sub-env index {index} out of range for {self.n} envs")
        index %= self.n
        data = np.frombuffer(self.buffer.get_obj(), dtype=np.uint8)
        start = index * _slot_bytes(self.space)
        size = int.from_bytes(data[start : start + HEADER_BYTES].tobytes(), "little")
        body = data[start + HEADER_BYTES : start + HEADER_BYTES + size].tobytes()
        return body.decode("utf-8", errors="surrogatepass")

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(self.n))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return id(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __copy__(self) -> tuple[str, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


@create_shared_memory.register(CodeText)
def _create_code_text_shared_memory(space: CodeText, n: int = 1, ctx: ModuleType = multiprocessing) -> Any:
    return ctx.Array("B", n * _slot_bytes(space))


@read_from_shared_memory.register(CodeText)
def _read_code_text_from_shared_memory(space: CodeText, shared_memory: Any, n: int = 1) -> SharedTexts:
    return SharedTexts(space, shared_memory, n)


@write_to_shared_memory.register(CodeText)
def _write_code_text_to_shared_memory(space: CodeText, index: int, value: str, shared_memory: Any) -> None:
    if not space.contains(value):
        raise ValueError(
            f"write_to_shared_memory: expected a str of at most {space.max_length} characters for {space}, "
            f"got {type(value).__name__}" + (f" of {len(value)}" if isinstance(value, str) else "")
        )
    body = _encode(value)
    slot = _slot_bytes(space)
    data = np.frombuffer(shared_memory.get_obj(), dtype=np.uint8)
    start = index * slot
    data[start : start + HEADER_BYTES] = np.frombuffer(len(body).to_bytes(HEADER_BYTES, "little"), np.uint8)
    data[start + HEADER_BYTES : start + HEADER_BYTES + len(body)] = np.frombuffer(body, np.uint8)


__all__ = ["CodeText", "SharedTexts"]
