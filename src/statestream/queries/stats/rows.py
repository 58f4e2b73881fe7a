"""One call of the statistics processor: Kafka rows → each power series' windows → output rows.

Rows arrive unordered: they are put back in Kafka offset order (a series is one key, so one
partition) and each series' records are judged one by one against its own watermark
(`SeriesWindows`). A call's records go out packed, one row per kind (`stats` window results,
`alert`, `late`, `malformed`) and topic, then a `figures` row with the counts that the query
reports (`exactly_once.packed_rows`); what every per-series windowed call shares is
`queries.series_calls`. `queries.stats.processor` imports this module on its first call.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

from statestream.exactly_once.packed_rows import output_schema
from statestream.queries.series_calls import SeriesCall, series_frames, stored
from statestream.queries.stats import QUERY, StatsTopics
from statestream.stats import SeriesStep, SeriesWindows, StatsSpec, duty_records, level_records

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
    call = SeriesCall(QUERY.dead_letter_stage, topics.source, topics.late, topics.dead_letter)
    records, kept = call.decoded(rows, "none")
    frame = records.frame()[kept]
    components = frame["quantity"].str.extract(component)["c"]
    other = int(components.isna().sum())
    power = components.notna().to_numpy()
    frame = frame.assign(component=components)[power]
    for series_rows in series_frames(records, np.flatnonzero(kept)[power], frame):
        thing, name = series_rows["thing"].iat[0], series_rows["component"].iat[0]
        data = stored(windows_state, (thing, name))
        series = SeriesWindows(spec) if data is None else SeriesWindows.from_bytes(spec, data)
        times = series_rows["t"].to_numpy()
        step = series.process(times, series_rows["v"].to_numpy())
        windows_state.updateValue((thing, name), (series.to_bytes(),))
        call.accepted(times[~step.late])
        _results(call, thing, name, step, spec, topics)
        if step.late.any():
            late = series_rows[step.late]
            call.late_records(thing, late, step.watermark[step.late], spec.allowed_lateness_ms)
        call.open_windows += series.open_windows
    return call.frame(FIGURE_COLUMNS, other=other)


def _results(
    call: SeriesCall,
    thing: str,
    component: str,
    step: SeriesStep,
    spec: StatsSpec,
    topics: StatsTopics,
) -> None:
    """The window results and alerts a series' step emits."""
    for key, value in level_records(thing, component, step.level_starts, step.level_seconds, spec):
        call.rows.add("stats", topics.stats, key, value)
    stats, alerts = duty_records(thing, component, step.duty_starts, step.duty_cycles, spec)
    for key, value in stats:
        call.rows.add("stats", topics.stats, key, value)
    for key, value in alerts:
        call.rows.add("alert", topics.alerts, key, value)
