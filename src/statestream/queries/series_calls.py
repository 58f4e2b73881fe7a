"""One call of a windowed query over machine series (stats, quantity_stats): what such calls
share, around the windows that differ.

A `SeriesCall` decodes a call's Kafka rows (`jobs.record_decoding.decode_rows`), dead-letters
what is no record, no finite result or no time a window can start at, yields each series'
records in Kafka order, writes its late records (`codecs.bad_input.late_series_records`) and
keeps the counts every such query reports: records in, late, malformed, open windows, latest
event time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pandas as pd

from statestream.codecs.bad_input import Stage, late_series_records
from statestream.exactly_once.packed_rows import OutputRows
from statestream.jobs.record_decoding import KafkaRecords, decode_rows

MAX_ABS_TIME_MS = 9.2e15  # beyond, a window start overflows int64 (and InfluxDB's time)


class SeriesCall:
    """The output rows and counts of one call; `stage` names its dead and late records."""

    def __init__(self, stage: Stage, source: str, late_topic: str, dead_letter_topic: str) -> None:
        self.stage, self.source = stage, source
        self.late_topic, self.dead_letter_topic = late_topic, dead_letter_topic
        self.rows = OutputRows()
        self.records = self.late = self.malformed = self.open_windows = 0
        self.max_event_time = -math.inf

    def decoded(self, rows: Iterable[pd.DataFrame], envelope: str) -> tuple[KafkaRecords, Any]:
        """The call's records and the mask of those kept; the others are dead letters."""
        records, rejects = decode_rows(rows, envelope)
        self.records = len(records) + len(rejects)
        self.dead_letters(rejects)
        finite = np.isfinite(records.v)
        not_finite = np.flatnonzero(~finite)
        self.dead_letters(records.rejected(not_finite, "result is not a finite number"))
        in_range = np.abs(records.t) <= MAX_ABS_TIME_MS
        out_of_range = np.flatnonzero(finite & ~in_range)
        self.dead_letters(records.rejected(out_of_range, "phenomenonTime is out of range"))
        return records, finite & in_range

    def dead_letters(self, rejects: pd.DataFrame) -> None:
        """Values that are no usable records (`decode_rows`' rejects)."""
        self.malformed += len(rejects)
        self.rows.add_dead_letters(self.stage, self.dead_letter_topic, self.source, rejects)

    def accepted(self, times: np.ndarray) -> None:
        """Event times a series took (not late): the latest is the call's `max_event_time`."""
        if len(times):
            self.max_event_time = max(self.max_event_time, float(times.max()))

    def late_records(
        self, thing: str, rows: pd.DataFrame, watermarks: np.ndarray, allowed_lateness_ms: float
    ) -> None:
        """`rows` of one series were late: each a late record with the watermark it met."""
        self.late += len(rows)
        origins = [
            (self.source, int(p), int(o))
            for p, o in zip(rows["partition"], rows["offset"], strict=True)
        ]
        quantity = str(rows["quantity"].iloc[0])  # a series is one quantity
        for key, value in late_series_records(
            self.stage,
            thing,
            quantity,
            rows["t"].tolist(),
            rows["v"].tolist(),
            watermarks.tolist(),
            origins,
            allowed_lateness_ms,
        ):
            self.rows.add("late", self.late_topic, key, value)

    def frame(self, columns: str, **figures: float) -> pd.DataFrame:
        """The call's packed rows and its figures row: the shared counts and `figures`."""
        latest = self.max_event_time if self.max_event_time > -math.inf else math.nan
        shared = {"records": self.records, "late": self.late, "malformed": self.malformed}
        figures = {**shared, **figures, "open_windows": self.open_windows}
        return self.rows.frame({**figures, "max_event_time": latest}, columns)


def series_frames(
    records: KafkaRecords, index: np.ndarray, frame: pd.DataFrame
) -> Iterator[pd.DataFrame]:
    """`frame` (the records at `index`, as `records.frame()`) cut into its series (thing,
    quantity), each in Kafka order. A series is its name codes: pandas would group names that
    differ only after a NUL as one."""
    codes = records.things.codes[index].astype(np.int64) * len(records.quantities.names)
    codes = codes + records.quantities.codes[index]
    for _, series in frame.groupby(codes, sort=False):
        yield series


def stored(state: Any, key: tuple[str, ...]) -> bytes | None:
    """A MapState's value at `key`, as bytes (None when missing)."""
    value = state.getValue(key)
    return None if value is None else bytes(value[0])
