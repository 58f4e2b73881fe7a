"""The end-to-end latency of the join's results, as the dashboard sees them: a live histogram.

A pair on `machine.out` carries the event times of its two records (`left`, `right`); it can be
made only once the later of them is in, so its latency is the moment the dashboard reads it (its
consumer reads `read_committed`: the moment any reader can see the pair) minus that later event
time (`pair_latency_s`). With event times that follow the clock (the simulators, a replay with
`--shift-time`), that is the time from a machine's measurement to a result one can see; the
records of a replay without it are as old as their recording, which shows as such.

Latencies are counted in fixed, log-spaced buckets (1, 2 and 5 of each decade, from 10 ms to
500 s, plus one below and one above) over the last `window_s` seconds (`LatencyHistogram`).

    >>> histogram = LatencyHistogram(window_s=60)
    >>> for latency in (0.3, 0.4, 1.5):
    ...     histogram.add(latency, now=100.0)
    >>> figures = histogram.snapshot(now=110.0)
    >>> figures["labels"][bucket_of(0.3)], figures["count"], figures["labels"][figures["p50"]]
    ('200–500 ms', 3, '200–500 ms')
    >>> histogram.snapshot(now=161.0)["count"]  # older than the window
    0
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

EDGES_S: tuple[float, ...] = tuple(
    m * 10.0**e for e in range(-2, 3) for m in (1, 2, 5)
)  # 0.01, 0.02, 0.05, 0.1, … 500
WINDOW_S = 60.0


def bucket_of(latency_s: float) -> int:
    """The bucket of a latency: 0 below 10 ms (a clock ahead of the dashboard's included), then
    one per `EDGES_S` interval, the last one 500 s and above.

    >>> bucket_of(0.005), bucket_of(0.01), bucket_of(0.015), bucket_of(499.0), bucket_of(9e9)
    (0, 1, 1, 14, 15)
    """
    return bisect_right(EDGES_S, latency_s)


def _duration(seconds: float) -> str:
    return f"{seconds * 1000:g} ms" if seconds < 1 else f"{seconds:g} s"


def bucket_labels() -> list[str]:
    """A label per bucket: "< 10 ms", "10–20 ms", … "200–500 s", "≥ 500 s".

    >>> labels = bucket_labels()
    >>> labels[0], labels[1], labels[6], labels[-1], len(labels) == len(EDGES_S) + 1
    ('< 10 ms', '10–20 ms', '0.5–1 s', '≥ 500 s', True)
    """
    labels = [f"< {_duration(EDGES_S[0])}"]
    for low, high in pairwise(EDGES_S):
        unit = " ms" if high < 1 else " s"
        scale = 1000 if high < 1 else 1
        labels.append(f"{low * scale:g}–{high * scale:g}{unit}")
    labels.append(f"≥ {_duration(EDGES_S[-1])}")
    return labels


def quantile_bucket(counts: Sequence[int], q: float) -> int | None:
    """The bucket that holds the `q` quantile of the latencies counted in `counts`; None when
    nothing is counted.

    >>> quantile_bucket([0, 5, 4, 1], 0.5), quantile_bucket([0, 5, 4, 1], 0.99)
    (1, 3)
    """
    total = sum(counts)
    if total == 0:
        return None
    rank = max(1, math.ceil(q * total))
    seen = 0
    for index, count in enumerate(counts):
        seen += count
        if seen >= rank:
            return index
    return len(counts) - 1


def pair_latency_s(pair: Mapping[str, Any], now_ms: float) -> float | None:
    """Seconds from the later event time of a pair's two records to `now_ms`; None when the
    pair does not carry both times.

    >>> pair = {"left": {"phenomenonTime": 1000}, "right": {"phenomenonTime": 1500}}
    >>> pair_latency_s(pair, now_ms=2250)
    0.75
    """
    times = []
    for side in ("left", "right"):
        record = pair.get(side)
        time = record.get("phenomenonTime") if isinstance(record, dict) else None
        if isinstance(time, bool) or not isinstance(time, int | float):
            return None
        times.append(float(time))
    return (now_ms - max(times)) / 1000.0


class LatencyHistogram:
    """Latencies counted per bucket over a sliding window of `window_s` seconds, in slots of
    `slot_s` (`now` is any clock in seconds, the same for every call)."""

    def __init__(self, window_s: float = WINDOW_S, slot_s: float = 1.0) -> None:
        self.window_s = window_s
        self.slot_s = slot_s
        self._slots: deque[tuple[float, list[int]]] = deque()  # (slot start, counts)

    def add(self, latency_s: float, now: float) -> None:
        start = math.floor(now / self.slot_s) * self.slot_s
        if not self._slots or self._slots[-1][0] != start:
            self._slots.append((start, [0] * (len(EDGES_S) + 1)))
        self._slots[-1][1][bucket_of(latency_s)] += 1

    def counts(self, now: float) -> list[int]:
        """The count of each bucket over the last `window_s` seconds."""
        while self._slots and self._slots[0][0] + self.slot_s <= now - self.window_s:
            self._slots.popleft()
        totals = [0] * (len(EDGES_S) + 1)
        for _, counts in self._slots:
            for index, count in enumerate(counts):
                totals[index] += count
        return totals

    def snapshot(self, now: float) -> dict[str, Any]:
        """What the health panel draws: the buckets' labels and counts, how many latencies
        they hold, the window, and the buckets of the median and the 99th percentile."""
        counts = self.counts(now)
        return {
            "labels": bucket_labels(),
            "counts": counts,
            "count": sum(counts),
            "window_s": self.window_s,
            "p50": quantile_bucket(counts, 0.5),
            "p99": quantile_bucket(counts, 0.99),
        }
