"""A plain-Python reference of the quantity statistics of one series, to check the engine against.

It shares nothing with `quantity_stats.windows` but the spec: records are taken one at a time,
each window is a dict, and the rules of `QuantitySpec` are applied as written. Windows are never
forgotten: a record that could reach a window the engine has purged is late by the same rule.

>>> spec = QuantitySpec(window_ms=1_000, out_of_orderness_ms=0, allowed_lateness_ms=0)
>>> outcome = reference_quantity_stats([0.0, 500.0, 1_000.0, 10.0], [3.0, 1.0, 9.0, 4.0], spec)
>>> outcome.late
[False, False, False, True]
>>> outcome.emitted
[WindowResult(start=0, count=2, min=1.0, max=3.0, mean=2.0, last=1.0)]
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from statestream.queries.quantity_stats.spec import QuantitySpec


@dataclass(frozen=True)
class WindowResult:
    """One emitted window: its start (epoch ms) and statistics."""

    start: int
    count: int
    min: float
    max: float
    mean: float
    last: float


@dataclass(frozen=True)
class ReferenceOutcome:
    """Per record whether it was late and the watermark it met; every emission, in order."""

    late: list[bool]
    watermarks: list[float]
    emitted: list[WindowResult]


def reference_quantity_stats(
    times: Sequence[float], values: Sequence[float], spec: QuantitySpec
) -> ReferenceOutcome:
    """The outcome of one series' records (event times in ms, values) in arrival order."""
    max_time = -math.inf
    windows: dict[int, dict[str, float]] = {}
    starts: list[int] = []  # the windows' starts, sorted
    outcome = ReferenceOutcome([], [], [])
    for t, v in zip(times, values, strict=True):
        met = max_time - spec.out_of_orderness_ms
        late = t < met - spec.allowed_lateness_ms
        outcome.late.append(late)
        outcome.watermarks.append(met)
        if late:
            continue
        start = int(t // spec.window_ms) * spec.window_ms
        if start not in windows:
            windows[start] = _empty_window()
            bisect.insort(starts, start)
        _add(windows[start], t, v)
        max_time = max(max_time, t)
        for s in _emitted(starts, start, met, max_time - spec.out_of_orderness_ms, spec.window_ms):
            outcome.emitted.append(_result(s, windows[s]))
    return outcome


def _emitted(starts: list[int], start: int, met: float, now: float, length: int) -> list[int]:
    """In order, the starts `s` of the windows a record of window `start` emits: the window ends
    (`s + length`) by the watermark `now`, and the watermark passed its end with this record
    (it `met` a watermark before the end) or the record is in it. A bisection of `starts` for
    the ends in (met, now], the rule for each window as written."""
    first = bisect.bisect_right(starts, met - length)  # the first end after `met`
    passed = starts[first : bisect.bisect_right(starts, now - length)]
    if start + length <= now and start not in passed:
        bisect.insort(passed, start)  # its own window, already closed: a new result
    return passed


def _empty_window() -> dict[str, float]:
    return {"count": 0, "min": math.inf, "max": -math.inf, "sum": 0.0, "t": -math.inf, "last": 0.0}


def _add(window: dict[str, float], t: float, v: float) -> None:
    window["count"] += 1
    window["min"] = min(window["min"], v)
    window["max"] = max(window["max"], v)
    window["sum"] += v
    if t >= window["t"]:  # the greatest time; on a tie, the later record
        window["t"], window["last"] = t, v


def _result(start: int, window: dict[str, float]) -> WindowResult:
    count = int(window["count"])
    return WindowResult(
        start, count, window["min"], window["max"], window["sum"] / count, window["last"]
    )
