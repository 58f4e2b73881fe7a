"""Event-time windows of one numeric series: count, min, max, mean and last value per window.

`QuantityWindows` is the whole state of a series (its open windows plus the largest event time
seen); `process` takes the series' next records in arrival order and says which are late and
which windows to emit. The results do not depend on how the records are cut into calls, nor on
an export/restore between calls, to the last bit: a record is judged against the records that
arrived before it, and the sums are accumulated record by record in arrival order.

>>> spec = QuantitySpec(window_ms=1_000, out_of_orderness_ms=0, allowed_lateness_ms=0)
>>> series = QuantityWindows(spec)
>>> step = series.process(np.array([0.0, 500.0, 500.0, 1_000.0]), np.array([3.0, 1.0, 2.0, 9.0]))
>>> step.starts.tolist(), step.counts.tolist(), step.means.tolist(), step.lasts.tolist()
([0], [3], [2.0], [2.0])
>>> series.open_windows  # the window [0, 1 s) can change no more: only [1 s, 2 s) is held
1
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from statestream.errors import StatestreamError
from statestream.queries.quantity_stats.spec import QuantitySpec
from statestream.stats.windows import judged

FORMAT_VERSION = 1.0
_HEADER = 4  # version, window, max time, number of windows
_COLUMNS = 7  # per window: start, count, min, max, sum, last value, last time


class QuantityStateError(StatestreamError):
    """Stored window state cannot be read, or was written with another window length."""


@dataclass(frozen=True)
class QuantityStep:
    """What one call of `QuantityWindows.process` decided.

    `late` and `watermark` are per input record: whether it was late, and the watermark it met.
    The emitted windows: their starts (epoch ms), counts, mins, maxs, means and last values.
    """

    late: np.ndarray
    watermark: np.ndarray
    starts: np.ndarray
    counts: np.ndarray
    mins: np.ndarray
    maxs: np.ndarray
    means: np.ndarray
    lasts: np.ndarray


class QuantityWindows:
    """The open windows of one numeric series and its largest event time (see `QuantitySpec`)."""

    def __init__(self, spec: QuantitySpec) -> None:
        self.spec = spec
        self.max_time = -np.inf
        self.starts = np.empty(0, dtype=np.int64)
        self.counts = np.empty(0, dtype=np.int64)
        self.mins = np.empty(0)
        self.maxs = np.empty(0)
        self.sums = np.empty(0)
        self.lasts = np.empty(0)  # the value of the greatest event time (ties: the later record)
        self.last_times = np.empty(0)

    @property
    def watermark(self) -> float:
        """Largest event time seen minus the allowed out-of-orderness (−inf before any record)."""
        return self.max_time - self.spec.out_of_orderness_ms

    @property
    def open_windows(self) -> int:
        """Windows held in the state."""
        return len(self.starts)

    @np.errstate(over="ignore", invalid="ignore")  # a sum beyond the float range is ±inf or nan
    def process(self, times: np.ndarray, values: np.ndarray) -> QuantityStep:
        """Take the next records (event times in ms, finite values) in arrival order."""
        times = np.asarray(times, dtype=np.float64)
        values = np.asarray(values, dtype=np.float64)
        spec = self.spec
        late, met = judged(times, self.max_time, spec.out_of_orderness_ms, spec.allowed_lateness_ms)
        accepted_t, accepted_v = times[~late], values[~late]
        old_watermark = self.watermark
        if len(accepted_t):
            self.max_time = max(self.max_time, float(accepted_t.max()))
        changed = self._add(accepted_t, accepted_v)
        emit = self._to_emit(old_watermark, changed)
        step = QuantityStep(
            late,
            met,
            self.starts[emit],
            self.counts[emit],
            self.mins[emit],
            self.maxs[emit],
            self.sums[emit] / self.counts[emit],
            self.lasts[emit],
        )
        self._purge()
        return step

    def _add(self, times: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Add accepted records to their windows one by one, in arrival order; the starts of the
        windows they changed."""
        starts = (times // self.spec.window_ms).astype(np.int64) * self.spec.window_ms
        merged, index = np.unique(np.concatenate((self.starts, starts)), return_inverse=True)
        old, new = index[: len(self.starts)], index[len(self.starts) :]
        size = len(merged)
        self.starts = merged
        self.counts = _spread(self.counts, old, size, 0)
        self.mins = _spread(self.mins, old, size, np.inf)
        self.maxs = _spread(self.maxs, old, size, -np.inf)
        self.sums = _spread(self.sums, old, size, 0.0)
        self.lasts = _spread(self.lasts, old, size, 0.0)
        self.last_times = _spread(self.last_times, old, size, -np.inf)
        np.add.at(self.counts, new, 1)
        np.minimum.at(self.mins, new, values)
        np.maximum.at(self.maxs, new, values)
        np.add.at(self.sums, new, values)  # from the stored sum, record by record
        self._take_lasts(new, times, values)
        return np.unique(starts)

    def _take_lasts(self, windows: np.ndarray, times: np.ndarray, values: np.ndarray) -> None:
        """Per window, the record of the greatest time (ties: the later one) replaces the stored
        last value when its time is not below the stored one."""
        if not len(windows):
            return
        order = np.lexsort((np.arange(len(windows)), times, windows))  # window, time, arrival
        in_order = windows[order]
        final = order[np.append(in_order[1:] != in_order[:-1], True)]  # one per window
        window, time, value = windows[final], times[final], values[final]
        newer = time >= self.last_times[window]
        self.last_times[window[newer]] = time[newer]
        self.lasts[window[newer]] = value[newer]

    def _to_emit(self, old_watermark: float, changed: np.ndarray) -> np.ndarray:
        """Windows the watermark has just passed, and passed ones that records changed."""
        ends = self.starts + self.spec.window_ms
        return (ends <= self.watermark) & ((ends > old_watermark) | np.isin(self.starts, changed))

    def _purge(self) -> None:
        """Forget windows that no record can change any more."""
        horizon = self.watermark - self.spec.allowed_lateness_ms
        keep = self.starts + self.spec.window_ms > horizon
        self.starts, self.counts = self.starts[keep], self.counts[keep]
        self.mins, self.maxs, self.sums = self.mins[keep], self.maxs[keep], self.sums[keep]
        self.lasts, self.last_times = self.lasts[keep], self.last_times[keep]

    def to_bytes(self) -> bytes:
        """The state as bytes (float64 values), for Spark's state store."""
        header = [FORMAT_VERSION, self.spec.window_ms, self.max_time, len(self.starts)]
        columns = (self.starts, self.counts, self.mins, self.maxs, self.sums, self.lasts)
        parts = [np.array(header), *columns, self.last_times]
        return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts]).tobytes()

    @classmethod
    def from_bytes(cls, spec: QuantitySpec, data: bytes) -> QuantityWindows:
        """The state `to_bytes` wrote; the window length of `spec` must be the one it was
        written with."""
        values = _read_values(data)
        version, window, max_time, n = values[:_HEADER]
        if version != FORMAT_VERSION:
            raise QuantityStateError(
                f"stored window state has format {version}, not {FORMAT_VERSION}; "
                "start from a new checkpoint"
            )
        if window != spec.window_ms:
            raise QuantityStateError(
                f"the checkpoint holds windows of {window:.0f} ms, the settings {spec.window_ms} "
                "ms; start from a new checkpoint"
            )
        if not (n >= 0 and n.is_integer() and len(values) == _HEADER + _COLUMNS * int(n)):
            raise QuantityStateError(
                "stored window state is truncated or corrupt; start from a new checkpoint"
            )
        columns = values[_HEADER:].reshape(_COLUMNS, int(n)).copy()  # writable
        series = cls(spec)
        series.max_time = float(max_time)
        series.starts, series.counts = columns[0].astype(np.int64), columns[1].astype(np.int64)
        series.mins, series.maxs, series.sums = columns[2], columns[3], columns[4]
        series.lasts, series.last_times = columns[5], columns[6]
        return series


def _spread(column: np.ndarray, rows: np.ndarray, size: int, fill: float) -> np.ndarray:
    """A column of `size` rows filled with `fill`, holding `column` at `rows`."""
    out = np.full(size, fill, dtype=column.dtype)
    out[rows] = column
    return out


def _read_values(data: bytes) -> np.ndarray:
    """The float64 values of stored state, at least a header's worth."""
    if len(data) % 8 or len(data) < 8 * _HEADER:
        raise QuantityStateError(
            f"stored window state of {len(data)} bytes is not readable; start from a new checkpoint"
        )
    return np.frombuffer(data, dtype=np.float64)
