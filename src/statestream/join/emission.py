"""Which pairs became certain between two states of the two series (spec: "Emission").

A pair (l, r) belongs to the join if r = next_R(l), r = prev_R(l), l = next_L(r) or l = prev_L(r).
Each relation is checked *locally* from the two records and their neighbours' times in their own
released sequence (for a record x: the time of the record released before it, `prev_t`, and
after it, `next_t`), so a check never depends on how much history the state still holds:

- r = next_R(l)  ⇔  r.t ≥ l.t and r.prev_t < l.t; certain once both are released.
- r = prev_R(l)  ⇔  r.t ≤ l.t and r.next_t > l.t; certain once both are released and R's
  watermark is past l.t (or R is finished).

A pair is emitted when it is certain now and was not certain at the previous state. The previous
state is a prefix of the current one (release counts and watermarks only grow), so "certain
before" is the same check with the old counts and watermarks. Candidates are enumerated by four
generators (l's next and previous R, r's next and previous L); a pair is kept only by the first
generator whose relation holds for it, so every pair is counted once without a set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from statestream.join.series import SeriesState


@dataclass(frozen=True)
class Frontier:
    """What "certain" depends on for one series at one moment: releases and watermark."""

    n_released: int
    watermark: float
    finished: bool

    @classmethod
    def of(cls, series: SeriesState, disorder_ms: float) -> Frontier:
        return cls(series.n_released, series.watermark(disorder_ms), series.finished)


@dataclass(frozen=True)
class _Side:
    """A series' tail with the neighbour times the checks need."""

    t: np.ndarray
    prev_t: np.ndarray
    next_t: np.ndarray
    first_seq: int

    @classmethod
    def of(cls, series: SeriesState) -> _Side:
        t = series.t
        prev_t = np.empty_like(t)
        next_t = np.empty_like(t)
        if len(t):
            prev_t[0] = series.head_prev_t
            prev_t[1:] = t[:-1]
            next_t[:-1] = t[1:]
            next_t[-1] = np.inf  # the next release has a time ≥ the watermark ≥ t[-1]
        return cls(t, prev_t, next_t, series.first_seq)


def newly_certain_pairs(
    left: SeriesState,
    right: SeriesState,
    before: tuple[Frontier, Frontier],
    now: tuple[Frontier, Frontier],
    tolerance_ms: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Tail indices (l, r) of the pairs certain at `now` but not at `before`, in time order."""
    sl, sr = _Side.of(left), _Side.of(right)
    if len(sl.t) == 0 or len(sr.t) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    nl, nr = len(sl.t), len(sr.t)
    # generator 0: r = next_R(l); 1: r = prev_R(l); 2: l = next_L(r); 3: l = prev_L(r)
    next_r, prev_r = _next_and_prev(sr.t, sl.t)
    next_l, prev_l = _next_and_prev(sl.t, sr.t)
    li = np.concatenate((np.arange(nl), np.arange(nl), next_l, prev_l))
    ri = np.concatenate((next_r, prev_r, np.arange(nr), np.arange(nr)))
    generator = np.repeat(np.arange(4, dtype=np.int8), (nl, nl, nr, nr))
    ok = (li >= 0) & (li < nl) & (ri >= 0) & (ri < nr)
    li, ri, generator = li[ok], ri[ok], generator[ok]
    rel = _relations(sl, sr, li, ri)
    # keep a pair only where its generator is the first relation that holds for it
    first = np.where(rel[0], 0, np.where(rel[1], 1, np.where(rel[2], 2, np.where(rel[3], 3, 4))))
    keep = first == generator
    li, ri = li[keep], ri[keep]
    rel = [r[keep] for r in rel]
    lt, rt = sl.t[li], sr.t[ri]
    # every tail record is released now; "before" only those released by then
    released_before = (li < before[0].n_released - sl.first_seq) & (
        ri < before[1].n_released - sr.first_seq
    )
    via_next = rel[0] | rel[2]
    emit = _certain(via_next, rel, lt, rt, now) & ~(
        released_before & _certain(via_next, rel, lt, rt, before)
    )
    if np.isfinite(tolerance_ms):
        emit &= np.abs(lt - rt) <= tolerance_ms
    li, ri = li[emit], ri[emit]
    # each generator's output is in pair-time order: a stable sort merges four runs
    order = np.argsort(lt[emit] + rt[emit], kind="stable")
    return li[order], ri[order]


def _next_and_prev(times: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per query: index of the first time ≥ it and of the last time ≤ it (-1 if none)."""
    first_at_or_after = np.searchsorted(times, queries, side="left")
    inside = first_at_or_after < len(times)
    equal = np.zeros(len(queries), dtype=bool)
    equal[inside] = times[first_at_or_after[inside]] == queries[inside]
    if equal.any():  # ties: the last equal time, not the first
        return first_at_or_after, np.searchsorted(times, queries, side="right") - 1
    return first_at_or_after, first_at_or_after - 1


def _relations(sl: _Side, sr: _Side, li: np.ndarray, ri: np.ndarray) -> list[np.ndarray]:
    lt, rt = sl.t[li], sr.t[ri]
    return [
        (rt >= lt) & (sr.prev_t[ri] < lt),  # r = next_R(l)
        (rt <= lt) & (sr.next_t[ri] > lt),  # r = prev_R(l)
        (lt >= rt) & (sl.prev_t[li] < rt),  # l = next_L(r)
        (lt <= rt) & (sl.next_t[li] > rt),  # l = prev_L(r)
    ]


def _certain(
    via_next: np.ndarray,
    rel: list[np.ndarray],
    lt: np.ndarray,
    rt: np.ndarray,
    frontier: tuple[Frontier, Frontier],
) -> np.ndarray:
    """Whether one of the pair's relations is certain at `frontier` (both records released)."""
    fl, fr = frontier
    via_prev_r = rel[1] & (fr.watermark > lt) if not fr.finished else rel[1]
    via_prev_l = rel[3] & (fl.watermark > rt) if not fl.finished else rel[3]
    return via_next | via_prev_r | via_prev_l
