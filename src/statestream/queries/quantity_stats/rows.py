"""One call of the quantity statistics processor: Kafka rows → each series' windows → rows.

Rows arrive unordered: `decode_rows` puts them back in Kafka offset order (a series is one key,
so one partition) and each series' records are judged one by one against its own watermark
(`QuantityWindows`). A call's records go out packed, one row per kind (`window` results,
`late`, `malformed`) and topic, then a `figures` row with the counts the query reports
(`exactly_once.packed_rows`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

from statestream.exactly_once.packed_rows import OutputRows, output_schema
from statestream.jobs.record_decoding import decode_rows
from statestream.queries.quantity_stats import QUERY, QuantityTopics
from statestream.queries.quantity_stats.records import late_records, window_records
from statestream.queries.quantity_stats.spec import QuantitySpec
from statestream.queries.quantity_stats.windows import QuantityStep, QuantityWindows

MAX_ABS_TIME_MS = 9.2e15  # beyond, a window start overflows int64 (and InfluxDB's time)
FIGURE_COLUMNS = "records long, late long, malformed long, open_windows long, max_event_time double"
OUTPUT_SCHEMA = output_schema(FIGURE_COLUMNS)


def quantity_rows(
    rows: Iterable[pd.DataFrame], windows_state, spec: QuantitySpec, topics: QuantityTopics
) -> pd.DataFrame:
    """The output rows of one call: `rows` (Kafka rows of a bucket), each series' windows kept
    in `windows_state` (the processor's MapState by (thing, quantity))."""
    out = _Output(topics, spec)
    records, rejects = decode_rows(rows, topics.envelope)
    out.records = len(records) + len(rejects)
    out.malformed(rejects)
    finite = np.isfinite(records.v)
    out.malformed(records.rejected(np.flatnonzero(~finite), "result is not a finite number"))
    in_range = np.abs(records.t) <= MAX_ABS_TIME_MS
    out.malformed(
        records.rejected(np.flatnonzero(finite & ~in_range), "phenomenonTime is out of range")
    )
    kept = finite & in_range
    frame = records.frame()[kept]
    # a series is its codes: pandas would group names that differ only after a NUL as one
    series_code = records.things.codes[kept].astype(np.int64) * len(records.quantities.names)
    series_code = series_code + records.quantities.codes[kept]
    for _, series_rows in frame.groupby(series_code, sort=False):
        thing, quantity = series_rows["thing"].iat[0], series_rows["quantity"].iat[0]
        series = _load(windows_state, spec, thing, quantity)
        step = series.process(series_rows["t"].to_numpy(), series_rows["v"].to_numpy())
        windows_state.updateValue((thing, quantity), (series.to_bytes(),))
        out.series(thing, quantity, series_rows, step)
        out.open_windows += series.open_windows
    return out.frame()


def _load(windows_state, spec: QuantitySpec, thing: str, quantity: str) -> QuantityWindows:
    stored = windows_state.getValue((thing, quantity))
    if stored is None:
        return QuantityWindows(spec)
    return QuantityWindows.from_bytes(spec, bytes(stored[0]))


class _Output:
    """The records one call produces, and its counts."""

    def __init__(self, topics: QuantityTopics, spec: QuantitySpec) -> None:
        self.topics = topics
        self.spec = spec
        self.rows = OutputRows()
        self.records = self.late = self.malformed_count = self.open_windows = 0
        self.max_event_time = -math.inf

    def malformed(self, rejects: pd.DataFrame) -> None:
        """Values that are no machine records (`record_decoding.decode_rows`' rejects)."""
        self.malformed_count += len(rejects)
        self.rows.add_dead_letters(
            QUERY.dead_letter_stage, self.topics.dead_letter, self.topics.source, rejects
        )

    def series(self, thing: str, quantity: str, rows: pd.DataFrame, step: QuantityStep) -> None:
        accepted = rows["t"].to_numpy()[~step.late]
        if len(accepted):
            self.max_event_time = max(self.max_event_time, float(accepted.max()))
        for key, value in window_records(thing, quantity, step, self.spec):
            self.rows.add("window", self.topics.windows, key, value)
        if step.late.any():
            late = rows[step.late]
            self.late += len(late)
            origins = [
                (self.topics.source, int(p), int(o))
                for p, o in zip(late["partition"], late["offset"], strict=True)
            ]
            for key, value in late_records(
                thing,
                quantity,
                late["t"].tolist(),
                late["v"].tolist(),
                step.watermark[step.late].tolist(),
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
            "open_windows": self.open_windows,
            "max_event_time": latest,
        }
        return self.rows.frame(figures, FIGURE_COLUMNS)
