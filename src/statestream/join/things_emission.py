"""`emission.newly_certain_pairs` for the tails of many things at once.

The same four generators and local relation checks as for one thing (see `emission`), on columns
sorted by (thing, time): neighbours and lookups stay inside a thing because the lookups search
(thing, time) keys (`keys.TimeKeys`) and a candidate whose two records belong to different things
is dropped. Pairs come out sorted by (thing, pair time), each thing's in the order one thing's
engine emits them. Gathers are `a.take(index)`: the same as `a[index]`, a third faster.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from statestream.join.keys import TimeKeys
from statestream.join.table import Rows


@dataclass(frozen=True)
class TailView:
    """One series' tails in one step: keys, neighbour times, fresh releases, watermarks.

    `start`, `end`, `wm_before` and `wm_now` are indexed by the thing's local index
    (`local[thing]`, 0 … things − 1 in code order); `start` and `end` bound its rows.
    """

    rows: Rows
    local: np.ndarray  # the local index of each record's thing
    start: np.ndarray
    end: np.ndarray
    keys: np.ndarray
    prev_t: np.ndarray
    next_t: np.ndarray
    fresh: np.ndarray  # released in this step
    wm_before: np.ndarray
    wm_now: np.ndarray

    @classmethod
    def of(
        cls,
        rows: Rows,
        local: np.ndarray,
        keys: np.ndarray,
        fresh: np.ndarray,
        head_prev_t: np.ndarray,
        watermarks: tuple[np.ndarray, np.ndarray],
    ) -> TailView:
        # `local` is sorted (rows by thing, local indices in code order): bounds by counting
        end = np.bincount(local, minlength=len(watermarks[0])).cumsum()
        start = np.empty_like(end)
        start[:1] = 0
        start[1:] = end[:-1]
        t = rows.t
        prev_t = np.empty_like(t)
        next_t = np.empty_like(t)
        prev_t[1:] = t[:-1]
        next_t[:-1] = t[1:]
        # a thing's first record follows the last pruned one, and the next release after its
        # last record has a time ≥ the watermark ≥ that record's
        some = end > start
        first = start[some]
        prev_t[first] = head_prev_t[rows.thing[first]]
        next_t[end[some] - 1] = np.inf
        return cls(rows, local, start, end, keys, prev_t, next_t, fresh, *watermarks)


def newly_certain_pairs(
    sl: TailView, sr: TailView, keys: TimeKeys, tolerance_ms: float
) -> tuple[np.ndarray, np.ndarray]:
    """Tail indices (l, r) of the pairs certain now but not before, by (thing, pair time).

    The four generators of `emission.newly_certain_pairs`, each with only the checks its
    construction leaves open: l's next R is at or after l and the R before it in the tail is
    before l, so r = next_R(l) holds once the R before it, or the pruned one, is before l; and so
    on. A pair is kept by the first generator whose relation holds for it.
    """
    nl, nr = len(sl.keys), len(sr.keys)
    if nl == 0 or nr == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    next_r, prev_r, next_l, prev_l = _neighbours(sl.keys, sr.keys)
    parts = [
        _next_of_left(sl, sr, next_r, tolerance_ms),
        _prev_of_left(sl, sr, prev_r, tolerance_ms),
        _next_of_right(sl, sr, next_l, tolerance_ms),
        _prev_of_right(sl, sr, prev_l, tolerance_ms),
    ]
    li = np.concatenate([p[0] for p in parts])
    ri = np.concatenate([p[1] for p in parts])
    if len(li) == 0:
        return li, ri
    # each generator's output is in (thing, pair time) order: a stable sort merges four runs
    if keys.sums_order:  # the pair's two keys add up to one that orders like (thing, sum)
        order = np.argsort(sl.keys.take(li) + sr.keys.take(ri), kind="stable")
    else:
        order = keys.order_of_sums(sl.local.take(li), sl.rows.t.take(li) + sr.rows.t.take(ri))
    return li.take(order), ri.take(order)


def _neighbours(kl: np.ndarray, kr: np.ndarray):
    """Per l: its first R key ≥ and last R key ≤; per r: its first and last L key (indices; in
    another thing, or out of range, when its own thing has none)."""
    nl, nr = len(kl), len(kr)
    r_before_l = np.flatnonzero(_merged_is_r(kl, kr) == 0)  # R keys < each L key
    r_before_l -= np.arange(nl)
    # L keys ≤ r: the l with no more R keys before them than r's index (kl ≤ kr[j] ⟺ j ≥ that)
    l_up_to_r = np.cumsum(np.bincount(r_before_l, minlength=nr + 1)[:nr])
    # where an L key equals an R key, count the equal ones too (L) or leave them out (R)
    tied_l = np.flatnonzero(kr.take(np.minimum(r_before_l, nr - 1)) == kl)
    if len(tied_l) == 0:
        return r_before_l, r_before_l - 1, l_up_to_r, l_up_to_r - 1
    r_up_to_l = r_before_l.copy()
    r_up_to_l[tied_l] = np.searchsorted(kr, kl[tied_l], side="right")
    l_before_r = l_up_to_r.copy()
    tied_r = _tied_ranges(r_before_l.take(tied_l), r_up_to_l.take(tied_l))
    l_before_r[tied_r] = np.searchsorted(kl, kr[tied_r], side="left")
    return r_before_l, r_up_to_l - 1, l_before_r, l_up_to_r - 1


def _merged_is_r(kl: np.ndarray, kr: np.ndarray) -> np.ndarray:
    """Per key of both sorted columns merged (an L key before an equal R key): 1 for an R key.

    Keys are below 2**62 (`keys.TimeKeys`): twice a key, plus one for R, sorts like that merge;
    sorting these values (numpy's timsort merges the two runs) is faster than an argsort.
    """
    both = np.concatenate((kl, kr))
    both <<= 1
    both[len(kl) :] |= 1
    both.sort(kind="stable")
    both &= 1
    return both


def _tied_ranges(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The indices low[i] … high[i] − 1 of all ranges, each once: the R keys equal to each tied
    L key (sorted; equal L keys have the same range, distinct ones disjoint ranges)."""
    first = np.ones(len(low), dtype=bool)
    np.not_equal(low[1:], low[:-1], out=first[1:])
    low, high = low[first], high[first]
    sizes = high - low
    return np.repeat(low - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()))


def _where(li: np.ndarray, ri: np.ndarray, emit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pairs `emit` marks (positions first: faster than masking both columns)."""
    at = np.flatnonzero(emit)
    return li.take(at), ri.take(at)


def _tolerated(lt: np.ndarray, rt: np.ndarray, tolerance_ms: float) -> np.ndarray:
    """Which pairs are within a (finite) tolerance; the callers skip the check without one."""
    return np.abs(lt - rt) <= tolerance_ms


def _next_of_left(sl: TailView, sr: TailView, next_r: np.ndarray, tolerance_ms: float):
    """Generator 0, r = next_R(l): certain once both are released.

    Most l have an R after them: the checks run over all l (their columns need no gather),
    those without one are masked out.
    """
    ri = np.minimum(next_r, len(sr.keys) - 1)
    lt = sl.rows.t
    emit = next_r < sr.end.take(sl.local)  # an R at or after l in l's thing
    emit &= sr.prev_t.take(ri) < lt
    emit &= sl.fresh | sr.fresh.take(ri)
    if np.isfinite(tolerance_ms):
        emit &= _tolerated(lt, sr.rows.t.take(ri), tolerance_ms)
    li = np.flatnonzero(emit)
    return li, next_r.take(li)


def _prev_of_left(sl: TailView, sr: TailView, prev_r: np.ndarray, tolerance_ms: float):
    """Generator 1, r = prev_R(l), where r = next_R(l) does not hold (over all l, as
    generator 0)."""
    ri = np.maximum(prev_r, 0)
    lt, rt = sl.rows.t, sr.rows.t.take(ri)
    thing = sl.local
    via_next = sl.prev_t < rt  # l = next_L(r)
    now = via_next | (sr.wm_now.take(thing) > lt)
    before = via_next | (sr.wm_before.take(thing) > lt)
    emit = prev_r >= sr.start.take(thing)  # an R at or before l in l's thing
    tied = np.flatnonzero(rt == lt)  # few: the checks that need equal times run on them only
    if len(tied):
        t = lt.take(tied)
        via_prev_l = sl.next_t.take(tied) > t  # l = prev_L(r)
        tied_thing = thing.take(tied)
        now[tied] |= via_prev_l & (sl.wm_now.take(tied_thing) > t)
        before[tied] |= via_prev_l & (sl.wm_before.take(tied_thing) > t)
        emit[tied] &= ~(sr.prev_t.take(ri.take(tied)) < t)  # else r = next_R(l)
    emit &= now
    emit &= sl.fresh | sr.fresh.take(ri) | ~before
    if np.isfinite(tolerance_ms):
        emit &= _tolerated(lt, rt, tolerance_ms)
    li = np.flatnonzero(emit)
    return li, prev_r.take(li)


def _next_of_right(sl: TailView, sr: TailView, next_l: np.ndarray, tolerance_ms: float):
    """Generator 2, l = next_L(r), where neither relation of l holds.

    First over all r, the r whose next R is at or before their next L, in their thing (often
    under half of them); the other checks on those only.
    """
    li = np.minimum(next_l, len(sl.keys) - 1)
    lt = sl.rows.t.take(li)
    candidate = sr.next_t <= lt  # times are finite or ±inf, never NaN
    candidate &= next_l < sl.end.take(sr.local)  # an L at or after r in r's thing
    ri = np.flatnonzero(candidate)
    li, lt, rt = li.take(ri), lt.take(ri), sr.rows.t.take(ri)
    emit = sl.prev_t.take(li) < rt
    tied = np.flatnonzero(lt == rt)  # few: r = next_R(l) is checked on them only
    if len(tied):
        emit[tied] &= ~(sr.prev_t.take(ri.take(tied)) < lt.take(tied))
    emit &= sl.fresh.take(li) | sr.fresh.take(ri)
    if np.isfinite(tolerance_ms):
        emit &= _tolerated(lt, rt, tolerance_ms)
    return _where(li, ri, emit)


def _prev_of_right(sl: TailView, sr: TailView, prev_l: np.ndarray, tolerance_ms: float):
    """Generator 3, l = prev_L(r), where no other relation holds: certain once L's watermark is
    past r."""
    # first the r that L's watermark is past: the r still waiting for their next L (often most
    # of R's tail) go no further
    ri = np.flatnonzero(
        (prev_l >= sl.start.take(sr.local)) & (sl.wm_now.take(sr.local) > sr.rows.t)
    )
    li = prev_l.take(ri)
    lt, rt = sl.rows.t.take(li), sr.rows.t.take(ri)
    keep = sr.prev_t.take(ri) >= lt  # else r = next_R(l); times are never NaN
    tied = np.flatnonzero(lt == rt)  # few: the relations that need equal times, on them only
    if len(tied):
        t = lt.take(tied)
        keep[tied] &= ~(sr.next_t.take(ri.take(tied)) > t) & ~(sl.prev_t.take(li.take(tied)) < t)
    before = sl.wm_before.take(sr.local.take(ri)) > rt
    fresh = sl.fresh.take(li) | sr.fresh.take(ri)
    emit = keep & (fresh | ~before)
    if np.isfinite(tolerance_ms):
        emit &= _tolerated(lt, rt, tolerance_ms)
    return _where(li, ri, emit)
