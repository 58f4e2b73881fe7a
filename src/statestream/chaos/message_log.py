"""`MessageLog`: what a chaos run's simulators published, kept compressed, so that an hour at
thousands of messages a second holds a fraction of its raw size in the runner's memory.

Messages are appended to an open chunk; every `CHUNK` messages the chunk is pickled and
compressed (zlib, its fastest level) and kept as bytes. Reading goes through the chunks in order,
one decompressed at a time. One thread appends; others may read `len()` meanwhile (a count,
for progress), and iterate once the appending has stopped.
"""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Iterator, Sequence
from typing import Generic, TypeAlias, TypeVar

CHUNK = 10_000
T = TypeVar("T")


class MessageLog(Generic[T]):
    """An append-only, compressed list of messages.

    >>> log = MessageLog[bytes](chunk=2)
    >>> for message in (b"a", b"b", b"c"):
    ...     log.append(message)
    >>> len(log), list(log)
    (3, [b'a', b'b', b'c'])
    """

    def __init__(self, chunk: int = CHUNK) -> None:
        self._chunk = chunk
        self._sealed: list[bytes] = []
        self._sealed_count = 0
        self._open: list[T] = []

    def append(self, message: T) -> None:
        self._open.append(message)
        if len(self._open) >= self._chunk:
            self._seal()

    def __len__(self) -> int:
        return self._sealed_count + len(self._open)

    def __iter__(self) -> Iterator[T]:
        for sealed in list(self._sealed):
            yield from pickle.loads(zlib.decompress(sealed))
        yield from list(self._open)

    @property
    def stored_bytes(self) -> int:
        """The compressed chunks' size (the open chunk not counted)."""
        return sum(len(sealed) for sealed in self._sealed)

    def _seal(self) -> None:
        messages, self._open = self._open, []
        self._sealed.append(zlib.compress(pickle.dumps(messages, pickle.HIGHEST_PROTOCOL), 1))
        self._sealed_count += len(messages)


Messages: TypeAlias = "Sequence[T] | MessageLog[T]"  # what the checks take: either kind
