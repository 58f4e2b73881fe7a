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
    """A series' tail with the neighbour times and release indices the checks need."""

    t: np.ndarray
    prev_t: np.ndarray
    next_t: np.ndarray
    seq: np.ndarray

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
        seq = np.arange(series.first_seq, series.n_released, dtype=np.int64)
        return cls(t, prev_t, next_t, seq)


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
    li_all = np.arange(len(sl.t))
    ri_all = np.arange(len(sr.t))
    # generator 1: r = next_R(l); 2: r = prev_R(l); 3: l = next_L(r); 4: l = prev_L(r)
    nxt_r = np.searchsorted(sr.t, sl.t, side="left")
    prv_r = np.searchsorted(sr.t, sl.t, side="right") - 1
    nxt_l = np.searchsorted(sl.t, sr.t, side="left")
    prv_l = np.searchsorted(sl.t, sr.t, side="right") - 1
    candidates = (
        (li_all, nxt_r, 0),
        (li_all, prv_r, 1),
        (nxt_l, ri_all, 2),
        (prv_l, ri_all, 3),
    )
    out_l, out_r = [], []
    for li, ri, generator in candidates:
        ok = (li >= 0) & (li < len(sl.t)) & (ri >= 0) & (ri < len(sr.t))
        li, ri = li[ok], ri[ok]
        rel = _relations(sl, sr, li, ri)
        keep = rel[generator].copy()
        for earlier in range(generator):
            keep &= ~rel[earlier]
        li, ri, rel = li[keep], ri[keep], [r[keep] for r in rel]
        emit = _certain(sl, sr, li, ri, rel, now) & ~_certain(sl, sr, li, ri, rel, before)
        if np.isfinite(tolerance_ms):
            emit &= np.abs(sl.t[li] - sr.t[ri]) <= tolerance_ms
        out_l.append(li[emit])
        out_r.append(ri[emit])
    li = np.concatenate(out_l)
    ri = np.concatenate(out_r)
    # each generator's output is already in pair-time order: a stable sort merges four runs
    order = np.argsort(sl.t[li] + sr.t[ri], kind="stable")
    return li[order], ri[order]


def _relations(sl: _Side, sr: _Side, li: np.ndarray, ri: np.ndarray) -> list[np.ndarray]:
    lt, rt = sl.t[li], sr.t[ri]
    return [
        (rt >= lt) & (sr.prev_t[ri] < lt),  # r = next_R(l)
        (rt <= lt) & (sr.next_t[ri] > lt),  # r = prev_R(l)
        (lt >= rt) & (sl.prev_t[li] < rt),  # l = next_L(r)
        (lt <= rt) & (sl.next_t[li] > rt),  # l = prev_L(r)
    ]


def _certain(
    sl: _Side,
    sr: _Side,
    li: np.ndarray,
    ri: np.ndarray,
    rel: list[np.ndarray],
    frontier: tuple[Frontier, Frontier],
) -> np.ndarray:
    fl, fr = frontier
    released = (sl.seq[li] < fl.n_released) & (sr.seq[ri] < fr.n_released)
    lt, rt = sl.t[li], sr.t[ri]
    prev_r_settled = fr.finished | (fr.watermark > lt)
    prev_l_settled = fl.finished | (fl.watermark > rt)
    certain = rel[0] | rel[2] | (rel[1] & prev_r_settled) | (rel[3] & prev_l_settled)
    return released & certain
