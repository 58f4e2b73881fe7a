"""Orders over (thing, time) for the engine of many things, without a Python loop per thing.

Things are small integer codes. `group_order` puts records in thing order (a stable radix sort);
`TimeKeys` maps (thing, time) to one int64 that orders exactly like the pair, so that a sorted
column of many things' times can be sorted, merged and walked as one column.

    >>> keys = TimeKeys([np.array([1.5, 2.0, 7.0])], things=2)
    >>> a = keys.stored(np.array([0, 0, 1]), np.array([7.0, 1.5, 1.5]))
    >>> bool(a[1] < a[0] < a[2])
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from statestream.join.compiled import I8, kernel

_I8 = np.int64
_LOW_63 = np.int64(0x7FFF_FFFF_FFFF_FFFF)
_KEY_LIMIT = 1 << 62


def group_order(codes: np.ndarray) -> np.ndarray:
    """The stable order of `codes` (integers ≥ 0): by code, equal codes in index order.

    A radix sort on 16-bit digits (numpy sorts 16-bit integers by radix when asked for a stable
    sort), so it costs a few passes over the column whatever the number of things.
    """
    if len(codes) == 0:
        return np.empty(0, dtype=_I8)
    top = int(codes.max())
    if top <= 0xFFFF:
        return np.argsort(codes.astype(np.uint16), kind="stable")
    order = np.argsort((codes & 0xFFFF).astype(np.uint16), kind="stable")
    shift = 16
    while top >> shift:
        digit = ((codes[order] >> shift) & 0xFFFF).astype(np.uint16)
        order = order[np.argsort(digit, kind="stable")]
        shift += 16
    return order


@dataclass(frozen=True)
class Groups:
    """Records grouped by thing: `order` (stable), and per group its code, start and size."""

    order: np.ndarray
    codes: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray

    @classmethod
    def of(cls, codes: np.ndarray) -> Groups:
        codes = codes.astype(_I8, copy=False)
        if len(codes) and codes.min() >= 0 and codes.max() < 4 * len(codes) + 1024:  # counting
            return cls(*_counted_groups(codes))
        order = group_order(codes)
        grouped = codes.take(order)
        first = np.empty(len(grouped), dtype=bool)
        first[:1] = True
        np.not_equal(grouped[1:], grouped[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        sizes = np.diff(np.append(starts, len(grouped)))
        return cls(order, grouped[starts], starts, sizes)


@kernel(I8)
def _counted_groups(codes):
    """`Groups.of` by counting: codes ≥ 0, not many more distinct values than records."""
    counts = np.zeros(codes.max() + 1, np.int64)
    for c in codes:
        counts[c] += 1
    groups = 0
    for size in counts:
        groups += size > 0
    group_codes, starts = np.empty(groups, np.int64), np.empty(groups, np.int64)
    sizes, fill = np.empty(groups, np.int64), np.empty(len(counts), np.int64)
    g = at = 0
    for c in range(len(counts)):
        fill[c] = at
        if counts[c]:
            group_codes[g], starts[g], sizes[g] = c, at, counts[c]
            g += 1
            at += counts[c]
    order = np.empty(len(codes), np.int64)
    for i in range(len(codes)):
        c = codes[i]
        order[fill[c]] = i
        fill[c] += 1
    return order, group_codes, starts, sizes


def segment_bounds(things: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of each code's run in `things`, a column sorted by thing."""
    return np.searchsorted(things, codes, side="left"), np.searchsorted(things, codes, side="right")


def _ordered_bits(t: np.ndarray) -> np.ndarray:
    """An int64 per float that orders like the floats (-0.0 counted as 0.0; no NaN)."""
    bits = (t + 0.0).view(_I8)
    return np.where(bits < 0, bits ^ _LOW_63, bits)


class TimeKeys:
    """int64 keys ordered like (thing, time), for the times of one step.

    `times` are the finite times the step holds, and only those get keys (`stored`); each mode
    leaves room between and around them (even offsets, 0 and span − 1), so keys of two things
    never meet. The key is thing · span + an offset of the time: twice its
    distance from the smallest time when all times are whole numbers (epoch milliseconds), else
    its distance among the float64 bit patterns, else (times spread too far for either) twice its
    position among the step's distinct times.
    """

    def __init__(
        self, times: Sequence[np.ndarray], things: int, local: np.ndarray | None = None
    ) -> None:
        self.local = local  # maps the codes given to keys to 0 … things − 1, if not already
        finite = [t if np.isfinite(t).all() else t[np.isfinite(t)] for t in times]
        lows = [float(t.min()) for t in finite if len(t)]
        highs = [float(t.max()) for t in finite if len(t)]
        self.low, self.high = (min(lows), max(highs)) if lows else (0.0, 0.0)
        self._mode = "whole"
        self.span = 2 * int(self.high - self.low) + 3
        small = max(abs(self.low), abs(self.high)) < 2.0**51  # t ± 1 and 2 t exact
        whole = small and all(np.array_equal(np.floor(t), t) for t in finite)
        if not whole or max(things, 1) * self.span >= _KEY_LIMIT:
            self._mode = "bits"
            lo, hi = (int(b) for b in _ordered_bits(np.array([self.low, self.high])))
            self._lo = np.int64(lo)
            self.span = hi - lo + 3  # 1 … hi − lo + 1 for the times, 0 below, span − 1 above
        if max(things, 1) * self.span >= _KEY_LIMIT:
            self._mode = "unique"
            self._unique = np.unique(np.concatenate(finite)) if finite else np.empty(0)
            self.span = 2 * len(self._unique) + 1

    def stored(self, things: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Keys of times that were among those given (a shorter way to the same keys)."""
        return self.stored_local(things if self.local is None else self.local.take(things), t)

    def stored_local(self, local: np.ndarray, t: np.ndarray) -> np.ndarray:
        """`stored` for things given as their local index (0 … things − 1)."""
        base = np.multiply(local, np.int64(self.span), dtype=_I8)
        if self._mode == "whole":
            offset = t - self.low
            offset *= 2.0
            offset += 1.0
            base += offset.astype(_I8)
            return base
        if self._mode == "unique":
            return base + 2 * np.searchsorted(self._unique, t, side="left") + 1
        return base + (_ordered_bits(t) - (self._lo - 1))

    @property
    def sums_order(self) -> bool:
        """Whether two stored keys of one thing add up to an int64 that orders like (thing, the
        sum of their times): true for whole-number times (2 thing · span + 2 (t + u − 2 low) + 2,
        an offset below 2 span), not for the other modes."""
        return self._mode == "whole"

    def order_of_sums(self, things: np.ndarray, total: np.ndarray) -> np.ndarray:
        """The stable order by (thing, total) of sums of two stored times (things: 0 … n − 1)."""
        if self._mode == "whole":  # the sums are whole numbers too, 2 low … 2 high
            span = np.int64(2 * int(self.high - self.low) + 1)
            keys = things * span + (total - 2.0 * self.low).astype(_I8)
        else:
            keys = TimeKeys([total], int(things.max()) + 1).stored(things, total)
        return np.argsort(keys, kind="stable")
