"""One series of many things as columns: the `SeriesState` of every thing of one join spec.

The released tails of all things are one set of columns sorted by (thing, release order), the
pending records one set sorted by (thing, time, arrival); the watermark's inputs are arrays
indexed by the thing's code. A thing's `SeriesState` is a slice of them (`state`), and one can
be put in (`insert`), so each thing's state can still be stored and restored on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from statestream.join.keys import segment_bounds
from statestream.join.series import SeriesState

_F8 = np.float64
_I8 = np.int64


@dataclass(frozen=True)
class Rows:
    """Records of many things as columns: thing code, time, value, position."""

    thing: np.ndarray
    t: np.ndarray
    v: np.ndarray
    pos: np.ndarray

    @classmethod
    def empty(cls) -> Rows:
        return cls(np.empty(0, _I8), np.empty(0, _F8), np.empty(0, _F8), np.empty(0, _I8))

    def __len__(self) -> int:
        return len(self.t)

    def take(self, index: np.ndarray) -> Rows:
        """The rows at `index` (positions, or a mask: turned into positions once, which is
        faster than indexing four columns with a mask; and `take`, faster than `[index]`)."""
        if index.dtype == bool:
            index = np.flatnonzero(index)
        return Rows(
            self.thing.take(index), self.t.take(index), self.v.take(index), self.pos.take(index)
        )

    @classmethod
    def concat(cls, parts: Sequence[Rows]) -> Rows:
        parts = [p for p in parts if len(p)]
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return cls.empty()
        return cls(
            *(np.concatenate([getattr(p, f) for p in parts]) for f in ("thing", "t", "v", "pos"))
        )

    def merged(self, other: Rows) -> Rows:
        """Both sets of rows in thing order; within a thing, this set's rows first."""
        return self.merged_from(other)[0]

    def merged_from(self, other: Rows) -> tuple[Rows, np.ndarray]:
        """`merged` for two sets already in thing order, and which of its rows are `other`'s
        (a mask).

        A stable sort of the two sorted runs of thing codes is a merge (numpy's timsort finds
        the runs): faster than placing each row by its thing's counts, scattering the columns.
        """
        if len(other) == 0:
            return self, np.zeros(len(self), dtype=bool)
        if len(self) == 0:
            return other, np.ones(len(other), dtype=bool)
        thing = np.concatenate((self.thing, other.thing))
        order = np.argsort(thing, kind="stable")
        columns = [thing.take(order)]
        for name in ("t", "v", "pos"):
            columns.append(np.concatenate((getattr(self, name), getattr(other, name))).take(order))
        return Rows(*columns), order >= len(self)


def _grow(array: np.ndarray, size: int, fill: float | bool) -> np.ndarray:
    if len(array) >= size:
        return array
    grown = np.full(max(size, 2 * len(array)), fill, dtype=array.dtype)
    grown[: len(array)] = array
    return grown


@dataclass
class SeriesTable:
    """The state of one series for many things; per-thing arrays are indexed by thing code."""

    tail: Rows = field(default_factory=Rows.empty)  # sorted by (thing, release order)
    pending: Rows = field(default_factory=Rows.empty)  # sorted by (thing, time, arrival)
    head_prev_t: np.ndarray = field(default_factory=lambda: np.empty(0, _F8))
    n_released: np.ndarray = field(default_factory=lambda: np.empty(0, _I8))
    max_t: np.ndarray = field(default_factory=lambda: np.empty(0, _F8))
    finished: np.ndarray = field(default_factory=lambda: np.empty(0, bool))

    def reserve(self, things: int) -> None:
        """Make room for thing codes below `things`."""
        self.head_prev_t = _grow(self.head_prev_t, things, -np.inf)
        self.n_released = _grow(self.n_released, things, 0)
        self.max_t = _grow(self.max_t, things, -np.inf)
        self.finished = _grow(self.finished, things, False)

    @property
    def size(self) -> int:
        return len(self.tail) + len(self.pending)

    def watermark(self, codes: np.ndarray, disorder_ms: float) -> np.ndarray:
        """Per thing: the largest time seen minus the disorder; +inf once finished."""
        return np.where(self.finished[codes], np.inf, self.max_t[codes] - disorder_ms)

    def watermark_of(self, things: np.ndarray, disorder_ms: float) -> np.ndarray:
        """`watermark` of each row's thing: computed per thing, then looked up once per row."""
        if len(things) < len(self.max_t):
            return self.watermark(things, disorder_ms)
        return np.where(self.finished, np.inf, self.max_t - disorder_ms).take(things)

    def split(self, touched: np.ndarray) -> SeriesTable:
        """Keep only the rows of the things marked in `touched` (a mask by code); return the
        others as a table that shares the per-thing arrays, for `join` to put back."""
        parts = []
        for rows in (self.tail, self.pending):
            mine = touched.take(rows.thing)
            if mine.all():
                parts.append((rows, Rows.empty()))
            else:
                parts.append((rows.take(mine), rows.take(~mine)))
        (self.tail, rest_tail), (self.pending, rest_pending) = parts[0], parts[1]
        return SeriesTable(
            rest_tail, rest_pending, self.head_prev_t, self.n_released, self.max_t, self.finished
        )

    def join(self, rest: SeriesTable) -> None:
        """Put back the rows `split` moved out."""
        self.tail = rest.tail.merged(self.tail)
        self.pending = rest.pending.merged(self.pending)

    def state(self, code: int) -> SeriesState:
        """The `SeriesState` of one thing (copies)."""
        (a, b), (c, d) = (
            segment_bounds(r.thing, np.array([code])) for r in (self.tail, self.pending)
        )
        tail, pend = self.tail, self.pending
        return SeriesState(
            t=tail.t[a[0] : b[0]].copy(),
            v=tail.v[a[0] : b[0]].copy(),
            pos=tail.pos[a[0] : b[0]].copy(),
            head_prev_t=float(self.head_prev_t[code]),
            n_released=int(self.n_released[code]),
            pend_t=pend.t[c[0] : d[0]].copy(),
            pend_v=pend.v[c[0] : d[0]].copy(),
            pend_pos=pend.pos[c[0] : d[0]].copy(),
            max_t=float(self.max_t[code]),
            finished=bool(self.finished[code]),
        )

    def insert(self, codes: Sequence[int], states: Sequence[SeriesState]) -> None:
        """Put in the states of things that have no rows here yet."""
        if not len(codes):
            return
        by_code = np.argsort(codes, kind="stable")
        index = np.asarray(codes, dtype=_I8)[by_code]
        states = [states[k] for k in by_code]
        self.head_prev_t[index] = [s.head_prev_t for s in states]
        self.n_released[index] = [s.n_released for s in states]
        self.max_t[index] = [s.max_t for s in states]
        self.finished[index] = [s.finished for s in states]
        for attr, prefix in (("tail", ""), ("pending", "pend_")):
            sizes = [len(getattr(s, prefix + "t")) for s in states]
            if not sum(sizes):
                continue
            added = Rows(
                np.repeat(index, sizes),
                *(
                    np.concatenate([getattr(s, prefix + name) for s in states]).astype(dtype)
                    for name, dtype in (("t", _F8), ("v", _F8), ("pos", _I8))
                ),
            )
            setattr(self, attr, getattr(self, attr).merged(added))

    def remove(self, touched: np.ndarray) -> None:
        """Drop the rows of the things marked in `touched` (a mask by code)."""
        self.tail = self.tail.take(~touched[self.tail.thing])
        self.pending = self.pending.take(~touched[self.pending.thing])
