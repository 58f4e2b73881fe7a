"""Event-time windows of a group of cells: early, final and late-updated results, late positions.

`CellWindows` holds the open windows of a group of cells (window start → `WindowCells`). Each
`process` call takes the group's next positions with a fix and the watermark of the moment
(`BatchWatermark`: the largest event time seen before the batch, minus the disorder), and says:

- which positions are **late**: their window's end + allowed lateness is not after the watermark
  (its state is gone); they change nothing;
- the **results** to emit, one per (window, cell): every cell a batch changed (`final` false
  while the watermark is before the window's end: an early result; true after: a late update),
  and every cell of a window the watermark has just passed (the on-time final result);
- which windows to **drop**: those whose end + allowed lateness the watermark has reached.

>>> spec = GeoSpec(window_ms=60_000, disorder_ms=0, allowed_lateness_ms=60_000)
>>> windows = CellWindows(spec)
>>> step = windows.process(Positions.of([10_000, 20_000], [7, 7], [1, 2]), watermark=0)
>>> step.results.final.tolist(), step.results.positions.tolist()   # early result
([False], [2])
>>> step = windows.process(Positions.of([65_000], [7], [1]), watermark=61_000)
>>> step.results.window_start.tolist(), step.results.final.tolist()  # 0–60 s final, 60–120 early
([0, 60000], [True, False])
>>> step = windows.process(Positions.of([30_000], [7], [3]), watermark=119_000)
>>> step.results.vehicles.tolist(), step.results.final.tolist()  # a late update within lateness
([3], [True])
>>> windows.process(Positions.of([30_000], [7], [4]), watermark=120_000).late.tolist()
[True]
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from statestream.geo.spec import GeoSpec
from statestream.geo.window_cells import CellResults, WindowCells

NO_WATERMARK = -(2**63)


@dataclass(frozen=True)
class Positions:
    """Positions with a fix, in arrival order: event time (ms), cell, vehicle id, speed, delay."""

    t: np.ndarray  # int64 epoch ms
    cell: np.ndarray  # int64 H3 cell
    vehicle: np.ndarray  # int64: any integer that identifies a vehicle
    speed: np.ndarray  # float64 m/s, NaN where missing
    delay: np.ndarray  # float64 s, NaN where missing

    @classmethod
    def of(cls, t, cell, vehicle, speed=None, delay=None) -> Positions:
        """Positions of plain sequences (speed and delay NaN when not given)."""
        count = len(t)
        missing = np.full(count, np.nan)
        return cls(
            np.asarray(t, dtype=np.int64),
            np.asarray(cell, dtype=np.int64),
            np.asarray(vehicle, dtype=np.int64),
            missing if speed is None else np.asarray(speed, dtype=np.float64),
            missing if delay is None else np.asarray(delay, dtype=np.float64),
        )

    def __len__(self) -> int:
        return len(self.t)

    def take(self, mask: np.ndarray) -> Positions:
        return Positions(
            self.t[mask], self.cell[mask], self.vehicle[mask], self.speed[mask], self.delay[mask]
        )


@dataclass(frozen=True)
class WindowResults:
    """Results to emit, one per (window, cell), ordered by window start, then cell."""

    window_start: np.ndarray  # int64 epoch ms
    window_end: np.ndarray
    cell: np.ndarray
    vehicles: np.ndarray
    positions: np.ndarray
    mean_speed: np.ndarray  # NaN: no position had a speed
    mean_delay: np.ndarray
    final: np.ndarray  # bool

    def __len__(self) -> int:
        return len(self.cell)


@dataclass(frozen=True)
class GeoStep:
    """What one `CellWindows.process` call decided (see the module)."""

    results: WindowResults
    late: np.ndarray  # bool per input position
    changed: list[int]  # starts of windows whose state changed (to store)
    dropped: list[int]  # starts of windows whose state is gone (to delete)


class CellWindows:
    """The open windows of a group of cells, by window start (ms)."""

    def __init__(self, spec: GeoSpec, windows: dict[int, WindowCells] | None = None) -> None:
        self.spec = spec
        self.windows: dict[int, WindowCells] = dict(windows or {})

    def process(self, positions: Positions, watermark: int) -> GeoStep:
        """Add the positions that are not late, and advance to `watermark` (see the module)."""
        window_ms = self.spec.window_ms
        starts = positions.t // window_ms * window_ms
        late = starts + window_ms + self.spec.allowed_lateness_ms <= watermark
        accepted = positions.take(~late)
        accepted_starts = starts[~late]
        parts: list[CellResults] = []
        emitted: list[tuple[int, bool]] = []
        changed: set[int] = set()
        for start in np.unique(accepted_starts).tolist():
            here = accepted.take(accepted_starts == start)
            window = self.windows.get(start, WindowCells.empty())
            window = window.merge(here.cell, here.vehicle, here.speed, here.delay)
            final = start + window_ms <= watermark
            if final and not window.finalized:
                parts.append(window.results())  # on time final (all cells) or a late first
            else:
                parts.append(window.results(np.unique(here.cell)))
            window = _finalized(window) if final else window
            self.windows[start] = window
            emitted.append((start, final))
            changed.add(start)
        for start in sorted(self.windows):
            window = self.windows[start]
            if start in changed or window.finalized or start + window_ms > watermark:
                continue
            parts.append(window.results())  # the on-time final of a window without new positions
            emitted.append((start, True))
            self.windows[start] = _finalized(window)
            changed.add(start)
        dropped = self.drop(watermark)
        return GeoStep(
            _window_results(parts, emitted, window_ms),
            late,
            sorted(changed - set(dropped)),
            dropped,
        )

    def drop(self, watermark: int) -> list[int]:
        """Forget the windows whose end + allowed lateness the watermark has reached."""
        horizon = self.spec.window_ms + self.spec.allowed_lateness_ms
        gone = sorted(start for start in self.windows if start + horizon <= watermark)
        for start in gone:
            del self.windows[start]
        return gone

    @property
    def open_windows(self) -> int:
        return len(self.windows)


class BatchWatermark:
    """The watermark of a sequence of batches: before each, the largest event time seen in the
    earlier ones minus the disorder (it never goes back). Spark's query watermark does the same
    per micro-batch; this is its model for tests and the reference."""

    def __init__(self, disorder_ms: int) -> None:
        self.disorder_ms = disorder_ms
        self.value = NO_WATERMARK

    def after(self, times: np.ndarray) -> int:
        """Move past a batch with event times `times`; returns the next batch's watermark."""
        if len(times):
            self.value = max(self.value, int(np.max(times)) - self.disorder_ms)
        return self.value


def _finalized(window: WindowCells) -> WindowCells:
    return replace(window, finalized=True)


def _window_results(
    parts: list[CellResults], emitted: list[tuple[int, bool]], window_ms: int
) -> WindowResults:
    """The results of the windows in `emitted` (start, final), sorted by start then cell."""
    sizes = [len(part.cell) for part in parts]
    starts = np.repeat(np.array([s for s, _ in emitted], dtype=np.int64), sizes)
    finals = np.repeat(np.array([f for _, f in emitted], dtype=bool), sizes)

    def column(name: str, dtype) -> np.ndarray:
        if not parts:
            return np.empty(0, dtype=dtype)
        return np.concatenate([getattr(part, name) for part in parts]).astype(dtype)

    cell = column("cell", np.int64)
    order = np.lexsort((cell, starts))
    return WindowResults(
        window_start=starts[order],
        window_end=starts[order] + window_ms,
        cell=cell[order],
        vehicles=column("vehicles", np.int64)[order],
        positions=column("positions", np.int64)[order],
        mean_speed=column("mean_speed", np.float64)[order],
        mean_delay=column("mean_delay", np.float64)[order],
        final=finals[order],
    )
