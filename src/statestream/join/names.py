"""Names (things, quantities) as small integer codes, given by name or already coded.

A caller with dictionary-encoded columns (an Arrow dictionary array, a pandas categorical) passes
`CodedNames`: the router then looks up each distinct name once, not each record's, and maps the
records' codes with one numpy gather. A caller with strings as Arrow keeps them passes
`Utf8Names`: a compiled index of the names' bytes codes them (`name_index`), with no Python
string per record or per batch.

    >>> codes = NameCodes()
    >>> codes(["m2", "m1", "m2"]).tolist()
    [0, 1, 0]
    >>> column = CodedNames(np.array([1, 1, 0, 2]), ["m1", "m2", "m3"])
    >>> codes.of(column).tolist()
    [0, 0, 1, 2]
    >>> codes.names
    ['m2', 'm1', 'm3']
    >>> codes.of_utf8(Utf8Names.of(["m4", "m1"])).tolist()
    [3, 1]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from statestream.join.name_index import NameIndex

_I8 = np.int64


@dataclass(frozen=True)
class CodedNames:
    """A column of names as `codes` (integers ≥ 0, one per record) into `names` (distinct).

    From Arrow: `CodedNames(a.indices.to_numpy(), a.dictionary.to_pylist())` of
    `a = column.dictionary_encode()`; from pandas: `CodedNames(c.codes, c.categories)` of a
    categorical without missing values. `first_seen`: the names are in order of their first
    record and each has one (as `dictionary_encode` of the column itself gives them), so names
    new to a `NameCodes` are added in their order, without a search for their first records.
    """

    codes: np.ndarray
    names: Sequence
    first_seen: bool = False

    def __post_init__(self) -> None:
        codes = np.asarray(self.codes)
        if len(codes) and (codes.min() < 0 or codes.max() >= len(self.names)):
            raise ValueError(
                "each code must index `names` (0 … len(names) − 1); a missing name (an Arrow "
                "null, a pandas code of -1) has none: drop or name such records first"
            )

    def __len__(self) -> int:
        return len(self.codes)

    def take(self, index: np.ndarray) -> CodedNames:
        """The records at `index`, with the same names."""
        return CodedNames(np.asarray(self.codes).take(index), self.names)

    def decoded(self) -> np.ndarray:
        """The names of the records, as an object array."""
        return np.asarray(self.names, dtype=object).take(np.asarray(self.codes, dtype=_I8))


@dataclass(frozen=True)
class Utf8Names:
    """A column of names as UTF-8 bytes: record k's name is `data[starts[k]:ends[k]]`.

    From an Arrow string column without nulls, its offsets and data buffers (`arrow_utf8_names`
    in `statestream.spark`): no Python string is made. `Utf8Names.of` builds one from strings.
    """

    starts: np.ndarray
    ends: np.ndarray
    data: np.ndarray

    @classmethod
    def of(cls, names: Sequence[str]) -> Utf8Names:
        """The column of these strings."""
        encoded = [name.encode() for name in names]
        lengths = np.array([len(b) for b in encoded], dtype=_I8)
        ends = np.cumsum(lengths)
        return cls(ends - lengths, ends, np.frombuffer(b"".join(encoded), dtype=np.uint8))

    def __len__(self) -> int:
        return len(self.starts)

    def take(self, index: np.ndarray) -> Utf8Names:
        """The records at `index`."""
        return Utf8Names(np.take(self.starts, index), np.take(self.ends, index), self.data)

    def decoded(self) -> np.ndarray:
        """The names of the records, as an object array of strings."""
        starts, ends = np.asarray(self.starts, dtype=_I8), np.asarray(self.ends, dtype=_I8)
        names = decoded_names(
            np.asarray(self.data, dtype=np.uint8), starts, ends, np.arange(len(starts))
        )
        return np.array(names or [], dtype=object)


def decoded_names(
    data: np.ndarray, starts: np.ndarray, ends: np.ndarray, records: np.ndarray
) -> list:
    """The names of these records, as strings: an ASCII run of them is decoded at once and then
    sliced (a slice of a string is several times faster than decoding each name's bytes)."""
    if not len(records):
        return []
    first, last = starts.take(records), ends.take(records)
    lengths = last - first
    bounds = np.zeros(len(records) + 1, dtype=np.int64)
    np.cumsum(lengths, out=bounds[1:])
    gathered = data.take(np.arange(bounds[-1]) + np.repeat(first - bounds[:-1], lengths))
    if len(gathered) and gathered.max() >= 0x80:  # not ASCII: byte and character places differ
        return [
            data[s:e].tobytes().decode() for s, e in zip(first.tolist(), last.tolist(), strict=True)
        ]
    text = gathered.tobytes().decode("ascii")
    cuts = bounds.tolist()
    return [text[cuts[k] : cuts[k + 1]] for k in range(len(records))]


class NameCodes:
    """Small integer codes for hashable names, in order of first sight across calls.

    A plain dict looked up by `itemgetter` (a dict subclass with `__missing__` is slower to look
    up in); names not seen before are added when a lookup misses.
    """

    def __init__(self) -> None:
        self.codes: dict = {}
        self.names: list = []
        self._index: NameIndex | None = None  # `of_utf8`'s, made on its first call
        self._indexed = 0  # how many of `names` the index holds
        self._index_usable = sys.byteorder == "little"  # it reads bytes as little-endian words

    def __call__(self, names: list) -> np.ndarray:
        """The code of each name (a list), new names coded in order of first sight."""
        if not names:
            return np.empty(0, dtype=_I8)
        look_up = itemgetter(*names)
        try:
            found = look_up(self.codes)
        except KeyError:
            self._add(names)
            found = look_up(self.codes)
        if len(names) == 1:
            found = (found,)
        return np.fromiter(found, dtype=_I8, count=len(names))

    def of(self, column: CodedNames) -> np.ndarray:
        """The code of each record of a coded column, as `self(column.decoded().tolist())`
        gives them: each distinct name is looked up once, and where some are new, those that
        occur are added in order of their first record."""
        if len(column) == 0 or not len(column.names):
            return np.empty(0, dtype=_I8)
        return self.of_names(column).take(np.asarray(column.codes, dtype=_I8))

    def of_names(self, column: CodedNames) -> np.ndarray:
        """The code of each of a coded column's names (`of` is this taken by the records'
        codes): names new here that occur are added in order of their first record; a name
        that occurs in no record gets code 0 if it is new."""
        names = list(column.names)
        if not names:
            return np.empty(0, dtype=_I8)
        try:
            found = itemgetter(*names)(self.codes)
            return np.fromiter((found,) if len(names) == 1 else found, _I8, count=len(names))
        except KeyError:
            if column.first_seen:
                return self(names)
        records = np.asarray(column.codes, dtype=_I8)
        first = np.full(len(names), len(records), dtype=_I8)
        np.minimum.at(first, records, np.arange(len(records), dtype=_I8))
        used = np.flatnonzero(first < len(records))
        used = used.take(np.argsort(first.take(used), kind="stable"))
        mine = np.zeros(len(names), dtype=_I8)
        mine[used] = self([names[k] for k in used.tolist()])
        return mine

    def of_utf8(self, column: Utf8Names) -> np.ndarray:
        """The code of each record of a UTF-8 column, as `self(column.decoded().tolist())`
        gives them, from a compiled index of the names' bytes: new names are decoded, nothing
        else. The index follows names added by the other calls; if one of those is not a
        string (or on a big-endian machine), the names are decoded instead."""
        if not len(column):
            return np.empty(0, dtype=_I8)
        index = self._index_of_names()
        if index is None:
            return self(column.decoded().tolist())
        try:
            codes, new = index.codes(column)
        except BaseException:  # the index may hold names this table does not: build it anew
            self._index, self._indexed = None, 0
            raise
        self.codes.update(zip(new, range(len(self.names), len(self.names) + len(new)), strict=True))
        self.names += new
        self._indexed = len(self.names)
        return codes

    def _index_of_names(self) -> NameIndex | None:
        """The index, holding every name so far; None if a name is not a string (it has no
        bytes) or the machine is big-endian."""
        pending = self.names[self._indexed :]
        if pending and not all(isinstance(name, str) for name in pending):
            self._index_usable = False
        if not self._index_usable:
            return None
        if self._index is None:
            from statestream.join.name_index import NameIndex  # compiled: imported when used

            self._index = NameIndex()
        if pending:
            self._index.codes(Utf8Names.of(pending))
            self._indexed = len(self.names)
        return self._index

    def _add(self, names: list) -> None:
        codes = self.codes
        new = [name for name in dict.fromkeys(names) if name not in codes]  # in order of sight
        codes.update(zip(new, range(len(self.names), len(self.names) + len(new)), strict=True))
        self.names += new
