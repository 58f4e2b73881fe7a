"""One series of one thing in a step of `things_pass.stepped`: classify, accept, release.

`side_step` does for one thing's records of one series what `ComplementJoin._ingest` and
`SeriesState.release` do: each record's verdict and the watermark it met, the accepted ones put
in pending by (time, arrival) and those at or below the watermark released to the end of the
tail. Records that arrived in time order, each above all before it (the usual case), are only
copied; a thing whose records may repeat one or arrived out of order is sorted, on its own.
"""

from __future__ import annotations

import numpy as np

from statestream.join.compiled import step
from statestream.join.series import ACCEPTED, DUPLICATE, LATE, MALFORMED


@step
def side_step(code, finish, disorder, side, out, at, scratch):
    """One series of one thing: its records classified and accepted, its tail copied and its
    pending records released to it. `at`: where each of the old tail, old pending, groups, new
    tail and new pending is (updated). Returns the thing's rows in the new tail (start, first
    fresh, end) and its watermarks before and after."""
    (g_codes, starts, sizes), (t, v, pos, valid), tail, pending, per_thing = side
    _, n_released, max_t, finished = per_thing
    codes, watermark, tail_out, pending_out = out
    tail_end = copied_before(code, tail, tail_out, at, 0, 3)
    pending_end = copied_before(code, pending, pending_out, at, 1, 4)
    ta, pa = at[0], at[1]
    first = end = 0
    if at[2] < len(g_codes) and g_codes[at[2]] == code:
        first, end = starts[at[2]], starts[at[2]] + sizes[at[2]]
        at[2] += 1
    before = np.inf if finished[code] else max_t[code] - disorder
    largest, repeats = _classified(first, end, t, valid, max_t[code], disorder, codes, watermark)
    start = at[3]
    for i in range(ta, tail_end):
        copy_row(tail_out, at[3], tail, i)
        at[3] += 1
    fresh = at[3]
    if finish:
        finished[code] = True
    if repeats:  # or out of order: sort
        rows = ((ta, tail_end), (pa, pending_end))
        largest, m, k = _merged_pending((t, v, first, end, codes), tail, pending, rows, scratch)
        now = _raised(code, largest, max_t, finished, disorder)
        _put_merged(code, now, (t, v, pos), pending, (pa, pending_end), out, at, scratch, (m, k))
    else:  # each accepted record above all before it: pending, then they, in order
        now = _raised(code, largest, max_t, finished, disorder)
        for j in range(pa, pending_end):
            _put(tail_out, pending_out, at, now, code, pending[1][j], pending[2][j], pending[3][j])
        for i in range(first, end):
            if codes[i] == ACCEPTED:
                _put(tail_out, pending_out, at, now, code, t[i], v[i], pos[i])
    n_released[code] += at[3] - fresh
    at[0], at[1] = tail_end, pending_end
    return (start, fresh, at[3]), (before, now)


@step
def _raised(code, largest, max_t, finished, disorder):
    """Raise the thing's largest time seen to `largest` if above; returns its watermark."""
    if largest > max_t[code]:
        max_t[code] = largest
    return np.inf if finished[code] else max_t[code] - disorder


@step
def copied_before(code, rows, out, at, src, dst):
    """Copy the rows of things before `code` (no records in this step) from `at[src]` to
    `at[dst]` (updated); returns where the thing's own rows end."""
    while at[src] < len(rows[0]) and rows[0][at[src]] < code:
        copy_row(out, at[dst], rows, at[src])
        at[src] += 1
        at[dst] += 1
    end = at[src]
    while end < len(rows[0]) and rows[0][end] == code:
        end += 1
    return end


@step
def copy_row(dst, o, src, i):
    dst[0][o], dst[1][o], dst[2][o], dst[3][o] = src[0][i], src[1][i], src[2][i], src[3][i]


@step
def _classified(first, end, t, valid, largest, disorder, codes, watermark):
    """Verdicts but duplicates, and the watermark each record met, for one thing's records
    `first` … `end` − 1 (arrival order), from the largest time seen before each
    (`SeriesState.classify`). Returns the largest time seen then, and whether an accepted record
    may repeat one or arrived before a smaller one (its time at or below the largest before
    it)."""
    repeats = False
    for i in range(first, end):
        seen = t[i] if valid[i] else -np.inf
        watermark[i] = largest - disorder
        if not valid[i]:
            codes[i] = MALFORMED
        elif t[i] < watermark[i]:
            codes[i] = LATE
        else:
            codes[i] = ACCEPTED
            repeats |= seen <= largest
        largest = max(largest, seen)
    return largest, repeats


@step
def _put(tail, pending, at, watermark, code, t, v, pos):
    """Append a record of the thing's pending ones (in order) to the tail if at or below the
    watermark, else to pending; `at`: where the next goes in each (updated). (Two branches: a
    tuple of arrays chosen at run time costs reference counting.)"""
    if t <= watermark:
        k = at[3]
        tail[0][k], tail[1][k], tail[2][k], tail[3][k] = code, t, v, pos
        at[3] = k + 1
    else:
        k = at[4]
        pending[0][k], pending[1][k], pending[2][k], pending[3][k] = code, t, v, pos
        at[4] = k + 1


@step
def _merged_pending(batch, tail, pending, rows, scratch):
    """Mark the thing's accepted records that repeat the time and value of a remembered one
    (tail, pending) or of one before them: among equal records the first is kept, as a stable
    sort by (time, value) of the remembered ones and then the records puts them. Returns the
    largest time of the others (the first arrived of equal ones, as `np.argmax`), where they
    are in the scratch space and how many: their order by (time, arrival) is in its index."""
    t, v, first, end, codes = batch
    (ta, tb), (pa, pb) = rows
    all_t, all_v, index, spare, source = scratch
    m = 0
    for r in range(ta, tb):
        all_t[m], all_v[m] = tail[1][r], tail[2][r]
        m += 1
    for r in range(pa, pb):
        all_t[m], all_v[m] = pending[1][r], pending[2][r]
        m += 1
    n = m
    for i in range(first, end):
        if codes[i] == ACCEPTED:
            all_t[n], all_v[n], source[n] = t[i], v[i], i
            n += 1
    _sort(index, spare, 0, n, all_t, all_v, True)
    for s in range(1, n):
        a, b = index[s - 1], index[s]
        if b >= m and all_t[a] == all_t[b] and all_v[a] == all_v[b]:
            codes[source[b]] = DUPLICATE
    kept, largest = m, -np.inf
    for s in range(m, n):
        if codes[source[s]] == ACCEPTED:
            all_t[kept], all_v[kept], source[kept] = all_t[s], all_v[s], source[s]
            if all_t[s] > largest:
                largest = all_t[s]
            kept += 1
    _sort(index, spare, m, kept, all_t, all_v, False)
    return largest, m, kept


@step
def _put_merged(code, now, batch, pending, rows, out, at, scratch, kept):
    """Put the thing's pending records (`rows` of `pending`) and its kept records
    (`_merged_pending`) merged by (time, arrival): pending first among equal times."""
    t, v, pos = batch
    _, _, tail_out, pending_out = out
    all_t, _, index, _, source = scratch
    j, pb = rows
    k, end = kept
    while j < pb or k < end:
        if k == end or (j < pb and pending[1][j] <= all_t[index[k]]):
            _put(tail_out, pending_out, at, now, code, pending[1][j], pending[2][j], pending[3][j])
            j += 1
        else:
            i = source[index[k]]
            _put(tail_out, pending_out, at, now, code, t[i], v[i], pos[i])
            k += 1


@step
def _sort(index, spare, lo, hi, t, v, by_value):
    """`index[lo:hi]` = lo … hi − 1 sorted stably by t (and v if `by_value`): a merge sort."""
    for k in range(lo, hi):
        index[k] = k
    width, in_spare = 1, False
    while width < hi - lo:
        if in_spare:
            _merge_pass(spare, index, lo, hi, width, t, v, by_value)
        else:
            _merge_pass(index, spare, lo, hi, width, t, v, by_value)
        width, in_spare = 2 * width, not in_spare
    if in_spare:
        for k in range(lo, hi):
            index[k] = spare[k]


@step
def _merge_pass(src, dst, lo, hi, width, t, v, by_value):
    """Merge each two neighbouring runs of `width` of src[lo:hi] into dst."""
    for left in range(lo, hi, 2 * width):
        mid, right = min(left + width, hi), min(left + 2 * width, hi)
        i, j = left, mid
        for k in range(left, right):
            if j < right and (i == mid or _less(src[j], src[i], t, v, by_value)):
                dst[k] = src[j]
                j += 1
            else:
                dst[k] = src[i]
                i += 1


@step
def _less(a, b, t, v, by_value):
    return t[a] < t[b] or (by_value and t[a] == t[b] and v[a] < v[b])
