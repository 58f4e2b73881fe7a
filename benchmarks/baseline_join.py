"""The baseline: a straightforward per-record pure-Python implementation of the same spec.

One record at a time, as the seed's LocalStreamBuffer works, but complete: each released record
looks up its next and previous complement with `bisect`, records wait in sorted queues for a
missing next complement or for the other watermark to pass them, and a set of emitted pairs keeps
the output exactly-once. It is what the vectorized engine is measured against.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Iterable

SIDES = ("left", "right")


class _Series:
    def __init__(self) -> None:
        self.times: list[float] = []  # released, in (time, arrival) order
        self.ids: list[int] = []
        self.pending: list[tuple[float, int, int]] = []  # (time, arrival, id), sorted
        self.max_t = -math.inf
        self.seen: set[tuple[float, float]] = set()
        self.waiting_next: deque[tuple[float, int]] = deque()  # released, no next complement yet
        self.waiting_prev: deque[tuple[float, int]] = deque()  # released, prev not yet certain
        self.arrivals = 0


class BaselineJoin:
    """Per-record complement join of one thing: `add` a record, get the pairs it made certain."""

    def __init__(self, disorder_ms: float = 0.0, tolerance_ms: float = math.inf) -> None:
        self.disorder_ms = disorder_ms
        self.tolerance_ms = tolerance_ms
        self.series = {side: _Series() for side in SIDES}
        self.times: dict[int, float] = {}
        self.emitted: set[tuple[int, int]] = set()
        self.late = 0
        self.duplicates = 0
        self.finished = False

    def _watermark(self, side: str) -> float:
        return math.inf if self.finished else self.series[side].max_t - self.disorder_ms

    def add(self, side: str, time: float, value: float, record_id: int) -> list[tuple[int, int]]:
        """Ingest one record; returns the new pairs as (left id, right id)."""
        s = self.series[side]
        if time < self._watermark(side):
            self.late += 1
            return []
        if (time, value) in s.seen:
            self.duplicates += 1
            return []
        s.seen.add((time, value))
        s.max_t = max(s.max_t, time)
        self.times[record_id] = time
        bisect.insort(s.pending, (time, s.arrivals, record_id))
        s.arrivals += 1
        out: list[tuple[int, int]] = []
        self._release(side, out)
        self._settle_prev(side, out)
        self._settle_prev(_other(side), out)
        return out

    def finish(self) -> list[tuple[int, int]]:
        """Declare the input finished; returns the pairs still pending."""
        self.finished = True
        out: list[tuple[int, int]] = []
        for side in SIDES:
            self._release(side, out)
        for side in SIDES:
            self._settle_prev(side, out)
        return out

    def _release(self, side: str, out: list[tuple[int, int]]) -> None:
        s, o = self.series[side], self.series[_other(side)]
        watermark = self._watermark(side)
        while s.pending and s.pending[0][0] <= watermark:
            time, _, rid = s.pending.pop(0)
            s.times.append(time)
            s.ids.append(rid)
            # this record is the next complement of every waiting record at or before it
            while o.waiting_next and o.waiting_next[0][0] <= time:
                self._emit(side, rid, o.waiting_next.popleft()[1], out)
            k = bisect.bisect_left(o.times, time)
            if k < len(o.times):
                self._emit(side, rid, o.ids[k], out)
            else:
                s.waiting_next.append((time, rid))
            s.waiting_prev.append((time, rid))

    def _settle_prev(self, side: str, out: list[tuple[int, int]]) -> None:
        """Pair the records of `side` whose previous complement just became certain.

        Called after both series released what their watermarks allow, so every record of the
        other series at or before a settled time is already released.
        """
        s, o = self.series[side], self.series[_other(side)]
        other_watermark = self._watermark(_other(side))
        while s.waiting_prev and s.waiting_prev[0][0] < other_watermark:
            time, rid = s.waiting_prev.popleft()
            k = bisect.bisect_right(o.times, time) - 1
            if k >= 0:
                self._emit(side, rid, o.ids[k], out)

    def _emit(self, side: str, rid: int, other_id: int, out: list[tuple[int, int]]) -> None:
        pair = (rid, other_id) if side == "left" else (other_id, rid)
        if pair in self.emitted:
            return
        if abs(self.times[pair[0]] - self.times[pair[1]]) > self.tolerance_ms:
            return
        self.emitted.add(pair)
        out.append(pair)


def _other(side: str) -> str:
    return "right" if side == "left" else "left"


def baseline_pairs(
    records: Iterable[tuple[str, float, float]],
    disorder_ms: float = 0.0,
    tolerance_ms: float = math.inf,
    finish: bool = True,
) -> list[tuple[int, int]]:
    """All pairs of one thing's records `(side, time_ms, value)`, ids being list positions."""
    join = BaselineJoin(disorder_ms, tolerance_ms)
    pairs: list[tuple[int, int]] = []
    for i, (side, time, value) in enumerate(records):
        pairs += join.add(side, time, value, i)
    if finish:
        pairs += join.finish()
    return pairs
