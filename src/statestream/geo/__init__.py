"""The vehicle-position use case's geo analytics: H3 cell windows and the bunching pattern.

Pure cores, numpy and h3 only (no Spark, no Kafka). Cell windows (`run geo`): `assign_cells`
places positions with a fix in cells, `CellWindows` aggregates a group of cells per window
(distinct vehicles, positions, mean speed and delay) under a watermark with allowed lateness,
`cell_records` turns results into the records of `analytics.vehicle.cells`.
"""

from statestream.geo.cells import NO_CELL, assign_cells, cell_names, has_fix
from statestream.geo.records import CELL_RESULT_FIELDS, cell_records
from statestream.geo.spec import GeoSpec
from statestream.geo.window_cells import GeoStateError, WindowCells
from statestream.geo.windows import (
    NO_WATERMARK,
    BatchWatermark,
    CellWindows,
    GeoStep,
    Positions,
    WindowResults,
)

__all__ = [
    "CELL_RESULT_FIELDS",
    "NO_CELL",
    "NO_WATERMARK",
    "BatchWatermark",
    "CellWindows",
    "GeoSpec",
    "GeoStateError",
    "GeoStep",
    "Positions",
    "WindowCells",
    "WindowResults",
    "assign_cells",
    "cell_names",
    "cell_records",
    "has_fix",
]
