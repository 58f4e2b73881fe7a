"""One call of the statistics processor: Kafka rows → each power series' windows → output rows.

Rows arrive unordered: they are put back in Kafka offset order (a series is one key, so one
partition) and each series' records are judged one by one against its own watermark
(`SeriesWindows`). A call's records go out packed, one row per kind (`stats` window results,
`alert`, `late`, `malformed`) and topic, then a `figures` row with the counts that the query
reports (`exactly_once.packed_rows`). `queries.stats.processor` imports this module on its
first call.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

from statestream.exactly_once.packed_rows import OutputRows, output_schema
from statestream.jobs.record_decoding import decode_rows
from statestream.queries.stats import QUERY, StatsTopics
from statestream.stats import (
    SeriesStep,
    SeriesWindows,
    StatsSpec,
    duty_records,
    late_records,
    level_records,
)

FIGURE_COLUMNS = (
    "records long, late long, malformed long, other long, open_windows long, max_event_time double"
)
OUTPUT_SCHEMA = output_schema(FIGURE_COLUMNS)


def stats_rows(
    rows: Iterable[pd.DataFrame],
    windows_state,
    spec: StatsSpec,
    component: re.Pattern[str],
    topics: StatsTopics,
) -> pd.DataFrame:
    """The output rows of one call: `rows` (Kafka rows of a bucket), each series' windows kept
    in `windows_state` (the processor's MapState by (thing, component)); `component` finds the
    component in a quantity (vaPower_C11 → C11)."""
    out = _Output(topics, spec)
    records, rejects = decode_rows(rows, "none")
    out.records = len(records) + len(rejects)
    out.malformed(rejects)
    finite = np.isfinite(records.v)
    out.malformed(records.rejected(np.flatnonzero(~finite), "result is not a finite number"))
    frame = records.frame()[finite]
    components = frame["quantity"].str.extract(component)["c"]
    out.other = int(components.isna().sum())
    power = components.notna().to_numpy()
    frame = frame.assign(component=components)[power]
    # a series is its codes: pandas would group names that differ only after a NUL as one
    kept = np.flatnonzero(finite)[power]
    series_code = records.things.codes[kept].astype(np.int64) * len(records.quantities.names)
    series_code = series_code + records.quantities.codes[kept]
    for _, series_rows in frame.groupby(series_code, sort=False):
        thing, component_name = series_rows["thing"].iat[0], series_rows["component"].iat[0]
        series = _load(windows_state, spec, thing, component_name)
        step = series.process(series_rows["t"].to_numpy(), series_rows["v"].to_numpy())
        windows_state.updateValue((thing, component_name), (series.to_bytes(),))
        out.series(thing, component_name, series_rows, step)
        out.open_windows += series.open_windows
    return out.frame()


def _load(windows_state, spec: StatsSpec, thing: str, component: str) -> SeriesWindows:
    stored = windows_state.getValue((thing, component))
    if stored is None:
        return SeriesWindows(spec)
    return SeriesWindows.from_bytes(spec, bytes(stored[0]))


class _Output:
    """The records one call produces, and its counts."""

    def __init__(self, topics: StatsTopics, spec: StatsSpec) -> None:
        self.topics = topics
        self.spec = spec
        self.rows = OutputRows()
        self.records = self.late = self.malformed_count = self.other = self.open_windows = 0
        self.max_event_time = -math.inf

    def malformed(self, rejects: pd.DataFrame) -> None:
        """Values that are no power records (`record_decoding.decode_rows`' rejects)."""
        self.malformed_count += len(rejects)
        self.rows.add_dead_letters(
            QUERY.dead_letter_stage, self.topics.dead_letter, self.topics.source, rejects
        )

    def series(self, thing: str, component: str, rows: pd.DataFrame, step: SeriesStep) -> None:
        accepted = rows["t"].to_numpy()[~step.late]
        if len(accepted):
            self.max_event_time = max(self.max_event_time, float(accepted.max()))
        for key, value in level_records(
            thing, component, step.level_starts, step.level_seconds, self.spec
        ):
            self.rows.add("stats", self.topics.stats, key, value)
        stats, alerts = duty_records(
            thing, component, step.duty_starts, step.duty_cycles, self.spec
        )
        for key, value in stats:
            self.rows.add("stats", self.topics.stats, key, value)
        for key, value in alerts:
            self.rows.add("alert", self.topics.alerts, key, value)
        if step.late.any():
            self._late(thing, rows[step.late], step.watermark[step.late])

    def _late(self, thing: str, rows: pd.DataFrame, watermarks: np.ndarray) -> None:
        self.late += len(rows)
        origins = [
            (self.topics.source, int(p), int(o))
            for p, o in zip(rows["partition"], rows["offset"], strict=True)
        ]
        quantity = str(rows["quantity"].iloc[0])  # a series is one quantity
        for key, value in late_records(
            thing,
            quantity,
            rows["t"].tolist(),
            rows["v"].tolist(),
            watermarks.tolist(),
            self.spec,
            origins,
        ):
            self.rows.add("late", self.topics.late, key, value)

    def frame(self) -> pd.DataFrame:
        latest = self.max_event_time if self.max_event_time > -math.inf else math.nan
        figures = {
            "records": self.records,
            "late": self.late,
            "malformed": self.malformed_count,
            "other": self.other,
            "open_windows": self.open_windows,
            "max_event_time": latest,
        }
        return self.rows.frame(figures, FIGURE_COLUMNS)
