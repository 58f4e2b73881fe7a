"""Positions → H3 cells: the cell of each position with a GPS fix, as a 64-bit integer.

A cell is kept as H3's integer form (an `int64`, 0 for "no cell") so that grouping, sorting and
state are numpy operations; `cell_names` turns the few cells of a result into H3's hex strings.

>>> cells = assign_cells(np.array([60.1699, np.nan]), np.array([24.9384, 24.9]), 8)
>>> cell_names(cells[:1]), int(cells[1])
(['881126d339fffff'], 0)
"""

from __future__ import annotations

import h3
import h3.api.numpy_int as h3_int
import numpy as np

NO_CELL = 0
"""The cell of a position without a fix (no H3 index is 0)."""


def has_fix(lat: np.ndarray, lng: np.ndarray) -> np.ndarray:
    """Whether each position has a usable fix: finite coordinates within WGS 84's ranges."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(lat) & np.isfinite(lng) & (np.abs(lat) <= 90.0) & (np.abs(lng) <= 180.0)


def assign_cells(lat: np.ndarray, lng: np.ndarray, resolution: int) -> np.ndarray:
    """The H3 cell (int64) of each position at `resolution`; `NO_CELL` where it has no fix."""
    lat = np.asarray(lat, dtype=np.float64)
    lng = np.asarray(lng, dtype=np.float64)
    cells = np.zeros(len(lat), dtype=np.int64)
    fix = np.flatnonzero(has_fix(lat, lng))
    to_cell = h3_int.latlng_to_cell
    cells[fix] = [
        to_cell(a, b, resolution) for a, b in zip(lat[fix].tolist(), lng[fix].tolist(), strict=True)
    ]
    return cells


def cell_names(cells: np.ndarray) -> list[str]:
    """H3's hex strings of integer cells, e.g. `881126d339fffff`."""
    return [h3.int_to_str(int(cell)) for cell in cells]
