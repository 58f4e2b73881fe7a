"""One call of the quantity statistics processor: Kafka rows → each series' windows → rows.

Rows arrive unordered: they are put back in Kafka offset order (a series is one key, so one
partition) and each series' records are judged one by one against its own watermark
(`QuantityWindows`). A call's records go out packed, one row per kind (`window` results,
`late`, `malformed`) and topic, then a `figures` row with the counts the query reports
(`exactly_once.packed_rows`); what every per-series windowed call shares is
`queries.series_calls`.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from statestream.exactly_once.packed_rows import output_schema
from statestream.queries.quantity_stats import QUERY, QuantityTopics
from statestream.queries.quantity_stats.records import window_records
from statestream.queries.quantity_stats.spec import QuantitySpec
from statestream.queries.quantity_stats.windows import QuantityWindows
from statestream.queries.series_calls import SeriesCall, series_frames, stored

FIGURE_COLUMNS = "records long, late long, malformed long, open_windows long, max_event_time double"
OUTPUT_SCHEMA = output_schema(FIGURE_COLUMNS)


def quantity_rows(
    rows: Iterable[pd.DataFrame], windows_state, spec: QuantitySpec, topics: QuantityTopics
) -> pd.DataFrame:
    """The output rows of one call: `rows` (Kafka rows of a bucket), each series' windows kept
    in `windows_state` (the processor's MapState by (thing, quantity))."""
    call = SeriesCall(QUERY.dead_letter_stage, topics.source, topics.late, topics.dead_letter)
    records, kept = call.decoded(rows, topics.envelope)
    for series_rows in series_frames(records, np.flatnonzero(kept), records.frame()[kept]):
        thing, quantity = series_rows["thing"].iat[0], series_rows["quantity"].iat[0]
        data = stored(windows_state, (thing, quantity))
        series = QuantityWindows(spec) if data is None else QuantityWindows.from_bytes(spec, data)
        times = series_rows["t"].to_numpy()
        step = series.process(times, series_rows["v"].to_numpy())
        windows_state.updateValue((thing, quantity), (series.to_bytes(),))
        call.accepted(times[~step.late])
        for key, value in window_records(thing, quantity, step, spec):
            call.rows.add("window", topics.windows, key, value)
        if step.late.any():
            late = series_rows[step.late]
            call.late_records(thing, late, step.watermark[step.late], spec.allowed_lateness_ms)
        call.open_windows += series.open_windows
    return call.frame(FIGURE_COLUMNS)
