"""Records grouped by thing for the engine of many things, without a Python loop per thing.

Things are small integer codes. `Groups.of` puts records in thing order, stably (by counting,
or by `group_order`, a radix sort, for codes spread far), with each group's code, start and size.

    >>> groups = Groups.of(np.array([3, 1, 3, 1, 2]))
    >>> groups.order.tolist(), groups.codes.tolist(), groups.sizes.tolist()
    ([1, 3, 4, 0, 2], [1, 2, 3], [2, 1, 2])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from statestream.join.compiled import I8, kernel

_I8 = np.int64


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
