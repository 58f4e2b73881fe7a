"""One series of one thing: watermark, release in event-time order, late and duplicate records.

The released records of a series form an append-only sequence in (time, arrival) order: every
record still to come has a time at or above the watermark, which is at or above every released
time. The state keeps only a suffix of it (the *tail*, see `SeriesState.prune`) plus the records
not released yet (*pending*, time above the watermark, sorted by (time, arrival)).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

ACCEPTED = 0
MALFORMED = 1
LATE = 2
DUPLICATE = 3

_F8 = np.float64
_I8 = np.int64


def _empty(dtype: type) -> np.ndarray:
    return np.empty(0, dtype=dtype)


@dataclass
class SeriesState:
    """The state of one series: released tail, pending records and the watermark's inputs."""

    # released tail, in (time, arrival) order
    t: np.ndarray = field(default_factory=lambda: _empty(_F8))
    v: np.ndarray = field(default_factory=lambda: _empty(_F8))
    pos: np.ndarray = field(default_factory=lambda: _empty(_I8))
    head_prev_t: float = -np.inf  # time of the released record just before the tail, if any
    n_released: int = 0
    # not released yet, in (time, arrival) order
    pend_t: np.ndarray = field(default_factory=lambda: _empty(_F8))
    pend_v: np.ndarray = field(default_factory=lambda: _empty(_F8))
    pend_pos: np.ndarray = field(default_factory=lambda: _empty(_I8))
    max_t: float = -np.inf
    finished: bool = False

    def watermark(self, disorder_ms: float) -> float:
        """The largest time seen minus the allowed disorder; +inf once the series is finished."""
        return np.inf if self.finished else self.max_t - disorder_ms

    @property
    def max_released_t(self) -> float:
        return float(self.t[-1]) if len(self.t) else -np.inf

    @property
    def first_seq(self) -> int:
        """Release index of the first tail record."""
        return self.n_released - len(self.t)

    @property
    def size(self) -> int:
        """Records held: tail plus pending."""
        return len(self.t) + len(self.pend_t)

    def classify(self, t: np.ndarray, valid: np.ndarray, v: np.ndarray, disorder_ms: float):
        """Classify a batch of arrivals (in arrival order); returns (codes, watermark at arrival).

        `valid` marks the records that are not malformed. Late: time below the series' watermark
        on arrival. Duplicate: same time and value as an accepted record of the series.
        """
        codes = np.where(valid, ACCEPTED, MALFORMED).astype(np.int8)
        seen = np.where(valid, t, -np.inf)
        running = np.maximum.accumulate(np.concatenate(([self.max_t], seen)))[:-1]
        wm_at_arrival = running - disorder_ms
        codes[valid & (t < wm_at_arrival)] = LATE
        self._mark_duplicates(t, v, codes)
        return codes, wm_at_arrival

    def _mark_duplicates(self, t: np.ndarray, v: np.ndarray, codes: np.ndarray) -> None:
        cand = np.flatnonzero(codes == ACCEPTED)
        if len(cand) == 0:
            return
        # Only records that share a time with another candidate or a remembered record can be
        # duplicates; the remembered ones (tail and pending) hold every accepted record at or
        # above the watermark, which is all a non-late arrival can repeat.
        mem_t = np.concatenate((self.t, self.pend_t))
        mem_v = np.concatenate((self.v, self.pend_v))
        all_t = np.concatenate((mem_t, t[cand]))
        order = np.argsort(all_t, kind="stable")  # memory first, then arrivals in arrival order
        sorted_t = all_t[order]
        same_as_prev = np.empty(len(sorted_t), dtype=bool)
        same_as_prev[0] = False
        np.equal(sorted_t[1:], sorted_t[:-1], out=same_as_prev[1:])
        if not same_as_prev.any():
            return
        tied = same_as_prev | np.concatenate((same_as_prev[1:], [False]))
        idx = order[tied]
        all_v = np.concatenate((mem_v, v[cand]))
        # among records of equal time and value, all but the first (memory or earliest) repeat
        sub = np.lexsort((idx, all_v[idx], all_t[idx]))
        st, sv, si = all_t[idx][sub], all_v[idx][sub], idx[sub]
        repeat = np.zeros(len(si), dtype=bool)
        repeat[1:] = (st[1:] == st[:-1]) & (sv[1:] == sv[:-1])
        dup_positions = si[repeat] - len(mem_t)
        codes[cand[dup_positions[dup_positions >= 0]]] = DUPLICATE

    def accept(self, t: np.ndarray, v: np.ndarray, pos: np.ndarray) -> None:
        """Add accepted records (arrival order) to pending and raise the largest time seen."""
        if len(t) == 0:
            return
        # the first of equal largest times (argmax), so that -0.0 and 0.0 resolve one way
        self.max_t = max(self.max_t, float(t[np.argmax(t)]))
        if len(self.pend_t) == 0:
            order = np.argsort(t, kind="stable")
            self.pend_t, self.pend_v, self.pend_pos = t[order], v[order], pos[order]
            return
        all_t = np.concatenate((self.pend_t, t))
        order = np.argsort(all_t, kind="stable")  # pending arrived first: ties keep arrival order
        self.pend_t = all_t[order]
        self.pend_v = np.concatenate((self.pend_v, v))[order]
        self.pend_pos = np.concatenate((self.pend_pos, pos))[order]

    def release(self, disorder_ms: float) -> None:
        """Move the pending records at or below the watermark to the released tail."""
        if self.finished:
            k = len(self.pend_t)
        else:
            k = int(np.searchsorted(self.pend_t, self.watermark(disorder_ms), side="right"))
        if k == 0:
            return
        self.t = np.concatenate((self.t, self.pend_t[:k]))
        self.v = np.concatenate((self.v, self.pend_v[:k]))
        self.pos = np.concatenate((self.pos, self.pend_pos[:k]))
        self.pend_t, self.pend_v, self.pend_pos = (
            self.pend_t[k:],
            self.pend_v[k:],
            self.pend_pos[k:],
        )
        self.n_released += k

    def prune(self, threshold: float) -> None:
        """Drop tail records below `threshold` but the last of them.

        Every later lookup into this series asks for a time ≥ threshold, and the answer to a
        "last record at or before" lookup may be the last record below it.
        """
        keep_from = int(np.searchsorted(self.t, threshold, side="left")) - 1
        keep_from = min(keep_from, len(self.t) - 1)
        if keep_from <= 0:
            return
        self.head_prev_t = float(self.t[keep_from - 1])
        self.t = self.t[keep_from:]
        self.v = self.v[keep_from:]
        self.pos = self.pos[keep_from:]
