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

from statestream.join.compiled import F8, I8, kernel
from statestream.join.keys import segment_bounds
from statestream.join.series import SeriesState

_F8 = np.float64
_I8 = np.int64
_COLUMN_TYPES = (("thing", _I8), ("t", _F8), ("v", _F8), ("pos", _I8))
_SCALARS = (("head_prev_t", _F8), ("n_released", _I8), ("max_t", _F8), ("finished", bool))


@dataclass(frozen=True)
class Rows:
    """Records of many things as columns: thing code, time, value, position (int64, float64,
    float64, int64: the compiled loops take these types; others are converted)."""

    thing: np.ndarray
    t: np.ndarray
    v: np.ndarray
    pos: np.ndarray

    def __post_init__(self) -> None:
        for name, dtype in _COLUMN_TYPES:
            column = getattr(self, name)
            if column.dtype != dtype:
                object.__setattr__(self, name, column.astype(dtype))

    @classmethod
    def empty(cls) -> Rows:
        return cls(np.empty(0, _I8), np.empty(0, _F8), np.empty(0, _F8), np.empty(0, _I8))

    def __len__(self) -> int:
        return len(self.t)

    def take(self, index: np.ndarray) -> Rows:
        """The rows at `index` (positions, or a mask): the four columns gathered in one pass."""
        if index.dtype == bool:
            index = np.flatnonzero(index)
        return Rows(*_taken(*self.columns, index.astype(_I8, copy=False)))

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
        (a mask): one compiled pass over both."""
        if len(other) == 0:
            return self, np.zeros(len(self), dtype=bool)
        if len(self) == 0:
            return other, np.ones(len(other), dtype=bool)
        *columns, theirs = _merged_by_thing(*self.columns, *other.columns)
        return Rows(*columns), theirs

    @property
    def columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return self.thing, self.t, self.v, self.pos


def _grow(array: np.ndarray, size: int, fill: float | bool) -> np.ndarray:
    if len(array) >= size:
        return array
    grown = np.full(max(size, 2 * len(array)), fill, dtype=array.dtype)
    grown[: len(array)] = array
    return grown


@dataclass(frozen=True)
class SeriesColumns:
    """One series of some things: per thing (in a given order) its head_prev_t, n_released,
    max_t and finished; its tail and pending rows (thing code, t, v, pos), by thing."""

    head_prev_t: np.ndarray
    n_released: np.ndarray
    max_t: np.ndarray
    finished: np.ndarray
    tail: tuple[np.ndarray, ...]
    pending: tuple[np.ndarray, ...]


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
        rows = []
        for prefix in ("", "pend_"):
            sizes = [len(getattr(s, prefix + "t")) for s in states]
            rows.append(
                (
                    np.repeat(index, sizes),
                    *(
                        np.concatenate([getattr(s, prefix + name) for s in states]).astype(dtype)
                        for name, dtype in (("t", _F8), ("v", _F8), ("pos", _I8))
                    ),
                )
            )
        scalars = {
            name: np.array([getattr(s, name) for s in states], dtype=dtype)
            for name, dtype in _SCALARS
        }
        tail, pending = rows
        self.insert_columns(index, SeriesColumns(**scalars, tail=tail, pending=pending))

    def insert_columns(self, index: np.ndarray, columns: SeriesColumns) -> None:
        """Put in things without rows here (`index`, sorted) from `columns` (theirs, in order)."""
        self.head_prev_t[index] = columns.head_prev_t
        self.n_released[index] = columns.n_released
        self.max_t[index] = columns.max_t
        self.finished[index] = columns.finished
        for attr, rows in (("tail", columns.tail), ("pending", columns.pending)):
            if len(rows[0]):
                setattr(self, attr, getattr(self, attr).merged(Rows(*rows)))

    def remove(self, touched: np.ndarray) -> None:
        """Drop the rows of the things marked in `touched` (a mask by code)."""
        self.tail = self.tail.take(~touched[self.tail.thing])
        self.pending = self.pending.take(~touched[self.pending.thing])


@kernel(I8, F8, F8, I8, I8)
def _taken(thing, t, v, pos, index):
    """The four columns at `index`."""
    n = len(index)
    out_thing, out_t = np.empty(n, np.int64), np.empty(n, np.float64)
    out_v, out_pos = np.empty(n, np.float64), np.empty(n, np.int64)
    for k in range(n):
        i = index[k]
        out_thing[k], out_t[k], out_v[k], out_pos[k] = thing[i], t[i], v[i], pos[i]
    return out_thing, out_t, out_v, out_pos


@kernel(I8, F8, F8, I8, I8, F8, F8, I8)
def _merged_by_thing(a_thing, a_t, a_v, a_pos, b_thing, b_t, b_v, b_pos):
    """The rows of a and b (each sorted by thing) sorted by thing, a's first within a thing,
    and which are b's."""
    na, nb = len(a_thing), len(b_thing)
    n = na + nb
    thing, pos = np.empty(n, np.int64), np.empty(n, np.int64)
    t, v = np.empty(n, np.float64), np.empty(n, np.float64)
    theirs = np.empty(n, np.bool_)
    i = j = 0
    for k in range(n):
        if j == nb or (i < na and a_thing[i] <= b_thing[j]):
            thing[k], t[k], v[k], pos[k], theirs[k] = a_thing[i], a_t[i], a_v[i], a_pos[i], False
            i += 1
        else:
            thing[k], t[k], v[k], pos[k], theirs[k] = b_thing[j], b_t[j], b_v[j], b_pos[j], True
            j += 1
    return thing, t, v, pos, theirs
