"""One window's aggregates of a group of cells: the state kept per (cell group, window).

`WindowCells` holds, for each cell that has positions in the window, the number of positions
and the sums and counts of speed and delay (a missing value counts in neither), and the set of
(cell, vehicle) pairs seen, so the number of distinct vehicles stays exact across batches. It
is stored as bytes (`to_bytes` / `from_bytes`): eight-byte columns after a short header.

>>> cells = WindowCells.empty()
>>> cells = cells.merge(np.array([7, 7, 9]), np.array([1, 1, 2]), np.array([2.0, 4.0, np.nan]),
...                     np.array([np.nan, np.nan, -3.0]))
>>> changed = cells.merge(np.array([7]), np.array([3]), np.array([6.0]), np.array([5.0]))
>>> r = changed.results(np.array([7]))
>>> r.cell.tolist(), r.vehicles.tolist(), r.positions.tolist(), r.mean_speed.tolist()
([7], [2], [3], [4.0])
>>> r.mean_delay.tolist()  # nulls ignored
[5.0]
>>> WindowCells.from_bytes(changed.to_bytes()).results(np.array([9])).mean_speed.tolist()
[nan]
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np

from statestream.errors import StatestreamError

FORMAT_VERSION = 1
_HEADER = 4  # version, finalized, number of cells, number of (cell, vehicle) pairs


class GeoStateError(StatestreamError):
    """Stored window state cannot be read (another format, or damaged)."""


@dataclass(frozen=True)
class CellResults:
    """Aggregates of some cells of one window; a mean is NaN where no position had the value."""

    cell: np.ndarray  # int64 H3 cells
    vehicles: np.ndarray  # distinct vehicles
    positions: np.ndarray
    mean_speed: np.ndarray  # m/s
    mean_delay: np.ndarray  # s


@dataclass(frozen=True)
class WindowCells:
    """The aggregates of one window over a group of cells (columns sorted by cell)."""

    cell: np.ndarray  # int64, unique, sorted
    positions: np.ndarray  # int64
    speed_sum: np.ndarray  # float64
    speed_n: np.ndarray  # int64
    delay_sum: np.ndarray  # float64
    delay_n: np.ndarray  # int64
    pair_cell: np.ndarray  # int64: (cell, vehicle) pairs seen, unique, sorted
    pair_vehicle: np.ndarray  # int64
    finalized: bool = False  # the on-time final result has been emitted

    @classmethod
    def empty(cls) -> WindowCells:
        ints, floats = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        return cls(ints, ints, floats, ints, floats, ints, ints, ints)

    def merge(
        self, cell: np.ndarray, vehicle: np.ndarray, speed: np.ndarray, delay: np.ndarray
    ) -> WindowCells:
        """These aggregates with more positions of the window added (arrays of equal length)."""
        speed_ok, delay_ok = np.isfinite(speed), np.isfinite(delay)
        all_cells = np.concatenate((self.cell, cell))
        cells, index = np.unique(all_cells, return_inverse=True)
        size = len(cells)

        def total(old: np.ndarray, new: np.ndarray) -> np.ndarray:
            values = np.concatenate((old.astype(np.float64), new))
            return np.bincount(index, weights=values, minlength=size)

        ones = np.ones(len(cell))
        pair_cell, pair_vehicle = unique_pairs(
            np.concatenate((self.pair_cell, cell)), np.concatenate((self.pair_vehicle, vehicle))
        )
        return replace(
            self,
            cell=cells,
            positions=total(self.positions, ones).astype(np.int64),
            speed_sum=total(self.speed_sum, np.where(speed_ok, speed, 0.0)),
            speed_n=total(self.speed_n, speed_ok.astype(np.float64)).astype(np.int64),
            delay_sum=total(self.delay_sum, np.where(delay_ok, delay, 0.0)),
            delay_n=total(self.delay_n, delay_ok.astype(np.float64)).astype(np.int64),
            pair_cell=pair_cell,
            pair_vehicle=pair_vehicle,
        )

    def results(self, cells: np.ndarray | None = None) -> CellResults:
        """The aggregates of `cells` (all cells when None; each must be in this window)."""
        at = np.arange(len(self.cell)) if cells is None else np.searchsorted(self.cell, cells)
        vehicles = np.bincount(np.searchsorted(self.cell, self.pair_cell), minlength=len(self.cell))
        with np.errstate(invalid="ignore", divide="ignore"):
            speed = self.speed_sum[at] / self.speed_n[at]
            delay = self.delay_sum[at] / self.delay_n[at]
        return CellResults(self.cell[at], vehicles[at], self.positions[at], speed, delay)

    def to_bytes(self) -> bytes:
        header = np.array(
            [FORMAT_VERSION, int(self.finalized), len(self.cell), len(self.pair_cell)],
            dtype=np.int64,
        )
        columns = (
            header,
            self.cell,
            self.positions,
            self.speed_sum.view(np.int64),
            self.speed_n,
            self.delay_sum.view(np.int64),
            self.delay_n,
            self.pair_cell,
            self.pair_vehicle,
        )
        return np.concatenate(columns).astype("<i8", copy=False).tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> WindowCells:
        words = np.frombuffer(data, dtype="<i8").astype(np.int64)
        if len(words) < _HEADER or words[0] != FORMAT_VERSION:
            raise GeoStateError("stored geo window state has another format; use a new checkpoint")
        _, finalized, cells, pairs = (int(w) for w in words[:_HEADER])
        if len(words) != _HEADER + 6 * cells + 2 * pairs:
            raise GeoStateError("stored geo window state is damaged; use a new checkpoint")
        bounds = np.cumsum([_HEADER] + [cells] * 6 + [pairs, pairs])
        parts = [words[a:b] for a, b in itertools.pairwise(bounds.tolist())]
        return cls(
            cell=parts[0],
            positions=parts[1],
            speed_sum=parts[2].view(np.float64),
            speed_n=parts[3],
            delay_sum=parts[4].view(np.float64),
            delay_n=parts[5],
            pair_cell=parts[6],
            pair_vehicle=parts[7],
            finalized=bool(finalized),
        )


def unique_pairs(first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (first, second) pairs, sorted by first, then second."""
    if not len(first):
        return first.astype(np.int64), second.astype(np.int64)
    order = np.lexsort((second, first))
    first, second = first[order], second[order]
    keep = np.ones(len(first), dtype=bool)
    keep[1:] = (first[1:] != first[:-1]) | (second[1:] != second[:-1])
    return first[keep], second[keep]
