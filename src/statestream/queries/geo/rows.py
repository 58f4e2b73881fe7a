"""One call of the geo cells' processor: positions of a bucket of cells → window results.

Rows arrive unordered and are put back in Kafka offset order first; the watermark is Spark's
query watermark of the micro-batch (`timerValues`). Each window of the bucket is one entry of
the processor's MapState (window start → its cells' aggregates as bytes), and an event-time
timer at each window's end (and at its end + allowed lateness) calls the bucket again. A call's
records go out packed, one row per kind (`cells`, `late`, `malformed`) and topic, then a
`figures` row with its counts (`exactly_once.packed_rows`). `queries.geo.processor` imports this
module on its first call.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np
import pandas as pd

from statestream.codecs.bad_input import late_record, to_json
from statestream.codecs.kafka_rows import kafka_ordered
from statestream.exactly_once.packed_rows import OutputRows, output_schema
from statestream.geo import CellWindows, GeoSpec, GeoStep, Positions, WindowCells, cell_records
from statestream.geo.cells import NO_CELL, cell_names
from statestream.queries.geo import QUERY, GeoTopics
from statestream.queries.geo.decoding import vehicle_key


class CellState(Protocol):
    """What a call needs of the processor (`processor.CellWindowsProcessor`): its spec and
    topics, its windows' MapState and its handle (for the timers)."""

    spec: GeoSpec
    topics: GeoTopics
    windows: Any
    handle: Any


FIGURE_COLUMNS = (
    "records long, positions long, no_fix long, late long, malformed long, cell_results long, "
    "open_windows long, max_event_time double, watermark double"
)
OUTPUT_SCHEMA = output_schema(FIGURE_COLUMNS)


def cell_rows(processor: CellState, rows: Iterable[pd.DataFrame], watermark: int) -> pd.DataFrame:
    """The output rows of a call with input: `rows`, the decoded positions of a bucket."""
    frame = kafka_ordered(rows)
    out = _Output(processor.topics, processor.spec, watermark)
    out.records = len(frame)
    refused = frame["reason"].notna().to_numpy()
    out.malformed(frame[refused])
    frame = frame[~refused]
    placed = frame["cell"].to_numpy() != NO_CELL
    out.no_fix = int((~placed).sum())
    frame = frame[placed]
    if len(frame):
        out.max_event_time = float(frame["t"].max())
    return _windows_step(processor, frame, out)


def expired_rows(processor: CellState, watermark: int) -> pd.DataFrame:
    """The output rows of a timer's call: the bucket's windows that the watermark passed."""
    return _windows_step(processor, _NO_ROWS, _Output(processor.topics, processor.spec, watermark))


def _windows_step(processor: CellState, frame: pd.DataFrame, out: _Output) -> pd.DataFrame:
    windows, loaded = _load(processor)
    step = windows.process(_positions(frame), out.watermark)
    _store(processor, windows, step, loaded)
    out.step(step, frame)
    out.open_windows = windows.open_windows
    return out.frame()


def _load(processor: CellState) -> tuple[CellWindows, set[int]]:
    stored = {
        int(start[0]): WindowCells.from_bytes(bytes(cells[0]))
        for start, cells in processor.windows.iterator()
    }
    return CellWindows(processor.spec, stored), set(stored)


def _store(processor: CellState, windows: CellWindows, step: GeoStep, loaded: set[int]) -> None:
    """Write the changed windows, delete the dropped ones, set timers for new ones."""
    spec = processor.spec
    for start in step.changed:
        processor.windows.updateValue((start,), (windows.windows[start].to_bytes(),))
        if start not in loaded:
            end = start + spec.window_ms
            processor.handle.registerTimer(end)
            processor.handle.registerTimer(end + spec.allowed_lateness_ms)
    for start in step.dropped:
        if start in loaded:
            processor.windows.removeKey((start,))


_NO_ROWS = pd.DataFrame(
    {
        "t": np.empty(0, dtype=np.int64),
        "cell": np.empty(0, dtype=np.int64),
        "vehicle": np.empty(0, dtype=np.int64),
        "speed": np.empty(0),
        "delay": np.empty(0),
    }
)


def _positions(frame: pd.DataFrame) -> Positions:
    return Positions(
        frame["t"].to_numpy(dtype=np.int64),
        frame["cell"].to_numpy(dtype=np.int64),
        frame["vehicle"].to_numpy(dtype=np.int64),
        frame["speed"].to_numpy(dtype=np.float64),
        frame["delay"].to_numpy(dtype=np.float64),
    )


class _Output:
    """The records one call produces, and its counts."""

    def __init__(self, topics: GeoTopics, spec: GeoSpec, watermark: int) -> None:
        self.topics = topics
        self.spec = spec
        self.watermark = watermark
        self.rows = OutputRows()
        self.records = self.no_fix = self.late = self.malformed_count = self.open_windows = 0
        self.positions = self.cell_results = 0
        self.max_event_time = -math.inf

    def malformed(self, rejects: pd.DataFrame) -> None:
        """Values that are no vehicle positions, as dead letters (stage `geo`)."""
        self.malformed_count += len(rejects)
        self.rows.add_dead_letters(
            QUERY.dead_letter_stage, self.topics.dead_letter, self.topics.source, rejects
        )

    def step(self, step: GeoStep, frame: pd.DataFrame) -> None:
        keys, values = cell_records(step.results, self.spec.resolution)
        self.cell_results += len(values)
        self.rows.add_runs("cells", self.topics.cells, np.asarray(keys, dtype=object), values)
        self.positions += int((~step.late).sum())
        if step.late.any():
            self._late(frame[step.late])

    def _late(self, rows: pd.DataFrame) -> None:
        """Positions whose window is gone, as late records (stage `geo`)."""
        self.late += len(rows)
        window_ms = self.spec.window_ms
        cells = cell_names(rows["cell"].to_numpy())
        for row, cell in zip(rows.itertuples(index=False), cells, strict=True):
            start = int(row.t) // window_ms * window_ms
            value = late_record(
                "geo",
                thing=vehicle_key(int(row.vehicle)),
                quantity="position",
                phenomenon_time=float(row.t),
                result=math.nan,
                watermark=float(self.watermark),
                source_topic=self.topics.source,
                partition=int(row.partition),
                offset=int(row.offset),
                lat=float(row.lat),
                long=float(row.long),
                speed=_number(row.speed),
                delay=_number(row.delay),
                cell=cell,
                window_start=start,
                window_end=start + window_ms,
                allowed_lateness_ms=self.spec.allowed_lateness_ms,
            )
            self.rows.add("late", self.topics.late, value["thing"], to_json(value))

    def frame(self) -> pd.DataFrame:
        latest = self.max_event_time if self.max_event_time > -math.inf else math.nan
        figures = {
            "records": self.records,
            "positions": self.positions,
            "no_fix": self.no_fix,
            "late": self.late,
            "malformed": self.malformed_count,
            "cell_results": self.cell_results,
            "open_windows": self.open_windows,
            "max_event_time": latest,
            "watermark": float(self.watermark),
        }
        return self.rows.frame(figures, FIGURE_COLUMNS)


def _number(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None
