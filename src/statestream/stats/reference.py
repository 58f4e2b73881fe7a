"""A straightforward pandas computation of the statistics' definitions, to check against.

It shares nothing with `statestream.stats.windows` but the level labels: lateness from a running
maximum per series, levels by `pd.cut`, sliding windows by listing every window a record is in.
The tests and `statestream chaos` compare the statistics query's output with it:

    expected = reference_statistics(power_frame(pairs), stats_spec(settings))
    levels, duty = latest_results(results)   # the query's, from the stats topic
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from statestream.stats import LEVEL_LABELS, StatsSpec

SeriesWindow = tuple[str, str, int]  # (thing, component, window_start)


@dataclass(frozen=True)
class ReferenceStatistics:
    levels: dict[SeriesWindow, list[float]]  # seconds per level, in LEVEL_LABELS order
    duty: dict[SeriesWindow, float]
    late: np.ndarray  # bool per input record


def reference_statistics(records: pd.DataFrame, spec: StatsSpec) -> ReferenceStatistics:
    """The final window results of `records` (thing, component, t [ms], power [W]) in arrival
    order: windows the series' final watermark has passed, late records excluded."""
    frame = records.reset_index(drop=True)
    series = frame.groupby(["thing", "component"], sort=False, observed=True)["t"]
    seen_before = series.transform(lambda t: t.cummax().shift(1, fill_value=-np.inf))
    late = frame["t"] < seen_before - spec.out_of_orderness_ms - spec.allowed_lateness_ms
    accepted = frame[~late].copy()
    if accepted.empty:
        return ReferenceStatistics({}, {}, late.to_numpy(dtype=bool))
    final = accepted.groupby(["thing", "component"], observed=True)["t"].transform("max")
    accepted["watermark"] = final - spec.out_of_orderness_ms
    return ReferenceStatistics(
        _levels(accepted, spec), _duty(accepted, spec), late.to_numpy(dtype=bool)
    )


def power_frame(pairs: Iterable[dict]) -> pd.DataFrame:
    """Joined pairs (in arrival order per series) as records for the reference; `pairs` is
    read once (a generator of millions keeps no more than the four columns), the thing and the
    component as categories (a byte each: an hour of chaos holds millions of them)."""
    things: list[str] = []
    components: list[str] = []
    times: list[float] = []
    powers: list[float] = []
    for p in pairs:
        things.append(p["thing"])
        components.append(p["quantity"].split("_", 1)[1])
        times.append(p["phenomenonTime"])
        powers.append(p["result"])
    return pd.DataFrame(
        {
            "thing": pd.Categorical(things),
            "component": pd.Categorical(components),
            "t": np.array(times, dtype=np.float64),
            "power": np.array(powers, dtype=np.float64),
        }
    )


def latest_results(
    results: list[dict],
) -> tuple[dict[SeriesWindow, list[float]], dict[SeriesWindow, float]]:
    """Levels and duty cycles of the statistics query's results per (thing, component,
    window_start), the latest value of each."""
    levels, duty = {}, {}
    for result in results:
        key = (result["thing"], result["component"], result["window_start"])
        if result["kind"] == "levels":
            levels[key] = [result["level_seconds"][label] for label in LEVEL_LABELS]
        else:
            duty[key] = result["duty_cycle"]
    return levels, duty


def _levels(accepted: pd.DataFrame, spec: StatsSpec) -> dict[SeriesWindow, list[float]]:
    share = accepted["power"].abs() / spec.rated_power_w
    bins = [0.0, 0.2, 0.4, 0.6, 0.8, np.inf]
    frame = accepted.assign(
        level=pd.cut(share, bins=bins, labels=LEVEL_LABELS, right=False),
        window_start=(accepted["t"] // spec.window_ms * spec.window_ms).astype("int64"),
    )
    frame = frame[frame["window_start"] + spec.window_ms <= frame["watermark"]]
    counts = (
        frame.groupby(["thing", "component", "window_start", "level"], observed=True)
        .size()
        .unstack("level", fill_value=0)
    )
    counts = counts.reindex(columns=list(LEVEL_LABELS), fill_value=0)
    seconds = counts[counts.sum(axis=1) > 0] * spec.sampling_interval_s
    return {
        key: [float(x) for x in row] for key, row in zip(seconds.index, seconds.values, strict=True)
    }


def _duty(accepted: pd.DataFrame, spec: StatsSpec) -> dict[SeriesWindow, float]:
    slide, length = spec.duty_slide_ms, spec.duty_window_ms
    pane = (accepted["t"] // slide * slide).astype("int64")
    high = accepted["power"].abs() >= spec.duty_threshold * spec.rated_power_w
    windows = pd.concat(
        accepted.assign(window_start=pane - k * slide, high=high) for k in range(length // slide)
    )
    windows = windows[windows["window_start"] + length <= windows["watermark"]]
    keys = ["thing", "component", "window_start"]
    high_records = windows.groupby(keys, observed=True)["high"].sum()
    duty = high_records * spec.sampling_interval_s / (length / 1000.0)
    return {key: float(value) for key, value in duty.items()}
