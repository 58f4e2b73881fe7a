"""One step of every thing of a `ThingsJoin` in one compiled pass over their rows and records.

For each thing, in code order, `stepped` does what `ComplementJoin.process` does: it classifies
the thing's new records of each series (`SeriesState.classify`), puts the accepted ones in
pending and releases those at or below the watermark to the end of the tail (`accept`,
`release`: `things_series.side_step`), finds the newly certain pairs in the order the thing's
engine emits them (`things_emission.thing_pairs`) and where its tails can be cut: before what a
future pair can need (`ComplementJoin._prune`). The rows of things without records are copied
through. Then the pairs' columns are gathered, at their exact size, and the tails cut in one
pass. So the state is copied once per step and series, into buffers the caller keeps from step
to step, and nothing is sorted but the records of a thing that arrived out of order or may
repeat one.
"""

from __future__ import annotations

import numpy as np
from numba import types

from statestream.join.compiled import kernel, step, thing_step
from statestream.join.things_emission import thing_pairs
from statestream.join.things_series import copied_before, copy_row, side_step

# contiguous columns: an index into one needs no stride
I8, F8, B1 = types.int64[::1], types.float64[::1], types.boolean[::1]
ROWS = types.Tuple((I8, F8, F8, I8))  # `Rows.columns`: thing, t, v, pos
# a series: its records' groups by thing (`Groups`: order, codes, starts, sizes), their t, v,
# pos and validity (arrival order), its tail and pending rows, and by thing code its
# head_prev_t, n_released, max_t and finished
SIDE = types.Tuple(
    (types.UniTuple(I8, 4), types.Tuple((F8, F8, I8, B1)), ROWS, ROWS,
     types.Tuple((F8, I8, F8, B1)))
)  # fmt: skip
# room to sort one thing's records (`_merged_pending`): times, values, two orders, sources
SCRATCH = types.Tuple((F8, F8, I8, I8, I8))
# room for a series' records in thing order: t, v, pos, validity, verdict code, watermark
BATCH = types.Tuple((F8, F8, I8, B1, types.int8[::1], F8))
# what the kernel writes into: the new pairs' rows in each tail (two), one thing's runs of
# pairs (two), each series' new tail and pending rows, room to sort, room for the records
BUFFERS = types.Tuple(
    (I8, I8, I8, I8, types.UniTuple(ROWS, 2), types.UniTuple(ROWS, 2), SCRATCH, SCRATCH,
     BATCH, BATCH)
)  # fmt: skip


# the kernel's outputs


@step
def _in_thing_order(side, state, batch):
    """The series with its records in the order of their groups (copied to `batch`, the
    buffers of their t, v, pos, validity, verdict codes and watermarks); the buffers of its
    verdicts and new tail and pending rows; where each is (old tail, old pending, groups, new
    tail, new pending)."""
    (order, codes, starts, sizes), (t, v, pos, valid), tail, pending, per_thing = side
    bt, bv, b_pos, b_valid, b_codes, b_watermark = batch
    for k in range(len(order)):
        i = order[k]
        bt[k], bv[k], b_pos[k], b_valid[k] = t[i], v[i], pos[i], valid[i]
    grouped = ((codes, starts, sizes), (bt, bv, b_pos, b_valid), tail, pending, per_thing)
    return grouped, (b_codes, b_watermark, state[0], state[1]), np.zeros(5, np.int64)


@step
def _verdicts(order, out):
    """The verdict codes and watermarks of a series' records in their arrival order."""
    codes, watermark = np.empty(len(order), np.int8), np.empty(len(order), np.float64)
    for k in range(len(order)):
        codes[order[k]], watermark[order[k]] = out[0][k], out[1][k]
    return codes, watermark


@step
def _gathered(touched, marks, pair_l, pair_r, n, left, right):
    """The new pairs' columns: their thing, then the left and right time, value and position
    (`pair_l`, `pair_r`: their rows in each tail; `marks`: each thing's count, last column)."""
    (_, lt, lv, l_pos), (_, rt, rv, r_pos) = left, right
    thing, left_pos, right_pos = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    left_t, left_v = np.empty(n, np.float64), np.empty(n, np.float64)
    right_t, right_v = np.empty(n, np.float64), np.empty(n, np.float64)
    m = 0
    for k in range(len(touched)):
        for _ in range(marks[k, 6]):
            i, j = pair_l[m], pair_r[m]
            thing[m], left_t[m], left_v[m], left_pos[m] = touched[k], lt[i], lv[i], l_pos[i]
            right_t[m], right_v[m], right_pos[m] = rt[j], rv[j], r_pos[j]
            m += 1
    return thing, left_t, left_v, left_pos, right_t, right_v, right_pos


@thing_step
def _rest_copied(side, out, at):
    """Copy the rows of the things after the last stepped through."""
    copied_before(np.iinfo(np.int64).max, side[2], out[2], at, 0, 3)
    copied_before(np.iinfo(np.int64).max, side[3], out[3], at, 1, 4)


@thing_step
def _compacted(rows, marks, first, end, size):
    """Move each thing's kept rows (`marks[k, first]` … `marks[k, end]` − 1) and the rows of
    things without records between them down over the pruned ones; returns the new size."""
    to = previous = 0
    for k in range(len(marks)):
        to = _moved(rows, previous, marks[k, first - 1], to)
        to = _moved(rows, marks[k, first], marks[k, end], to)
        previous = marks[k, end]
    return _moved(rows, previous, size, to)


@step
def _moved(rows, start, end, to):
    """Move rows start … end − 1 down to `to`; returns where the next go."""
    if to == start:
        return to + end - start
    for i in range(start, end):
        copy_row(rows, to, rows, i)
        to += 1
    return to


# pruning


@step
def _pruned(lt, l_rows, l_head, rt, r_rows, r_head, code, l_wm, r_wm, finished):
    """Where each tail of the thing keeps its rows from (`ComplementJoin._prune`): the last one
    below what a future pair can need; sets the time before it where rows are dropped."""
    (a, _, b), (c, _, d), wl, wr = l_rows, r_rows, l_wm[1], r_wm[1]
    # lookups into L come from R records still to be released (t ≥ W_R) and from unsettled R
    # records; L's own unsettled records stay, and so does all at or above W_L (duplicates)
    unsettled_l = np.inf if finished[1] else _first_unsettled(lt, a, b, rt, c, d, wr)
    unsettled_r = np.inf if finished[0] else _first_unsettled(rt, c, d, lt, a, b, wl)
    threshold = min(min(wr, unsettled_r), min(unsettled_l, wl))
    return (
        _first_kept(lt, a, b, threshold, l_head, code),
        _first_kept(rt, c, d, threshold, r_head, code),
    )


@step
def _first_unsettled(t, start, end, other_t, other_start, other_end, other_wm):
    """A thing's smallest time of a released record whose own relations into the other series
    are not certain (`engine._first_unsettled_time`): its next record there is uncertain while
    none is released at or after it, its previous one while the other's watermark is not past
    it; so, the first after the other's last record or at or after its watermark."""
    other_last = other_t[other_end - 1] if other_end > other_start else -np.inf
    for i in range(start, end):
        if t[i] > other_last or t[i] >= other_wm:
            return t[i]
    return np.inf


@step
def _first_kept(t, start, end, threshold, head_prev_t, code):
    """The first of one thing's rows from the last one below `threshold` (`SeriesState.prune`);
    sets the time before it if rows are dropped."""
    below = 0
    while start + below < end and t[start + below] < threshold:
        below += 1
    first = start + min(below - 1, end - start - 1)
    if first > start:
        head_prev_t[code] = t[first - 1]
        return first
    return start


@thing_step
def _things_stepped(touched, finish, disorder, tolerance, left, right, scratch, pairs, marks):
    """The loop over the things `touched`: each series stepped, the thing's new pairs found and
    its tails' cuts marked (`marks`); returns the pairs' count. One call without numba's runtime
    for all things, the per-thing steps inlined: a call of its own per thing and step passed
    some hundred arguments (each array is seven), which cost more than a small thing's work."""
    l_side, l_out, l_at, l_scratch = left
    r_side, r_out, r_at, r_scratch = right
    lt, rt = l_out[2][1], r_out[2][1]
    (l_head, _, _, l_finished), (r_head, _, _, r_finished) = l_side[4], r_side[4]
    n = 0
    for k in range(len(touched)):
        code = touched[k]
        l_rows, l_wm = side_step(code, finish, disorder, l_side, l_out, l_at, l_scratch)
        r_rows, r_wm = side_step(code, finish, disorder, r_side, r_out, r_at, r_scratch)
        count = thing_pairs(
            lt, l_rows, l_head[code], l_wm, rt, r_rows, r_head[code], r_wm, tolerance,
            scratch, pairs, n,
        )  # fmt: skip
        n += count
        finished = (l_finished[code], r_finished[code])
        kept = _pruned(lt, l_rows, l_head, rt, r_rows, r_head, code, l_wm, r_wm, finished)
        marks[k, 0], marks[k, 1], marks[k, 2] = l_rows[0], kept[0], l_rows[2]
        marks[k, 3], marks[k, 4], marks[k, 5] = r_rows[0], kept[1], r_rows[2]
        marks[k, 6] = count
    return n


# the kernel, last: numba compiles it on import, once the steps it calls exist


@kernel(I8, types.boolean, types.float64, types.float64, SIDE, SIDE, BUFFERS)
def stepped(touched, finish, disorder, tolerance, left, right, buffers):
    """Step the things `touched` (sorted codes; every record's thing is one) with each series'
    records (by thing, each thing's in arrival order): `finish` declares their input complete.
    The new state is written to `buffers` (see `BUFFERS`), which must not hold the old one.

    Returns per series its verdict codes and watermarks (per record, in its order) and the
    sizes of its new tail and pending rows in the buffers; and the new pairs: their thing, then
    the left and right time, value and position, by thing and each thing's in emission order.
    """
    pair_l, pair_r, li, ri, l_state, r_state, l_scratch, r_scratch, l_batch, r_batch = buffers
    l_side, l_out, l_at = _in_thing_order(left, l_state, l_batch)
    r_side, r_out, r_at = _in_thing_order(right, r_state, r_batch)
    marks = np.empty((len(touched), 7), np.int64)  # per thing: rows of each tail, pair count
    runs = np.empty(8, np.int64)
    n = _things_stepped(
        touched, finish, disorder, tolerance, (l_side, l_out, l_at, l_scratch),
        (r_side, r_out, r_at, r_scratch), (li, ri, runs), (pair_l, pair_r), marks,
    )  # fmt: skip
    _rest_copied(l_side, l_out, l_at)
    _rest_copied(r_side, r_out, r_at)
    pairs = _gathered(touched, marks, pair_l, pair_r, n, l_out[2], r_out[2])
    l_size = _compacted(l_out[2], marks, 1, 2, l_at[3])
    r_size = _compacted(r_out[2], marks, 4, 5, r_at[3])
    l_verdicts, r_verdicts = _verdicts(left[0][0], l_out), _verdicts(right[0][0], r_out)
    return (*l_verdicts, l_size, l_at[4]), (*r_verdicts, r_size, r_at[4]), pairs
