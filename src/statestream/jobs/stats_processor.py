"""The stateful processor of the operation statistics: power records → window results.

Spark groups the input by a *bucket* of things, so one call handles many things; the window
state of each power series (thing, component) is kept as bytes in a MapState. Rows arrive
unordered: they are put back in Kafka offset order (a series is one key, so one partition) and
each series' records are judged one by one against its own watermark (`SeriesWindows`).

Every output row names its Kafka topic; `kind` says what it is: a `stats` window result, an
`alert`, a `late` or `malformed` record, or one `metrics` row per call (empty topic) with the
counts that the query reports.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle

from statestream.formats import RecordColumns, parse_line
from statestream.stats import (
    SeriesStep,
    SeriesWindows,
    StatsSpec,
    component_pattern,
    duty_records,
    late_records,
    level_records,
)

OUTPUT_SCHEMA = (
    "kind string, topic string, key string, value string, records long, late long, "
    "malformed long, other long, open_windows long, max_event_time double"
)
_OUTPUT_COLUMNS = (
    "kind",
    "topic",
    "key",
    "value",
    "records",
    "late",
    "malformed",
    "other",
    "open_windows",
    "max_event_time",
)
_COUNTS = ("records", "late", "malformed", "other", "open_windows")


@dataclass(frozen=True)
class StatsTopics:
    stats: str
    alerts: str
    late: str
    dead_letter: str
    source: str


class PowerStatisticsProcessor(StatefulProcessor):
    """transformWithStateInPandas processor: the statistics of the power series of one bucket."""

    def __init__(self, spec: StatsSpec, power_quantity: str, topics: StatsTopics) -> None:
        self.spec = spec
        self.component = component_pattern(power_quantity)  # vaPower_C11 → C11
        self.topics = topics

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.windows = handle.getMapState(
            "windows", "thing string, component string", "state binary"
        )

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        frame = pd.concat(list(rows), ignore_index=True)
        frame = frame.sort_values(["partition", "offset"], kind="stable", ignore_index=True)
        out = _Output(self.topics, self.spec)
        out.records = len(frame)
        valid = frame["thing"].notna() & frame["quantity"].notna()
        valid &= np.isfinite(frame["t"].astype("float64")) & np.isfinite(
            frame["v"].astype("float64")
        )
        out.malformed(frame[~valid])
        frame = frame[valid]
        components = frame["quantity"].str.extract(self.component)["c"]
        out.other = int(components.isna().sum())
        frame = frame.assign(component=components)[components.notna()]
        for (thing, component), series_rows in frame.groupby(["thing", "component"], sort=False):
            series = self._load(thing, component)
            step = series.process(series_rows["t"].to_numpy(), series_rows["v"].to_numpy())
            self.windows.updateValue((thing, component), (series.to_bytes(),))
            out.series(thing, component, series_rows, step)
            out.open_windows += series.open_windows
        yield out.frame()

    def _load(self, thing: str, component: str) -> SeriesWindows:
        stored = self.windows.getValue((thing, component))
        if stored is None:
            return SeriesWindows(self.spec)
        return SeriesWindows.from_bytes(self.spec, bytes(stored[0]))

    def close(self) -> None:
        pass


class _Output:
    """The rows one call produces, column by column, and its counts."""

    def __init__(self, topics: StatsTopics, spec: StatsSpec) -> None:
        self.topics = topics
        self.spec = spec
        self.rows: dict[str, list] = {name: [] for name in _OUTPUT_COLUMNS[:4]}
        self.records = self.late = self.malformed_count = self.other = self.open_windows = 0
        self.max_event_time = -math.inf

    def _add(self, kind: str, topic: str, key: str | None, value: str) -> None:
        for name, item in zip(_OUTPUT_COLUMNS[:4], (kind, topic, key, value), strict=True):
            self.rows[name].append(item)

    def malformed(self, bad: pd.DataFrame) -> None:
        self.malformed_count += len(bad)
        for row in bad.itertuples(index=False):
            raw = row.raw if isinstance(row.raw, str) else None
            value = {
                "reason": malformed_reason(raw),
                "stage": "stats",
                "raw": raw if raw is not None else _fields_text(row),
                "source_topic": self.topics.source,
                "partition": int(row.partition),
                "offset": int(row.offset),
            }
            self._add("malformed", self.topics.dead_letter, None, json.dumps(value))

    def series(self, thing: str, component: str, rows: pd.DataFrame, step: SeriesStep) -> None:
        accepted = rows["t"].to_numpy()[~step.late]
        if len(accepted):
            self.max_event_time = max(self.max_event_time, float(accepted.max()))
        for key, value in level_records(
            thing, component, step.level_starts, step.level_seconds, self.spec
        ):
            self._add("stats", self.topics.stats, key, value)
        stats, alerts = duty_records(
            thing, component, step.duty_starts, step.duty_cycles, self.spec
        )
        for key, value in stats:
            self._add("stats", self.topics.stats, key, value)
        for key, value in alerts:
            self._add("alert", self.topics.alerts, key, value)
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
            self._add("late", self.topics.late, key, value)

    def frame(self) -> pd.DataFrame:
        self._add("metrics", "", None, "")
        frame = pd.DataFrame(self.rows, columns=list(_OUTPUT_COLUMNS[:4]))
        counts = (self.records, self.late, self.malformed_count, self.other, self.open_windows)
        for name, count in zip(_COUNTS, counts, strict=True):
            column = [None] * (len(frame) - 1) + [count]
            frame[name] = pd.array(column, dtype="Int64")
        latest = self.max_event_time if self.max_event_time > -math.inf else math.nan
        frame["max_event_time"] = [math.nan] * (len(frame) - 1) + [latest]
        return frame


def malformed_reason(raw: str | None) -> str:
    """Why a value on the power topic is not a power record (`raw` is None when all four fields
    were read, so a time or result was not finite)."""
    if raw is None:
        return "phenomenonTime or result is not a finite number"
    columns = RecordColumns()
    parse_line(raw, 0, columns)
    if columns.malformed:
        return columns.malformed[0][1]
    return "not a record {thing, quantity, phenomenonTime, result} with numeric time and result"


def _fields_text(row) -> str:
    """The four fields of a record Spark could read, as JSON (the raw value is not kept)."""
    fields = {"thing": row.thing, "quantity": row.quantity, "phenomenonTime": row.t}
    return json.dumps({**fields, "result": row.v})
