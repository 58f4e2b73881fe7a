"""Names (things, quantities) as small integer codes, given by name or already coded.

A caller with dictionary-encoded columns (an Arrow dictionary array, a pandas categorical) passes
`CodedNames`: the router then looks up each distinct name once, not each record's, and maps the
records' codes with one numpy gather.

    >>> codes = NameCodes()
    >>> codes(["m2", "m1", "m2"]).tolist()
    [0, 1, 0]
    >>> column = CodedNames(np.array([1, 1, 0, 2]), ["m1", "m2", "m3"])
    >>> codes.of(column).tolist()
    [0, 0, 1, 2]
    >>> codes.names
    ['m2', 'm1', 'm3']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

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


class NameCodes:
    """Small integer codes for hashable names, in order of first sight across calls.

    A plain dict looked up by `itemgetter` (a dict subclass with `__missing__` is slower to look
    up in); names not seen before are added when a lookup misses.
    """

    def __init__(self) -> None:
        self.codes: dict = {}
        self.names: list = []

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

    def _add(self, names: list) -> None:
        codes = self.codes
        new = [name for name in dict.fromkeys(names) if name not in codes]  # in order of sight
        codes.update(zip(new, range(len(self.names), len(self.names) + len(new)), strict=True))
        self.names += new
