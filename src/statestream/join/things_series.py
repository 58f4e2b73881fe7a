"""The series operations of `SeriesState` (classify, accept, release, prune) for many things.

Each function does for the rows of every thing of a `SeriesTable` what its `SeriesState` or
`ComplementJoin` counterpart does for one thing, with segment-wise numpy operations over
(thing, time): a running maximum over ranks that are ordered by thing first, `searchsorted` on
`TimeKeys`, and stable sorts that only merge sorted runs.
"""

from __future__ import annotations

import numpy as np

from statestream.join.engine import SeriesVerdicts
from statestream.join.keys import Groups, TimeKeys, group_order
from statestream.join.series import ACCEPTED, DUPLICATE, LATE, MALFORMED
from statestream.join.spec import JoinSpec
from statestream.join.table import Rows, SeriesTable
from statestream.join.things_emission import TailView

_I8 = np.int64
_F8 = np.float64


def ingest(
    table: SeriesTable, side: str, rows: Rows, groups: Groups, spec: JoinSpec, keys: TimeKeys
) -> SeriesVerdicts:
    """Classify a batch of one series (arrival order) and add the accepted records to pending."""
    if len(rows) == 0:
        return SeriesVerdicts(np.empty(0, np.int8), np.empty(0, _F8))
    valid = np.isfinite(rows.t) & spec.accepts(side, rows.v)
    codes, watermark, by_time, grouped_t, repeats_possible = _classify(
        table, rows, groups, valid, spec.disorder_ms
    )
    # the not-late records in (thing, time, arrival) order: all of them, most often
    if by_time is groups.order and (codes == ACCEPTED).all():  # arrived in time order, all valid
        # thing codes and times in that order are known: no gather; no time repeats one before
        # it in its thing nor the largest accepted, so no record can be a duplicate
        thing = np.repeat(groups.codes, groups.sizes)
        batch = Rows(thing, grouped_t, rows.v.take(by_time), rows.pos.take(by_time))
        if not repeats_possible:
            _accept(table, batch, keys, groups.starts + groups.sizes - 1)
            return SeriesVerdicts(codes, watermark)
        candidates = by_time
    else:
        candidates = by_time[codes.take(by_time) == ACCEPTED]
        batch = rows.take(candidates)
    repeats = _duplicates(table, batch, spec.disorder_ms, keys)
    if len(repeats):
        codes[candidates[repeats]] = DUPLICATE
        accepted = np.ones(len(batch), dtype=bool)
        accepted[repeats] = False
        batch = batch.take(accepted)
    _accept(table, batch, keys)
    return SeriesVerdicts(codes, watermark)


def _classify(table: SeriesTable, rows: Rows, groups: Groups, valid: np.ndarray, disorder: float):
    """Verdicts but duplicates, the watermark each record met, the (thing, time, arrival)
    order of the batch (`SeriesState.classify`), the times in thing order (-inf if malformed)
    and whether a duplicate is possible (False: no time is at or below the largest one seen
    before it in its thing; known only for records that arrived in time order)."""
    n = len(rows)
    seen = np.where(valid, rows.t, -np.inf)
    grouped = seen.take(groups.order)
    largest = np.empty(n, dtype=_F8)  # per thing, the largest time seen before each record
    rising = grouped[1:] >= grouped[:-1]
    rising[groups.starts[1:] - 1] = True
    if rising.all():  # each thing's records arrived in time order (the usual case)
        by_time = groups.order
        largest[1:] = grouped[:-1]
    else:
        by_seen = np.argsort(seen, kind="stable")
        by_time = by_seen[group_order(rows.thing[by_seen])]
        # a rank in (thing, time) order grows from thing to thing: one running maximum
        rank = np.empty(n, dtype=_I8)
        rank[by_time] = np.arange(n)
        running = np.maximum.accumulate(rank[groups.order])
        largest[1:] = seen[by_time[running[:-1]]]
    largest[groups.starts] = -np.inf
    np.maximum(largest, np.repeat(table.max_t[groups.codes], groups.sizes), out=largest)
    repeats_possible = by_time is not groups.order or bool((grouped <= largest).any())
    largest -= disorder
    watermark = np.empty(n, dtype=_F8)
    watermark[groups.order] = largest
    codes = np.full(n, ACCEPTED, dtype=np.int8)
    codes[~valid] = MALFORMED
    late = rows.t < watermark  # False for a NaN time (malformed)
    if late.any():
        codes[valid & late] = LATE
    return codes, watermark, by_time, grouped, repeats_possible


def _duplicates(table: SeriesTable, batch: Rows, disorder: float, keys: TimeKeys) -> np.ndarray:
    """Which of the batch's not-late records (in (thing, time, arrival) order) repeat the time and
    value of an accepted one of their thing: their indices in the batch."""
    none = np.empty(0, dtype=_I8)
    if len(batch) == 0:
        return none
    cand_thing, cand_t = batch.thing, batch.t
    # A record that is not late can only repeat a remembered one at or above the watermark
    # before this batch: pending, or in the tail at or above it; and no remembered time is
    # above the largest time seen.
    among_batch = (cand_thing[1:] == cand_thing[:-1]) & (cand_t[1:] == cand_t[:-1])
    if not among_batch.any() and not (cand_t <= table.max_t.take(cand_thing)).any():
        return none
    tail = table.tail
    memory = Rows.concat(
        [tail.take(tail.t >= table.max_t.take(tail.thing) - disorder), table.pending]
    )
    all_t = np.concatenate((memory.t, cand_t))
    all_v = np.concatenate((memory.v, batch.v))
    all_k = keys.stored(np.concatenate((memory.thing, cand_thing)), all_t)
    order = np.argsort(all_k, kind="stable")  # memory first, then the batch in arrival order
    sorted_k = all_k[order]
    same_as_prev = np.empty(len(sorted_k), dtype=bool)
    same_as_prev[0] = False
    np.equal(sorted_k[1:], sorted_k[:-1], out=same_as_prev[1:])
    if not same_as_prev.any():
        return none
    tied = same_as_prev | np.concatenate((same_as_prev[1:], [False]))
    idx = order[tied]
    # among records of equal thing, time and value, all but the first repeat
    sub = np.lexsort((idx, all_v[idx], all_k[idx]))
    sk, sv, si = all_k[idx][sub], all_v[idx][sub], idx[sub]
    repeat = np.zeros(len(si), dtype=bool)
    repeat[1:] = (sk[1:] == sk[:-1]) & (sv[1:] == sv[:-1])
    in_batch = si[repeat] - len(memory)
    return np.sort(in_batch[in_batch >= 0])


def _largest(rows: Rows, last: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per thing of rows in (thing, time, arrival) order: its largest time, the first arrived of
    equal ones (as `np.argmax`, which tells -0.0 from 0.0). `last`: each thing's last row, if
    known."""
    thing, t = rows.thing, rows.t
    if last is None:
        last = np.flatnonzero(np.append(thing[1:] != thing[:-1], True))
    largest = t.take(last)
    if not (largest == 0.0).any():  # equal finite times are the same float but for ±0.0
        return thing.take(last), largest
    sizes = np.diff(np.append(-1, last))
    top = np.repeat(largest, sizes)
    at_top = t == top
    first = at_top.copy()
    first[1:] &= ~at_top[:-1] | (thing[1:] != thing[:-1])
    return thing[last], t[np.flatnonzero(first)]


def _accept(
    table: SeriesTable, accepted: Rows, keys: TimeKeys, last: np.ndarray | None = None
) -> None:
    """Add accepted records, in (thing, time, arrival) order, to pending; raise max_t. `last`:
    each thing's last record, if known."""
    if len(accepted) == 0:
        return
    things, largest = _largest(accepted, last)
    old = table.max_t[things]
    table.max_t[things] = np.where(largest > old, largest, old)
    if len(table.pending) == 0:
        table.pending = accepted
        return
    both = Rows.concat([table.pending, accepted])
    # pending arrived first: a stable sort keeps it first among equal times
    table.pending = both.take(np.argsort(keys.stored(both.thing, both.t), kind="stable"))


def release(table: SeriesTable, disorder: float) -> np.ndarray:
    """Move the pending records at or below their thing's watermark to the tail; returns which
    tail records are new."""
    pending = table.pending
    # without disorder the watermark is the largest time seen: every accepted time is at or below
    released = None if disorder == 0.0 else pending.t <= table.watermark_of(pending.thing, disorder)
    if released is None or released.all():
        out, table.pending = pending, Rows.empty()
    elif not released.any():
        return np.zeros(len(table.tail), dtype=bool)
    else:
        out, table.pending = pending.take(released), pending.take(~released)
    table.n_released += np.bincount(out.thing, minlength=len(table.n_released))
    table.tail, fresh = table.tail.merged_from(out)
    return fresh


def prune(
    left: SeriesTable,
    right: SeriesTable,
    tails: tuple[TailView, TailView],
    things: np.ndarray,
    watermarks: tuple[np.ndarray, np.ndarray],
    keys: TimeKeys,
) -> None:
    """Drop the records that can take part in no future pair (`ComplementJoin._prune`).

    `things` are the codes of all things in the tables, sorted; `watermarks` theirs now.
    """
    wl, wr = watermarks
    bounds = [(tail.start, tail.end) for tail in tails]
    tail_keys = [tail.keys for tail in tails]
    unsettled_l = _first_unsettled(
        left, tail_keys[0], bounds[0], right, bounds[1], wr, things, keys
    )
    unsettled_r = _first_unsettled(
        right, tail_keys[1], bounds[1], left, bounds[0], wl, things, keys
    )
    # lookups into L come from R records still to be released (t ≥ W_R) and from unsettled R
    # records; L's own unsettled records stay, and so does all at or above W_L (duplicates)
    threshold = np.minimum(np.minimum(wr, unsettled_r), np.minimum(unsettled_l, wl))
    for table, k, (start, end) in zip((left, right), tail_keys, bounds, strict=True):
        _prune_tail(table, k, start, end, threshold, things, keys)


def _first_unsettled(
    series: SeriesTable,
    series_keys: np.ndarray,
    bounds: tuple[np.ndarray, np.ndarray],
    other: SeriesTable,
    other_bounds: tuple[np.ndarray, np.ndarray],
    other_wm: np.ndarray,
    things: np.ndarray,
    keys: TimeKeys,
) -> np.ndarray:
    """Per thing: the smallest time of a released record whose own relations into `other` are
    not certain (`engine._first_unsettled_time`)."""
    result = np.full(len(things), np.inf)
    if len(series.tail) == 0:
        return result
    o_start, o_end = other_bounds
    other_last = np.full(len(things), -np.inf)
    has_other = o_end > o_start
    other_last[has_other] = other.tail.t[o_end[has_other] - 1]
    # next_other uncertain: no released record of `other` at or after it;
    # prev_other uncertain: other's watermark not past it.
    # the first record after the last of `other` (integer keys: "right" of k is "left" of k + 1)
    # or at or after other's watermark: one search for the smaller of the two keys
    after_last = keys(things, other_last) + 1
    first = np.searchsorted(
        series_keys, np.minimum(after_last, keys(things, other_wm)), side="left"
    )
    inside = (first < bounds[1]) & ~other.finished[things]
    result[inside] = series.tail.t[first[inside]]
    return result


def _prune_tail(
    table: SeriesTable,
    tail_keys: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    threshold: np.ndarray,
    things: np.ndarray,
    keys: TimeKeys,
) -> None:
    """Per thing, drop the tail records below its threshold but the last of them
    (`SeriesState.prune`)."""
    if len(table.tail) == 0:
        return
    keep_from = np.searchsorted(tail_keys, keys(things, threshold), side="left") - 1 - start
    keep_from = np.minimum(keep_from, end - start - 1)
    cut = keep_from > 0
    if not cut.any():
        return
    table.head_prev_t[things[cut]] = table.tail.t[start[cut] + keep_from[cut] - 1]
    first = start + np.maximum(keep_from, 0)
    lengths = end - first
    before = np.cumsum(lengths) - lengths
    kept = np.arange(int(before[-1] + lengths[-1])) + np.repeat(first - before, lengths)
    table.tail = table.tail.take(kept)
