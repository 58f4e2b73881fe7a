"""`codec`'s bytes of many things at once, written from and read into a `ThingsJoin`'s columns.

A stateful call of a pipeline stores each thing's engine states on their own (one value per
thing), so exporting them engine by engine and restoring them one by one cost a Python call
per thing and series: most of a small batch's call. `exported` writes every thing's
`export_state` bytes from the tables in one compiled pass; `restored` reads many things' bytes
into rows and per-thing values in one pass. The layout is `codec`'s, byte for byte.

    >>> from statestream.join import ComplementJoin, JoinSpec, export_state
    >>> from statestream.join.things import ThingsJoin
    >>> spec = JoinSpec("L", "R", "out")
    >>> join = ThingsJoin(spec)
    >>> join.insert([3], [ComplementJoin(spec)])
    >>> exported(join.left, join.right, np.array([3])) == [export_state(join.engine(3))]
    True
"""

from __future__ import annotations

import numpy as np
from numba import types

from statestream.join.codec import _HEADER_FIELDS, FORMAT_VERSION
from statestream.join.compiled import F8, I8, kernel, step
from statestream.join.keys import segment_bounds
from statestream.join.table import SeriesColumns

_B1 = types.boolean[:]
# the stored bytes, read in place (numpy's view of bytes is read-only)
_WORDS, _WORDS_INT = (types.Array(t, 1, "C", readonly=True) for t in (types.float64, types.int64))
_WORD = 8  # every field of the layout is a float64 or an int64


def exported(left, right, codes: np.ndarray) -> list[bytes]:
    """`export_state` of each thing's engine (`codes`, `SeriesTable`s `left` and `right`)."""
    codes = np.asarray(codes, dtype=np.int64)
    if not len(codes):
        return []
    bounds = [_bounds(table, codes) for table in (left, right)]
    words = [_HEADER_FIELDS + 3 * (tb - ta + pb - pa) for ta, tb, pa, pb in bounds]
    size = words[0] + words[1]
    ends = np.cumsum(size)
    starts = ends - size
    out = np.empty(int(ends[-1]), dtype=np.float64)
    for table, at, (ta, tb, pa, pb) in zip(
        (left, right), (starts, starts + words[0]), bounds, strict=True
    ):
        tail, pend = table.tail, table.pending
        _series_written(
            out, out.view(np.int64), at, codes, tail.t, tail.v, tail.pos, ta, tb,
            pend.t, pend.v, pend.pos, pa, pb,
            table.head_prev_t, table.n_released, table.max_t, table.finished,
        )  # fmt: skip
    data = out.tobytes()
    spans = zip((starts * _WORD).tolist(), (ends * _WORD).tolist(), strict=True)
    return [data[start:end] for start, end in spans]


def _bounds(table, codes: np.ndarray) -> tuple[np.ndarray, ...]:
    ta, tb = segment_bounds(table.tail.thing, codes)
    pa, pb = segment_bounds(table.pending.thing, codes)
    return ta, tb, pa, pb


@kernel(F8, I8, I8, I8, F8, F8, I8, I8, I8, F8, F8, I8, I8, I8, F8, I8, F8, _B1)
def _series_written(
    out, out_int, at, codes, tail_t, tail_v, tail_pos, ta, tb, pend_t, pend_v, pend_pos, pa, pb,
    head_prev_t, n_released, max_t, finished,
):  # fmt: skip
    """One series of each thing `codes[k]` in `codec`'s layout, from word `at[k]` of `out`
    (`out_int`: the same memory, for the positions)."""
    for k in range(len(codes)):
        c, o = codes[k], at[k]
        out[o], out[o + 1], out[o + 2] = FORMAT_VERSION, head_prev_t[c], float(n_released[c])
        out[o + 3], out[o + 4] = max_t[c], 1.0 if finished[c] else 0.0
        out[o + 5], out[o + 6] = float(tb[k] - ta[k]), float(pb[k] - pa[k])
        o += _HEADER_FIELDS
        for t, v, pos, a, b in ((tail_t, tail_v, tail_pos, ta[k], tb[k]),
                                (pend_t, pend_v, pend_pos, pa[k], pb[k])):  # fmt: skip
            n = b - a
            out[o : o + n] = t[a:b]
            out[o + n : o + 2 * n] = v[a:b]
            out_int[o + 2 * n : o + 3 * n] = pos[a:b]
            o += 3 * n


def restored(codes: np.ndarray, states: list[bytes]) -> tuple[SeriesColumns, SeriesColumns] | None:
    """Each thing's `export_state` bytes (`codes` sorted) as the columns of its two series; None
    if any is not in the layout (`codec.restore_state` then says why)."""
    sizes = np.fromiter((len(s) for s in states), dtype=np.int64, count=len(states))
    if (sizes % _WORD).any():
        return None
    ends = np.cumsum(sizes // _WORD)
    starts = ends - sizes // _WORD
    words = np.frombuffer(b"".join(states), dtype=np.float64)
    counts = _counted(words, starts, ends)
    if counts[0] < 0:
        return None
    return _read(words, codes, starts, counts)


@step
def _lengths(words, o, end):
    """The tail and pending lengths of the series at word `o`, or -1, -1 if its header is not
    in the layout before `end`."""
    if o + _HEADER_FIELDS > end or words[o] != FORMAT_VERSION:
        return -1, -1
    n_tail, n_pend = words[o + 5], words[o + 6]
    if not (0 <= n_tail <= end and 0 <= n_pend <= end):
        return -1, -1
    if n_tail != int(n_tail) or n_pend != int(n_pend):
        return -1, -1
    return int(n_tail), int(n_pend)


@kernel(_WORDS, I8, I8)
def _counted(words, starts, ends):
    """The rows of all tails and pendings (left, then right), or -1 first if a state is not
    two series in the layout that fill it exactly."""
    counts = np.zeros(4, np.int64)
    for k in range(len(starts)):
        o = starts[k]
        for side in range(2):
            n_tail, n_pend = _lengths(words, o, ends[k])
            if n_tail < 0:
                counts[0] = -1
                return counts
            counts[2 * side] += n_tail
            counts[2 * side + 1] += n_pend
            o += _HEADER_FIELDS + 3 * (n_tail + n_pend)
        if o != ends[k]:
            counts[0] = -1
            return counts
    return counts


def _read(words, codes, starts, counts) -> tuple[SeriesColumns, SeriesColumns]:
    n = len(codes)
    sides = []
    for side in range(2):
        scalars = (np.empty(n), np.empty(n, np.int64), np.empty(n), np.empty(n, np.bool_))
        rows = [_rows(int(counts[2 * side + part])) for part in range(2)]
        sides.append((scalars, rows))
    (l_scalars, l_rows), (r_scalars, r_rows) = sides
    _fill(words, words.view(np.int64), np.asarray(codes, np.int64), starts,
          *l_scalars, *l_rows[0], *l_rows[1], *r_scalars, *r_rows[0], *r_rows[1])  # fmt: skip
    return SeriesColumns(*l_scalars, *l_rows), SeriesColumns(*r_scalars, *r_rows)


def _rows(n: int) -> tuple[np.ndarray, ...]:
    return np.empty(n, np.int64), np.empty(n), np.empty(n), np.empty(n, np.int64)


_SIDE = (F8, I8, F8, _B1, I8, F8, F8, I8, I8, F8, F8, I8)  # scalars, tail rows, pending rows


@kernel(_WORDS, _WORDS_INT, I8, I8, *_SIDE, *_SIDE)
def _fill(
    words, words_int, codes, starts,
    l_head, l_released, l_max, l_finished, lt_thing, lt_t, lt_v, lt_pos,
    lp_thing, lp_t, lp_v, lp_pos,
    r_head, r_released, r_max, r_finished, rt_thing, rt_t, rt_v, rt_pos,
    rp_thing, rp_t, rp_v, rp_pos,
):  # fmt: skip
    """The states (checked by `_counted`) into the columns of their two series."""
    at = np.zeros(4, np.int64)  # next row of each: left tail, left pending, right ...
    for k in range(len(codes)):
        o = starts[k]
        for side in range(2):
            if side == 0:
                head, released, top, done = l_head, l_released, l_max, l_finished
                tail, pend = (lt_thing, lt_t, lt_v, lt_pos), (lp_thing, lp_t, lp_v, lp_pos)
            else:
                head, released, top, done = r_head, r_released, r_max, r_finished
                tail, pend = (rt_thing, rt_t, rt_v, rt_pos), (rp_thing, rp_t, rp_v, rp_pos)
            head[k], released[k], top[k] = words[o + 1], int(words[o + 2]), words[o + 3]
            done[k] = words[o + 4] != 0.0
            lengths = (int(words[o + 5]), int(words[o + 6]))
            o += _HEADER_FIELDS
            for part in range(2):
                rows = tail if part == 0 else pend
                n, r = lengths[part], at[2 * side + part]
                rows[0][r : r + n] = codes[k]
                rows[1][r : r + n] = words[o : o + n]
                rows[2][r : r + n] = words[o + n : o + 2 * n]
                rows[3][r : r + n] = words_int[o + 2 * n : o + 3 * n]
                at[2 * side + part] = r + n
                o += 3 * n
