"""The cell results as they go to `analytics.vehicle.cells`: a Kafka key and a JSON text each.

One JSON object per result, keyed by the cell's H3 id:

    {"cell": "881126d339fffff", "resolution": 8, "window_start": 1764051300000,
     "window_end": 1764051360000, "vehicles": 3, "positions": 41, "mean_speed": 7.2,
     "mean_delay": -31.5, "final": false}

A mean is null when no position of the cell and window had the value.
"""

from __future__ import annotations

import math

import orjson

from statestream.geo.cells import cell_names
from statestream.geo.windows import WindowResults

CELL_RESULT_FIELDS: tuple[str, ...] = (
    "cell",
    "resolution",
    "window_start",
    "window_end",
    "vehicles",
    "positions",
    "mean_speed",
    "mean_delay",
    "final",
)


def cell_records(results: WindowResults, resolution: int) -> tuple[list[str], list[str]]:
    """(keys, values) of `results`: the cell id and the JSON text of each result."""
    names = cell_names(results.cell)
    columns = zip(
        names,
        results.window_start.tolist(),
        results.window_end.tolist(),
        results.vehicles.tolist(),
        results.positions.tolist(),
        results.mean_speed.tolist(),
        results.mean_delay.tolist(),
        results.final.tolist(),
        strict=True,
    )
    dumps = orjson.dumps
    values = [
        dumps(
            {
                "cell": cell,
                "resolution": resolution,
                "window_start": start,
                "window_end": end,
                "vehicles": vehicles,
                "positions": positions,
                "mean_speed": _number(speed),
                "mean_delay": _number(delay),
                "final": final,
            }
        ).decode()
        for cell, start, end, vehicles, positions, speed, delay, final in columns
    ]
    return names, values


def _number(value: float) -> float | None:
    return value if math.isfinite(value) else None
