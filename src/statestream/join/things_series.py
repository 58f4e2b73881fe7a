"""The series operations of `SeriesState` (classify, accept, release, prune) for many things.

Each function does for the rows of every thing of a `SeriesTable` what its `SeriesState` or
`ComplementJoin` counterpart does for one thing: classification and pruning in compiled passes
over the things' rows (`compiled`), the rest with numpy operations over (thing, time) keys
(`TimeKeys`): stable sorts that only merge sorted runs.
"""

from __future__ import annotations

import numpy as np

from statestream.join.compiled import B1, F8, FLOAT, I8, INT, kernel
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
    codes, watermark, grouped, rising, repeats_possible = _verdicts(
        groups.order, groups.codes, groups.starts, groups.sizes, rows.t, valid, table.max_t,
        disorder,
    )  # fmt: skip
    if rising:  # each thing's records arrived in time order (the usual case)
        return codes, watermark, groups.order, grouped, repeats_possible
    seen = np.where(valid, rows.t, -np.inf)
    by_seen = np.argsort(seen, kind="stable")
    by_time = by_seen[group_order(rows.thing[by_seen])]
    return codes, watermark, by_time, grouped, True


@kernel(I8, I8, I8, I8, F8, B1, F8, FLOAT)
def _verdicts(order, group_codes, starts, sizes, t, valid, max_t, disorder):
    """One pass over the records by (thing, arrival): each one's verdict and watermark from the
    largest time seen before it in its thing; the times in that order (-inf if malformed);
    whether every thing's times rise; whether any is at or below the largest before it."""
    n = len(order)
    codes, watermark = np.empty(n, np.int8), np.empty(n, np.float64)
    grouped = np.empty(n, np.float64)
    rising, repeats = True, False
    for g in range(len(group_codes)):
        largest, before = max_t[group_codes[g]], -np.inf
        for k in range(starts[g], starts[g] + sizes[g]):
            i = order[k]
            seen = t[i] if valid[i] else -np.inf
            grouped[k] = seen
            rising &= seen >= before
            repeats |= seen <= largest
            watermark[i] = largest - disorder
            if not valid[i]:
                codes[i] = MALFORMED
            elif t[i] < watermark[i]:
                codes[i] = LATE
            else:
                codes[i] = ACCEPTED
            largest, before = max(largest, seen), seen
    return codes, watermark, grouped, rising, repeats


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
) -> None:
    """Drop the records that can take part in no future pair (`ComplementJoin._prune`).

    `things` are the codes of all things in the tables, sorted; `watermarks` theirs now. Per
    thing, lookups into L come from R records still to be released (t ≥ W_R) and from unsettled
    R records (`_first_unsettled`); L's own unsettled records stay, and so does all at or above
    W_L (duplicates); so each tail keeps its records from the last one below the smallest of
    these, and likewise for R.
    """
    if len(left.tail) == 0 and len(right.tail) == 0:
        return
    sl, sr = tails
    kept_l, kept_r = _pruned_tails(
        things, sl.start, sl.end, left.tail.t, sr.start, sr.end, right.tail.t, *watermarks,
        left.finished, right.finished, left.head_prev_t, right.head_prev_t,
    )  # fmt: skip
    left.tail, right.tail = left.tail.take(kept_l), right.tail.take(kept_r)


@kernel(F8, INT, INT, F8, INT, INT, FLOAT)
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


@kernel(F8, INT, INT, FLOAT, INT, F8, I8, INT)
def _kept_rows(t, start, end, threshold, code, head_prev_t, kept, n):
    """Append to `kept` (n so far) the rows of one thing from the last one below `threshold`
    (`SeriesState.prune`); returns the new count."""
    below = 0
    while start + below < end and t[start + below] < threshold:
        below += 1
    first = start + min(below - 1, end - start - 1)
    if first > start:
        head_prev_t[code] = t[first - 1]
    else:
        first = start
    for i in range(first, end):
        kept[n] = i
        n += 1
    return n


@kernel(I8, I8, I8, F8, I8, I8, F8, F8, F8, B1, B1, F8, F8)
def _pruned_tails(
    things, l_start, l_end, lt, r_start, r_end, rt, wl, wr, l_finished, r_finished, l_head,
    r_head,
):  # fmt: skip
    """The rows each tail keeps (positions); sets the time before the first kept row of each
    thing that drops rows (`head_prev_t`, by code)."""
    kept_l, kept_r = np.empty(len(lt), np.int64), np.empty(len(rt), np.int64)
    nl = nr = 0
    for k in range(len(things)):
        code = things[k]
        unsettled_l = _first_unsettled(lt, l_start[k], l_end[k], rt, r_start[k], r_end[k], wr[k])
        unsettled_r = _first_unsettled(rt, r_start[k], r_end[k], lt, l_start[k], l_end[k], wl[k])
        if r_finished[code]:
            unsettled_l = np.inf
        if l_finished[code]:
            unsettled_r = np.inf
        threshold = min(min(wr[k], unsettled_r), min(unsettled_l, wl[k]))
        nl = _kept_rows(lt, l_start[k], l_end[k], threshold, code, l_head, kept_l, nl)
        nr = _kept_rows(rt, r_start[k], r_end[k], threshold, code, r_head, kept_r, nr)
    return kept_l[:nl], kept_r[:nr]
