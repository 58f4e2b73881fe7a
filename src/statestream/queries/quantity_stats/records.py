"""The JSON records of the quantity statistics' window results.

Keys are `thing.quantity.window_start`: a later record with the same key refines (replaces) the
earlier one, so a compacting or key-aware consumer keeps the latest value. A mean whose sum
overflowed (values near the float limit) is written as null, so a record is always valid JSON.

>>> import numpy as np
>>> from statestream.queries.quantity_stats.windows import QuantityWindows
>>> spec = QuantitySpec(window_ms=1_000, out_of_orderness_ms=0, allowed_lateness_ms=0)
>>> step = QuantityWindows(spec).process(np.array([0.0, 400.0, 1_000.0]), np.array([2.0, 4.0, 0.0]))
>>> key, value = window_records("R0815", "temperature", step, spec)[0]
>>> key, json.loads(value)["mean"], json.loads(value)["last"], json.loads(value)["window_end"]
('R0815.temperature.0', 3.0, 4.0, 1000)
"""

from __future__ import annotations

import json
import math

from statestream.queries.quantity_stats.spec import QuantitySpec
from statestream.queries.quantity_stats.windows import QuantityStep

Record = tuple[str, str]  # (key, JSON value)


def window_records(
    thing: str, quantity: str, step: QuantityStep, spec: QuantitySpec
) -> list[Record]:
    """One record per emitted window of `step`: count, min, max, mean and last value."""
    columns = (step.starts, step.counts, step.mins, step.maxs, step.means, step.lasts)
    return [
        (
            f"{thing}.{quantity}.{start}",
            json.dumps(
                {
                    "thing": thing,
                    "quantity": quantity,
                    "window_start": start,
                    "window_end": start + spec.window_ms,
                    "count": count,
                    "min": _finite(low),
                    "max": _finite(high),
                    "mean": _finite(mean),
                    "last": _finite(last),
                },
                allow_nan=False,
            ),
        )
        for start, count, low, high, mean, last in zip(
            *(column.tolist() for column in columns), strict=True
        )
    ]


def _finite(number: float) -> float | None:
    return number if math.isfinite(number) else None
