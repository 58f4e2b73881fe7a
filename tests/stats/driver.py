"""Run `SeriesWindows` over records of many series, cut into batches, with state round trips."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from statestream.stats import SeriesWindows, StatsSpec

SeriesWindow = tuple[str, str, int]
BASE_MS = 1_554_096_000_000  # a whole minute and a whole ten minutes (epoch ms)


@dataclass
class DriverOutput:
    """Every emission in order, and the latest value per window (what update semantics keep)."""

    level_emissions: list[tuple[SeriesWindow, list[float]]] = field(default_factory=list)
    duty_emissions: list[tuple[SeriesWindow, float]] = field(default_factory=list)
    late: list[bool] = field(default_factory=list)

    @property
    def levels(self) -> dict[SeriesWindow, list[float]]:
        return dict(self.level_emissions)

    @property
    def duty(self) -> dict[SeriesWindow, float]:
        return dict(self.duty_emissions)


def run_statistics(
    records: pd.DataFrame, spec: StatsSpec, batch_size: int = 1_000_000, restore: bool = True
) -> DriverOutput:
    """Feed `records` (thing, component, t, power; arrival order) in batches of `batch_size`;
    with `restore`, every series' state goes through bytes between batches."""
    stored: dict[tuple[str, str], bytes | SeriesWindows] = {}
    out = DriverOutput(late=[False] * len(records))
    frame = records.reset_index(drop=True)
    for first in range(0, len(frame), batch_size):
        batch = frame.iloc[first : first + batch_size]
        for (thing, component), rows in batch.groupby(["thing", "component"], sort=False):
            held = stored.get((thing, component))
            if held is None:
                series = SeriesWindows(spec)
            elif isinstance(held, bytes):
                series = SeriesWindows.from_bytes(spec, held)
            else:
                series = held
            step = series.process(rows["t"].to_numpy(), rows["power"].to_numpy())
            stored[(thing, component)] = series.to_bytes() if restore else series
            for index in rows.index[step.late]:
                out.late[index] = True
            for start, seconds in zip(step.level_starts, step.level_seconds, strict=True):
                out.level_emissions.append(((thing, component, int(start)), seconds.tolist()))
            for start, duty in zip(step.duty_starts, step.duty_cycles, strict=True):
                out.duty_emissions.append(((thing, component, int(start)), float(duty)))
    return out


def series_frame(
    times_s: np.ndarray, power_w: np.ndarray, thing: str = "R0815", component: str = "C11"
) -> pd.DataFrame:
    """One series as records, times given in seconds from an epoch minute."""
    base = BASE_MS
    return pd.DataFrame(
        {
            "thing": thing,
            "component": component,
            "t": base + np.asarray(times_s, dtype=np.float64) * 1000.0,
            "power": np.asarray(power_w, dtype=np.float64),
        }
    )
