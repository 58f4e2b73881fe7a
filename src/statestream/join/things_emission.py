"""`emission.newly_certain_pairs` for the tails of many things at once.

The same four generators and local relation checks as for one thing (see `emission`), on columns
sorted by (thing, time), in two compiled passes (`compiled`): one over L for the generators of
l's neighbours, one over R for those of r's, each walking the other series' (thing, time) keys
(`keys.TimeKeys`) alongside, so a neighbour found in another thing is out of its own thing's
bounds and dropped. Pairs come out sorted by (thing, pair time), each thing's in the order one
thing's engine emits them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from statestream.join.compiled import B1, F8, FLOAT, I8, kernel, step
from statestream.join.keys import TimeKeys
from statestream.join.table import Rows


@dataclass(frozen=True)
class TailView:
    """One series' tails in one step: keys, the things' bounds, fresh releases, watermarks.

    `start`, `end`, `head`, `wm_before` and `wm_now` are indexed by the thing's local index
    (`local[thing]`, 0 … things − 1 in code order): `start` and `end` bound its rows, `head` is
    the time of the last record pruned before its first (`SeriesTable.head_prev_t`).
    """

    rows: Rows
    local: np.ndarray  # the local index of each record's thing
    start: np.ndarray
    end: np.ndarray
    keys: np.ndarray
    head: np.ndarray
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
        head: np.ndarray,
        watermarks: tuple[np.ndarray, np.ndarray],
    ) -> TailView:
        # `local` is sorted (rows by thing, local indices in code order): bounds by counting
        end = np.bincount(local, minlength=len(watermarks[0])).cumsum()
        start = np.empty_like(end)
        start[:1] = 0
        start[1:] = end[:-1]
        return cls(rows, local, start, end, keys, head, fresh, *watermarks)

    @property
    def columns(self) -> tuple[np.ndarray, ...]:
        """What the emission kernels read of this side, in their order."""
        return (
            self.keys, self.rows.t, self.local, self.fresh, self.start, self.end, self.head,
            self.wm_before, self.wm_now,
        )  # fmt: skip


def newly_certain_pairs(
    sl: TailView, sr: TailView, keys: TimeKeys, tolerance_ms: float
) -> tuple[np.ndarray, np.ndarray]:
    """Tail indices (l, r) of the pairs certain now but not before, by (thing, pair time).

    The four generators of `emission.newly_certain_pairs`, each with only the checks its
    construction leaves open: l's next R is at or after l and the R before it in the tail is
    before l, so r = next_R(l) holds once the R before it, or the pruned one, is before l; and so
    on. A pair is kept by the first generator whose relation holds for it.
    """
    if len(sl.keys) == 0 or len(sr.keys) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    left = _pairs_of_left(*sl.columns, *sr.columns, tolerance_ms)
    right = _pairs_of_right(*sl.columns, *sr.columns, tolerance_ms)
    li = np.concatenate((left[0], left[2], right[0], right[2]))
    ri = np.concatenate((left[1], left[3], right[1], right[3]))
    if len(li) == 0:
        return li, ri
    # each generator's output is in (thing, pair time) order: a stable sort merges four runs
    if keys.sums_order:  # the pair's two keys add up to one that orders like (thing, sum)
        order = np.argsort(sl.keys.take(li) + sr.keys.take(ri), kind="stable")
    else:
        order = keys.order_of_sums(sl.local.take(li), sl.rows.t.take(li) + sr.rows.t.take(ri))
    return li.take(order), ri.take(order)


@step
def _advance(keys, key, below, up_to):
    """From the counts of `keys` (sorted) below and at or below the previous key, those of
    `key` (≥ it): how many are below it and how many at or below it."""
    while below < len(keys) and keys[below] < key:
        below += 1
    up_to = max(up_to, below)
    while up_to < len(keys) and keys[up_to] <= key:
        up_to += 1
    return below, up_to


# two `TailView.columns` and the tolerance; a record's neighbour times in its own series (the
# time released before it, or the pruned one's; the one after it, or +inf: the next release is
# at or above the watermark) are read where they are needed, from its thing's bounds and head
_SIDES = (I8, F8, I8, B1, I8, I8, F8, F8, F8) * 2 + (FLOAT,)


@kernel(*_SIDES)
def _pairs_of_left(
    kl, lt_, l_local, l_fresh, l_start, l_end, l_head, l_wm_before, l_wm_now,
    kr, rt_, r_local, r_fresh, r_start, r_end, r_head, r_wm_before, r_wm_now, tolerance,
):  # fmt: skip
    """Generators 0 and 1 in one pass over l: the pairs (l, r) of r = next_R(l), then those of
    r = prev_R(l) where r = next_R(l) does not hold (l and r indices, two of each).

    0: l's first R key at or after it is next_R(l) once the R before it, or the pruned one, is
    before l; certain once both are released, so new if one of them is fresh.
    1: r = prev_R(l) is certain once R's watermark is past l, or once l = next_L(r) holds (both
    released), or, for equal times, once l = prev_L(r) holds and L's watermark is past l.
    """
    out = np.empty((4, len(kl)), np.int64)
    n0 = n1 = below = up_to = 0
    for i in range(len(kl)):
        below, up_to = _advance(kr, kl[i], below, up_to)
        thing, lt = l_local[i], lt_[i]
        r = below  # l's next R, if in its thing
        if r < r_end[thing]:
            r_before = rt_[r - 1] if r > r_start[thing] else r_head[thing]
            if r_before < lt and (l_fresh[i] or r_fresh[r]) and abs(lt - rt_[r]) <= tolerance:
                out[0, n0], out[1, n0] = i, r
                n0 += 1
        r = up_to - 1  # l's previous R, if in its thing
        if r < r_start[thing]:
            continue
        rt = rt_[r]
        if rt == lt and (rt_[r - 1] if r > r_start[thing] else r_head[thing]) < lt:
            continue  # r = next_R(l): generator 0's
        l_before = lt_[i - 1] if i > l_start[thing] else l_head[thing]
        via_next = l_before < rt  # l = next_L(r)
        via_prev = rt == lt and (lt_[i + 1] if i + 1 < l_end[thing] else np.inf) > lt
        now = via_next or r_wm_now[thing] > lt or (via_prev and l_wm_now[thing] > lt)
        before = via_next or r_wm_before[thing] > lt or (via_prev and l_wm_before[thing] > lt)
        if now and (l_fresh[i] or r_fresh[r] or not before) and abs(lt - rt) <= tolerance:
            out[2, n1], out[3, n1] = i, r
            n1 += 1
    return out[0, :n0], out[1, :n0], out[2, :n1], out[3, :n1]


@kernel(*_SIDES)
def _pairs_of_right(
    kl, lt_, l_local, l_fresh, l_start, l_end, l_head, l_wm_before, l_wm_now,
    kr, rt_, r_local, r_fresh, r_start, r_end, r_head, r_wm_before, r_wm_now, tolerance,
):  # fmt: skip
    """Generators 2 and 3 in one pass over r: the pairs (l, r) of l = next_L(r), then those of
    l = prev_L(r), each where no relation of an earlier generator holds.

    2: r's first L key at or after it is next_L(r) once the L before it is before r; r must not
    be l's previous R (r's next R is after l) nor, for equal times, l's next R; certain once both
    are released.
    3: l = prev_L(r) is certain once L's watermark is past r; r must not be l's next R (r's
    previous R is at or after l) nor, for equal times, l's previous R or l's next L.
    """
    out = np.empty((4, len(kr)), np.int64)
    n2 = n3 = below = up_to = 0
    for j in range(len(kr)):
        below, up_to = _advance(kl, kr[j], below, up_to)
        thing, rt = r_local[j], rt_[j]
        r_before = rt_[j - 1] if j > r_start[thing] else r_head[thing]
        r_after = rt_[j + 1] if j + 1 < r_end[thing] else np.inf
        li = below  # r's next L, if in its thing
        if li < l_end[thing]:
            lt = lt_[li]
            if (
                r_after <= lt
                and (lt_[li - 1] if li > l_start[thing] else l_head[thing]) < rt
                and not (lt == rt and r_before < lt)
                and (l_fresh[li] or r_fresh[j])
                and abs(lt - rt) <= tolerance
            ):
                out[0, n2], out[1, n2] = li, j
                n2 += 1
        li = up_to - 1  # r's previous L, if in its thing
        if li < l_start[thing] or not l_wm_now[thing] > rt:
            continue
        lt = lt_[li]
        l_before = lt_[li - 1] if li > l_start[thing] else l_head[thing]
        if (
            r_before >= lt
            and not (lt == rt and (r_after > lt or l_before < lt))
            and (l_fresh[li] or r_fresh[j] or not l_wm_before[thing] > rt)
            and abs(lt - rt) <= tolerance
        ):
            out[2, n3], out[3, n3] = li, j
            n3 += 1
    return out[0, :n2], out[1, :n2], out[2, :n3], out[3, :n3]
