"""The JSON records of the statistics: window results and alerts (late records: `codecs.bad_input`).

Keys are `thing.component.kind.window_start`: a later record with the same key refines
(replaces) the earlier one, so a compacting or key-aware consumer keeps the latest value.

>>> seconds = np.array([[30.0, 0, 0, 0, 30.0]])  # one window: 30 s at 0–20 %, 30 s at 80–100 %
>>> key, value = level_records("R0815", "C11", np.array([0]), seconds, StatsSpec())[0]
>>> key, json.loads(value)["level_seconds"]["80-100"]
('R0815.C11.levels.0', 30.0)
"""

from __future__ import annotations

import json

import numpy as np

from statestream.stats.spec import LEVEL_LABELS, StatsSpec

Record = tuple[str, str]  # (key, JSON value)


def window_key(thing: str, component: str, kind: str, window_start: int) -> str:
    return f"{thing}.{component}.{kind}.{window_start}"


def level_records(
    thing: str, component: str, starts: np.ndarray, seconds: np.ndarray, spec: StatsSpec
) -> list[Record]:
    """One `levels` record per window: seconds spent in each power level."""
    return [
        (
            window_key(thing, component, "levels", start),
            json.dumps(
                {
                    "thing": thing,
                    "component": component,
                    "kind": "levels",
                    "window_start": start,
                    "window_end": start + spec.window_ms,
                    "level_seconds": dict(zip(LEVEL_LABELS, row, strict=True)),
                }
            ),
        )
        for start, row in zip(starts.tolist(), seconds.tolist(), strict=True)
    ]


def duty_records(
    thing: str, component: str, starts: np.ndarray, duty: np.ndarray, spec: StatsSpec
) -> tuple[list[Record], list[Record]]:
    """`duty_cycle` records per window, and an alert for each window above the limit."""
    stats, alerts = [], []
    for start, fraction in zip(starts.tolist(), duty.tolist(), strict=True):
        key = window_key(thing, component, "duty_cycle", start)
        result = {
            "thing": thing,
            "component": component,
            "kind": "duty_cycle",
            "window_start": start,
            "window_end": start + spec.duty_window_ms,
            "duty_cycle": fraction,
        }
        stats.append((key, json.dumps(result)))
        if fraction > spec.duty_limit:
            alerts.append((key, json.dumps({**result, "limit": spec.duty_limit})))
    return stats, alerts
