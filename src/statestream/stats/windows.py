"""Event-time windows of one power series: levels per tumbling window, duty cycle per sliding one.

`SeriesWindows` is the whole state of a series (a handful of open windows and panes plus the
largest event time seen); `process` takes the series' next records in arrival order and says
which are late and which windows to emit. The results do not depend on how the records are cut
into calls, nor on an export/restore between calls: a record is judged against the records that
arrived before it, one by one.

>>> spec = StatsSpec(out_of_orderness_ms=0, allowed_lateness_ms=0)
>>> series = SeriesWindows(spec)
>>> step = series.process(np.arange(0, 61_000, 1_000.0), np.full(61, 20_000.0))
>>> step.level_starts.tolist(), step.level_seconds[0].tolist()  # 0–59 s closed by the one at 60 s
([0], [0.0, 0.0, 0.0, 0.0, 60.0])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from statestream.errors import StatestreamError
from statestream.stats.spec import LEVEL_LABELS, StatsSpec, is_high, power_levels

FORMAT_VERSION = 1.0
_HEADER = 7  # version, window, duty window, slide, max time, number of windows, number of panes
_EMPTY_STARTS = np.empty(0, dtype=np.int64)


class StatsStateError(StatestreamError):
    """Stored window state cannot be read, or was written with other window settings."""


@dataclass(frozen=True)
class SeriesStep:
    """What one call of `SeriesWindows.process` decided.

    `late` and `watermark` are per input record: whether it was late, and the watermark it met.
    The emitted windows: tumbling level windows (start, seconds per level) and sliding duty-cycle
    windows (start, share of the window's length at high power). Window starts are epoch ms.
    """

    late: np.ndarray
    watermark: np.ndarray
    level_starts: np.ndarray
    level_seconds: np.ndarray
    duty_starts: np.ndarray
    duty_cycles: np.ndarray


class SeriesWindows:
    """The open windows of one power series and its largest event time (see `StatsSpec`)."""

    def __init__(self, spec: StatsSpec) -> None:
        self.spec = spec
        self.max_time = -np.inf
        self.level_starts = _EMPTY_STARTS
        self.level_counts = np.empty((0, len(LEVEL_LABELS)), dtype=np.int64)  # records per level
        self.pane_starts = _EMPTY_STARTS  # panes of one slide; a duty window is a run of panes
        self.pane_high = _EMPTY_STARTS  # records at high power per pane
        self.pane_records = _EMPTY_STARTS

    @property
    def watermark(self) -> float:
        """Largest event time seen minus the allowed out-of-orderness (−inf before any record)."""
        return self.max_time - self.spec.out_of_orderness_ms

    @property
    def open_windows(self) -> int:
        """Level windows plus duty panes held in the state."""
        return len(self.level_starts) + len(self.pane_starts)

    def process(self, times: np.ndarray, power_w: np.ndarray) -> SeriesStep:
        """Take the next records (event times in ms, power in W) in arrival order."""
        times = np.asarray(times, dtype=np.float64)
        power_w = np.asarray(power_w, dtype=np.float64)
        spec = self.spec
        late, met = judged(times, self.max_time, spec.out_of_orderness_ms, spec.allowed_lateness_ms)
        accepted_t, accepted_p = times[~late], power_w[~late]
        old_watermark = self.watermark
        if len(accepted_t):
            self.max_time = max(self.max_time, float(accepted_t.max()))
        changed_windows = self._add_levels(accepted_t, accepted_p)
        before = (self.pane_starts, self.pane_high, self.pane_records)
        self._add_panes(accepted_t, accepted_p)
        level_starts, level_seconds = self._levels_to_emit(old_watermark, changed_windows)
        duty_starts, duty_cycles = self._duty_to_emit(old_watermark, before)
        self._purge()
        return SeriesStep(late, met, level_starts, level_seconds, duty_starts, duty_cycles)

    def _add_levels(self, times: np.ndarray, power_w: np.ndarray) -> np.ndarray:
        starts = _floor(times, self.spec.window_ms)
        merged, index = np.unique(np.concatenate((self.level_starts, starts)), return_inverse=True)
        counts = np.zeros((len(merged), len(LEVEL_LABELS)), dtype=np.int64)
        old = len(self.level_starts)
        counts[index[:old]] = self.level_counts
        np.add.at(counts, (index[old:], power_levels(power_w, self.spec)), 1)
        self.level_starts, self.level_counts = merged, counts
        return np.unique(starts)

    def _add_panes(self, times: np.ndarray, power_w: np.ndarray) -> None:
        starts = _floor(times, self.spec.duty_slide_ms)
        merged, index = np.unique(np.concatenate((self.pane_starts, starts)), return_inverse=True)
        high = np.zeros(len(merged), dtype=np.int64)
        records = np.zeros(len(merged), dtype=np.int64)
        old = len(self.pane_starts)
        high[index[:old]] = self.pane_high
        records[index[:old]] = self.pane_records
        np.add.at(high, index[old:], is_high(power_w, self.spec))
        np.add.at(records, index[old:], 1)
        self.pane_starts, self.pane_high, self.pane_records = merged, high, records

    def _levels_to_emit(
        self, old_watermark: float, changed: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Windows the watermark has just passed, and passed ones that records changed."""
        ends = self.level_starts + self.spec.window_ms
        emit = (ends <= self.watermark) & (
            (ends > old_watermark) | np.isin(self.level_starts, changed)
        )
        seconds = self.level_counts[emit] * self.spec.sampling_interval_s
        return self.level_starts[emit], seconds

    def _duty_to_emit(
        self, old_watermark: float, before: tuple[np.ndarray, np.ndarray, np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Duty windows with records that the watermark has just passed, or whose value or
        existence the records of this call changed."""
        length, slide = self.spec.duty_window_ms, self.spec.duty_slide_ms
        back = slide * np.arange(self.spec.slides_per_duty_window, dtype=np.int64)
        starts = np.unique((self.pane_starts[:, None] - back[None, :]).ravel())
        starts = starts[starts + length <= self.watermark]
        high, records = _window_sums(
            self.pane_starts, self.pane_high, self.pane_records, starts, length
        )
        old_high, old_records = _window_sums(*before, starts, length)
        emit = (records > 0) & (
            (starts + length > old_watermark) | (old_records == 0) | (high != old_high)
        )
        return starts[emit], high[emit] * self.spec.sampling_interval_s / (length / 1000.0)

    def _purge(self) -> None:
        """Forget windows (and panes) that no record can change any more."""
        horizon = self.watermark - self.spec.allowed_lateness_ms
        keep = self.level_starts + self.spec.window_ms > horizon
        self.level_starts, self.level_counts = self.level_starts[keep], self.level_counts[keep]
        keep = self.pane_starts + self.spec.duty_window_ms > horizon
        self.pane_starts = self.pane_starts[keep]
        self.pane_high, self.pane_records = self.pane_high[keep], self.pane_records[keep]

    def to_bytes(self) -> bytes:
        """The state as bytes (float64 values), for Spark's state store."""
        spec = self.spec
        header = [FORMAT_VERSION, spec.window_ms, spec.duty_window_ms, spec.duty_slide_ms]
        header += [self.max_time, len(self.level_starts), len(self.pane_starts)]
        parts = (
            np.array(header, dtype=np.float64),
            self.level_starts,
            self.level_counts.ravel(),
            self.pane_starts,
            self.pane_high,
            self.pane_records,
        )
        return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts]).tobytes()

    @classmethod
    def from_bytes(cls, spec: StatsSpec, data: bytes) -> SeriesWindows:
        """The state `to_bytes` wrote; the windows of `spec` must be those it was written with."""
        if len(data) % 8 or len(data) < 8 * _HEADER:
            raise StatsStateError(f"stored window state of {len(data)} bytes is not readable")
        values = np.frombuffer(data, dtype=np.float64)
        version, window, duty_window, slide, max_time, n, m = values[:_HEADER]
        if version != FORMAT_VERSION:
            raise StatsStateError(f"stored window state has format {version}, not {FORMAT_VERSION}")
        if (window, duty_window, slide) != (
            spec.window_ms,
            spec.duty_window_ms,
            spec.duty_slide_ms,
        ):
            raise StatsStateError(
                "the checkpoint holds windows of other lengths than the settings "
                f"(window {window:.0f} ms, duty window {duty_window:.0f} ms every {slide:.0f} ms); "
                "start from a new checkpoint"
            )
        n, m, levels = int(n), int(m), len(LEVEL_LABELS)
        if len(values) != _HEADER + n * (1 + levels) + 3 * m:
            raise StatsStateError("stored window state is truncated or corrupt")
        series = cls(spec)
        series.max_time = float(max_time)
        at = _HEADER
        series.level_starts = values[at : at + n].astype(np.int64)
        at += n
        series.level_counts = values[at : at + n * levels].reshape(n, levels).astype(np.int64)
        at += n * levels
        series.pane_starts = values[at : at + m].astype(np.int64)
        series.pane_high = values[at + m : at + 2 * m].astype(np.int64)
        series.pane_records = values[at + 2 * m : at + 3 * m].astype(np.int64)
        return series


def judged(
    times: np.ndarray, max_time: float, out_of_orderness_ms: float, allowed_lateness_ms: float
) -> tuple[np.ndarray, np.ndarray]:
    """A series' next records (event times, arrival order) judged one by one: whether each is
    late, and the watermark it met (the largest time before it, from `max_time` on, minus the
    out-of-orderness). Late: older than that watermark minus the allowed lateness.

    >>> late, met = judged(np.array([10.0, 2.0, 7.0]), 5.0, 1.0, 2.0)
    >>> late.tolist(), met.tolist()
    ([False, True, False], [4.0, 9.0, 9.0])
    """
    seen_before = np.maximum.accumulate(np.concatenate(([max_time], times)))[:-1]
    met = seen_before - out_of_orderness_ms
    return times < met - allowed_lateness_ms, met


def _floor(times: np.ndarray, length_ms: int) -> np.ndarray:
    """The start (epoch ms) of the window of `length_ms` that holds each time."""
    return (np.floor(times / length_ms) * length_ms).astype(np.int64)


def _window_sums(
    pane_starts: np.ndarray,
    pane_high: np.ndarray,
    pane_records: np.ndarray,
    starts: np.ndarray,
    length: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Records at high power and all records of the windows [start, start + length)."""
    first = np.searchsorted(pane_starts, starts, side="left")
    end = np.searchsorted(pane_starts, starts + length, side="left")
    high_cum = np.concatenate(([0], np.cumsum(pane_high)))
    records_cum = np.concatenate(([0], np.cumsum(pane_records)))
    return high_cum[end] - high_cum[first], records_cum[end] - records_cum[first]
