"""The newly certain pairs of one thing in a step of `things_pass.stepped`.

`thing_pairs` has the same four generators and relation checks as `emission`, each with only
the checks its construction leaves open, in two walks: one over L for the generators of l's
neighbours, one over R for those of r's, each walking the other series' times alongside. The
pairs are then merged into the order the thing's engine emits them: by pair time, equal ones in
generator order.
"""

from __future__ import annotations

import numpy as np

from statestream.join.compiled import step


@step
def _advance(keys, end, key, below, up_to):
    """From the ends of the `keys` (sorted up to `end`) below and at or below the previous
    key, those of `key` (≥ it): where those below it end, and those at or below it."""
    while below < end and keys[below] < key:
        below += 1
    up_to = max(up_to, below)
    while up_to < end and keys[up_to] <= key:
        up_to += 1
    return below, up_to


@step
def thing_pairs(lt, l_rows, l_head, l_wm, rt, r_rows, r_head, r_wm, tolerance, scratch, out, n):
    """The tail rows (l, r) of the pairs of one thing certain now but not before, in emission
    order: written to `out` (two arrays) from `n` on; returns their count. A side's rows are
    (start, first fresh, end) in its times; its watermarks (before, now). `scratch`: two arrays
    with room for 2 (nl + nr) rows for the generators' runs, and one of eight integers."""
    li, ri, runs = scratch
    nl, nr = l_rows[2] - l_rows[0], r_rows[2] - r_rows[0]
    n0, n1 = _pairs_of_left(
        lt, l_rows, l_head, l_wm, rt, r_rows, r_head, r_wm, tolerance, li, ri, nl
    )
    n2, n3 = _pairs_of_right(
        lt, l_rows, l_head, l_wm, rt, r_rows, r_head, r_wm, tolerance, li, ri, 2 * nl, nr
    )
    runs[0], runs[1], runs[2], runs[3] = 0, n0, nl, nl + n1
    runs[4], runs[5], runs[6], runs[7] = 2 * nl, 2 * nl + n2, 2 * nl + nr, 2 * nl + nr + n3
    return _merged(lt, rt, li, ri, runs, out[0], out[1], n)


@step
def _pairs_of_left(lt_, l_rows, l_head, l_wm, rt_, r_rows, r_head, r_wm, tolerance, li, ri, second):
    """Generators 0 and 1 in one walk over l: the pairs (l, r) of r = next_R(l) from 0 on, then
    those of r = prev_R(l) where r = next_R(l) does not hold from `second` on; their counts.

    0: l's first R at or after it is next_R(l) once the R before it, or the pruned one, is before
    l; certain once both are released, so new if one of them is fresh.
    1: r = prev_R(l) is certain once R's watermark is past l, or once l = next_L(r) holds (both
    released), or, for equal times, once l = prev_L(r) holds and L's watermark is past l.
    """
    (a, l_fresh, b), (c, r_fresh, d) = l_rows, r_rows
    n0 = n1 = 0
    below = up_to = c
    for i in range(a, b):
        lt = lt_[i]
        below, up_to = _advance(rt_, d, lt, below, up_to)
        r = below  # l's next R
        if r < d:
            r_before = rt_[r - 1] if r > c else r_head
            if r_before < lt and (i >= l_fresh or r >= r_fresh) and abs(lt - rt_[r]) <= tolerance:
                li[n0], ri[n0] = i, r
                n0 += 1
        r = up_to - 1  # l's previous R
        if r < c:
            continue
        rt = rt_[r]
        if rt == lt and (rt_[r - 1] if r > c else r_head) < lt:
            continue  # r = next_R(l): generator 0's
        via_next = (lt_[i - 1] if i > a else l_head) < rt  # l = next_L(r)
        via_prev = rt == lt and (lt_[i + 1] if i + 1 < b else np.inf) > lt
        now = via_next or r_wm[1] > lt or (via_prev and l_wm[1] > lt)
        before = via_next or r_wm[0] > lt or (via_prev and l_wm[0] > lt)
        fresh = i >= l_fresh or r >= r_fresh
        if now and (fresh or not before) and abs(lt - rt) <= tolerance:
            li[second + n1], ri[second + n1] = i, r
            n1 += 1
    return n0, n1


@step
def _pairs_of_right(
    lt_, l_rows, l_head, l_wm, rt_, r_rows, r_head, r_wm, tolerance, li, ri, first, second
):  # fmt: skip
    """Generators 2 and 3 in one walk over r: the pairs (l, r) of l = next_L(r) from `first`
    on, then those of l = prev_L(r) from `first` + `second` on, each where no relation of an
    earlier generator holds; their counts.

    2: r's first L at or after it is next_L(r) once the L before it is before r; r must not be
    l's previous R (r's next R is after l) nor, for equal times, l's next R; certain once both
    are released.
    3: l = prev_L(r) is certain once L's watermark is past r; r must not be l's next R (r's
    previous R is at or after l) nor, for equal times, l's previous R or l's next L.
    """
    (a, l_fresh, b), (c, r_fresh, d) = l_rows, r_rows
    n2 = n3 = 0
    below = up_to = a
    for j in range(c, d):
        rt = rt_[j]
        below, up_to = _advance(lt_, b, rt, below, up_to)
        r_before = rt_[j - 1] if j > c else r_head
        r_after = rt_[j + 1] if j + 1 < d else np.inf
        i = below  # r's next L
        if i < b:
            lt = lt_[i]
            if (
                r_after <= lt
                and (lt_[i - 1] if i > a else l_head) < rt
                and not (lt == rt and r_before < lt)
                and (i >= l_fresh or j >= r_fresh)
                and abs(lt - rt) <= tolerance
            ):
                li[first + n2], ri[first + n2] = i, j
                n2 += 1
        i = up_to - 1  # r's previous L
        if i < a or not l_wm[1] > rt:
            continue
        lt = lt_[i]
        l_before = lt_[i - 1] if i > a else l_head
        if (
            r_before >= lt
            and not (lt == rt and (r_after > lt or l_before < lt))
            and (i >= l_fresh or j >= r_fresh or not l_wm[0] > rt)
            and abs(lt - rt) <= tolerance
        ):
            li[first + second + n3], ri[first + second + n3] = i, j
            n3 += 1
    return n2, n3


@step
def _merged(lt, rt, li, ri, bounds, out_l, out_r, to):
    """The pairs of the four runs between bounds (start, end of each), each in pair-time order,
    merged by pair time into `out_l`, `out_r` from `to` on (equal ones in run order, as a stable
    sort of the runs one after another); their count. Each run's first pair time is kept until
    it is taken."""
    head0 = _head_time(lt, rt, li, ri, bounds, 0)
    head1 = _head_time(lt, rt, li, ri, bounds, 2)
    head2 = _head_time(lt, rt, li, ri, bounds, 4)
    head3 = _head_time(lt, rt, li, ri, bounds, 6)
    n = 0
    while True:
        best, time = 0, head0
        if head1 < time:
            best, time = 2, head1
        if head2 < time:
            best, time = 4, head2
        if head3 < time:
            best, time = 6, head3
        if time == np.inf:  # all empty, or the times left overflow: the first run with pairs
            best = _first_run_with_pairs(bounds)
            if best < 0:
                return n
        k = bounds[best]
        out_l[to + n], out_r[to + n] = li[k], ri[k]
        bounds[best] = k + 1
        n += 1
        head = _head_time(lt, rt, li, ri, bounds, best)
        if best == 0:
            head0 = head
        elif best == 2:
            head1 = head
        elif best == 4:
            head2 = head
        else:
            head3 = head


@step
def _first_run_with_pairs(bounds):
    for g in range(0, 8, 2):
        if bounds[g] < bounds[g + 1]:
            return g
    return -1


@step
def _head_time(lt, rt, li, ri, bounds, g):
    """The pair time of run g's first pair; +inf once the run is empty."""
    if bounds[g] == bounds[g + 1]:
        return np.inf
    return lt[li[bounds[g]]] + rt[ri[bounds[g]]]
