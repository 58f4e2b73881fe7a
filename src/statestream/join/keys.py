"""Records split by side and grouped by thing for the engine of many things, without a Python
loop per thing.

Things are small integer codes. `Groups.of` puts records in thing order, stably (by counting,
or by `group_order`, a radix sort, for codes spread far), with each group's code, start and size.

    >>> groups = Groups.of(np.array([3, 1, 3, 1, 2]))
    >>> groups.order.tolist(), groups.codes.tolist(), groups.sizes.tolist()
    ([1, 3, 4, 0, 2], [1, 2, 3], [2, 1, 2])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import types

from statestream.join.compiled import I8, kernel, step

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


@step
def _groups_counted(counts, at, code_of_key):
    """The groups (codes, starts, sizes) of these counts by key (their codes `code_of_key`),
    starts from 0; turns each count into where its key's first record goes (from `at`)."""
    n = 0
    for size in counts:
        n += size > 0
    codes, starts, sizes = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    g, first = 0, at
    for key in range(len(counts)):
        size = counts[key]
        if size:
            codes[g], starts[g], sizes[g] = code_of_key[key], at - first, size
            g += 1
        counts[key] = at
        at += size
    return codes, starts, sizes


@kernel(I8)
def _counted_groups(codes):
    """`Groups.of` by counting: codes ≥ 0, not many more distinct values than records."""
    fill = np.zeros(codes.max() + 1, np.int64)  # counts, then where each code's next goes
    for c in codes:
        fill[c] += 1
    group_codes, starts, sizes = _groups_counted(fill, 0, np.arange(len(fill)))
    order = np.empty(len(codes), np.int64)
    for i in range(len(codes)):
        c = codes[i]
        order[fill[c]] = i
        fill[c] += 1
    return order, group_codes, starts, sizes


def sided_rows(
    things: np.ndarray,
    thing_of_name: np.ndarray,
    quantities: np.ndarray,
    side_of_name: np.ndarray,
    t: np.ndarray,
    v: np.ndarray,
    pos: np.ndarray | None,
) -> tuple[tuple[tuple[np.ndarray, ...], Groups], tuple[tuple[np.ndarray, ...], Groups]]:
    """One join spec's records of each side, from coded columns, grouped by thing, in one
    compiled pass.

    `things`, `quantities`: each record's name codes, which must index `thing_of_name` (the
    thing code, ≥ 0, of each thing name) and `side_of_name` (the side of each quantity name: 0
    left, 1 right, -1 neither); `CodedNames` checks its codes so, the kernel does not.
    Returns per side its columns (rows, thing, t, v, pos) and their `Groups`. The records are
    in thing order, each thing's in arrival order, so the groups' order is the identity: `rows`
    are the records' indices, `pos` their positions (the rows themselves if `pos` is None).

    >>> left, right = sided_rows(np.array([1, 0, 1, 0]), np.array([7, 9]), np.array([1, 1, 1, 0]),
    ...                          np.array([0, 1], np.int8), np.arange(4.0), np.ones(4), None)
    >>> (rows, thing, t, _, _), groups = right
    >>> rows.tolist(), thing.tolist(), t.tolist(), groups.codes.tolist(), groups.sizes.tolist()
    ([1, 0, 2], [7, 9, 9], [1.0, 0.0, 2.0], [7, 9], [1, 2])
    >>> left[0][0].tolist(), left[1].codes.tolist()
    ([3], [7])
    """
    no_pos = pos is None
    left, right, left_groups, right_groups = _sided(
        np.asarray(things, np.int32),
        np.asarray(thing_of_name, _I8),
        np.asarray(quantities, np.int32),
        np.asarray(side_of_name, np.int8),
        np.asarray(t, np.float64),
        np.asarray(v, np.float64),
        np.empty(0, _I8) if no_pos else np.asarray(pos, _I8),
        no_pos,
    )
    return (
        (left, Groups(np.arange(len(left[0]), dtype=_I8), *left_groups)),
        (right, Groups(np.arange(len(right[0]), dtype=_I8), *right_groups)),
    )


def _read_only(dtype: types.Type) -> types.Array:
    """A column the kernel only reads: writable ones pass too (Arrow's views are read-only)."""
    return types.Array(dtype, 1, "C", readonly=True)


_CODES, _SIDES = _read_only(types.int32), _read_only(types.int8)
_INTEGERS, _NUMBERS = _read_only(types.int64), _read_only(types.float64)


@step
def _fill_codes(thing, groups):
    """Each group's code in its records' places."""
    codes, starts, sizes = groups
    for g in range(len(codes)):
        thing[starts[g] : starts[g] + sizes[g]] = codes[g]


@step
def _counting_keys(thing_of_name, records):
    """What to count each name's records under, in thing order: its thing code, or, when the
    codes spread far beyond the records (a router that has seen many more things), its rank
    among the names by thing code; and the thing code of each key."""
    size = 0
    for code in thing_of_name:
        size = max(size, code + 1)
    if size <= 4 * records + 1024:
        return thing_of_name, np.arange(size)
    order = np.argsort(thing_of_name, kind="mergesort")
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return rank, thing_of_name[order]


@kernel(_CODES, _INTEGERS, _CODES, _SIDES, _NUMBERS, _NUMBERS, _INTEGERS, types.boolean)
def _sided(things, thing_of_name, quantities, side_of_name, t, v, pos, no_pos):
    """`sided_rows` by counting: each thing's records of each side, then where each thing's
    go (left before right, things in code order), then a copy of each record to its place (and
    the things' codes from their groups: one place to write fewer per record)."""
    key_of_name, code_of_key = _counting_keys(thing_of_name, len(quantities))
    fill = np.zeros((2, len(code_of_key)), np.int64)  # counts, then where each key's next goes
    for i in range(len(quantities)):
        side = side_of_name[quantities[i]]
        if side >= 0:
            fill[side, key_of_name[things[i]]] += 1
    n_left, n_right = fill[0].sum(), fill[1].sum()
    n = n_left + n_right
    groups = (
        _groups_counted(fill[0], 0, code_of_key),
        _groups_counted(fill[1], n_left, code_of_key),
    )
    rows, thing = np.empty(n, np.int64), np.empty(n, np.int64)
    times, values = np.empty(n, np.float64), np.empty(n, np.float64)
    positions = rows if no_pos else np.empty(n, np.int64)
    for i in range(len(quantities)):
        side = side_of_name[quantities[i]]
        if side < 0:
            continue
        key = key_of_name[things[i]]
        k = fill[side, key]
        fill[side, key] = k + 1
        rows[k], times[k], values[k] = i, t[i], v[i]
        if not no_pos:
            positions[k] = pos[i]
    _fill_codes(thing[:n_left], groups[0])
    _fill_codes(thing[n_left:], groups[1])
    left = rows[:n_left], thing[:n_left], times[:n_left], values[:n_left], positions[:n_left]
    right = rows[n_left:], thing[n_left:], times[n_left:], values[n_left:], positions[n_left:]
    return left, right, groups[0], groups[1]


def segment_bounds(things: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of each code's run in `things`, a column sorted by thing."""
    return np.searchsorted(things, codes, side="left"), np.searchsorted(things, codes, side="right")
