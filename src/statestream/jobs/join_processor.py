"""The stateful processor of the streaming join: Kafka rows → engine → output rows.

Spark groups the input by a *bucket* of things (a hash of the thing modulo a setting), so one call
joins many things at once; the engine state of each (thing, result quantity) is kept as bytes in a
MapState. Rows arrive unordered: each series is put back in Kafka offset order here.

Every output row names its Kafka topic; `kind` says what it is: a `pair`, a `late` or `malformed`
record, or one `stats` row per call with the counts that the query reports as metrics.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle

from statestream.formats import RecordColumns, pair_json_lines, parse_line
from statestream.join import (
    DUPLICATE,
    LATE,
    MALFORMED,
    ComplementJoin,
    JoinRouter,
    JoinSpec,
    RoutedStep,
    SpecTemplate,
    export_state,
    restore_state,
)

OUTPUT_SCHEMA = (
    "kind string, topic string, key string, value string, "
    "records long, duplicates long, state_records long, max_event_time double"
)
INPUT_COLUMNS = ("thing", "quantity", "t", "v", "partition", "offset", "raw")


@dataclass(frozen=True)
class OutputTopics:
    pairs: str
    late: str
    dead_letter: str
    source: str


class ComplementJoinProcessor(StatefulProcessor):
    """transformWithStateInPandas processor: joins the things of one bucket, state in a MapState."""

    def __init__(self, templates: Sequence[SpecTemplate], topics: OutputTopics) -> None:
        self.templates = list(templates)
        self.topics = topics

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.engines = handle.getMapState("engines", "thing string, result string", "state binary")

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        frame = pd.concat(list(rows), ignore_index=True)
        frame = frame.sort_values(["partition", "offset"], kind="stable", ignore_index=True)
        out = _Output(self.topics)
        valid = frame["thing"].notna() & frame["quantity"].notna() & frame["t"].notna()
        valid &= frame["v"].notna()
        out.malformed(frame[~valid])
        frame = frame[valid]
        specs = [s for t in self.templates for s in t.specs_for(frame["quantity"].unique())]
        router = JoinRouter(specs, load_engine=lambda thing, i: self._load(thing, specs[i]))
        steps = router.process(
            frame["thing"].to_numpy(dtype=object),
            frame["quantity"].to_numpy(dtype=object),
            frame["t"].to_numpy(dtype=np.float64),
            frame["v"].to_numpy(dtype=np.float64),
            np.arange(len(frame), dtype=np.int64),
        )
        for routed in steps:
            out.step(routed, frame)
        for (thing, index), engine in router.engines.items():
            self.engines.updateValue((thing, specs[index].result), (export_state(engine),))
        out.stats(len(frame) + out.malformed_count, router.state_size)
        yield out.frame()

    def _load(self, thing: str, spec: JoinSpec) -> ComplementJoin | None:
        stored = self.engines.getValue((thing, spec.result))
        return restore_state(spec, bytes(stored[0])) if stored is not None else None

    def close(self) -> None:
        pass


class _Output:
    """The rows one call produces, column by column."""

    def __init__(self, topics: OutputTopics) -> None:
        self.topics = topics
        self.rows: dict[str, list] = {name: [] for name in _TEXT_COLUMNS}
        self.figures: dict[str, float] = {}  # the stats row's, which comes last
        self.duplicates = 0
        self.malformed_count = 0
        self.max_event_time = float("nan")

    def _add(self, kind: str, topic: str, key: str | None, value: str) -> None:
        self._add_many(kind, topic, key, [value])

    def _add_many(self, kind: str, topic: str, key: str | None, values: list[str]) -> None:
        """Rows of one kind, topic and key, one per value."""
        count = len(values)
        for name, item in zip(_TEXT_COLUMNS[:3], (kind, topic, key), strict=True):
            self.rows[name].extend([item] * count)
        self.rows["value"].extend(values)

    def malformed(self, bad: pd.DataFrame) -> None:
        self.malformed_count += len(bad)
        for raw, partition, offset in zip(bad["raw"], bad["partition"], bad["offset"], strict=True):
            self._dead_letter(_malformed_reason(raw), raw, int(partition), int(offset))

    def _dead_letter(self, reason: str, raw: str | None, partition: int, offset: int) -> None:
        value = {
            "reason": reason,
            "raw": raw,
            "source_topic": self.topics.source,
            "partition": partition,
            "offset": offset,
        }
        self._add("malformed", self.topics.dead_letter, None, json.dumps(value))

    def step(self, routed: RoutedStep, frame: pd.DataFrame) -> None:
        spec, pairs = routed.spec, routed.step.pairs
        if len(pairs):
            key = f"{routed.thing}.{spec.result}"
            self._add_many(
                "pair", self.topics.pairs, key, pair_json_lines(routed.thing, spec, pairs)
            )
            self.max_event_time = np.nanmax([self.max_event_time, float(pairs.time.max())])
        for series, rows, verdicts in (
            ("left", routed.left_rows, routed.step.left),
            ("right", routed.right_rows, routed.step.right),
        ):
            if not len(rows):
                continue
            self.duplicates += int(np.count_nonzero(verdicts.codes == DUPLICATE))
            for k in np.flatnonzero(verdicts.codes >= MALFORMED):
                self._rejected(routed, series, frame.iloc[rows[k]], verdicts, k)

    def _rejected(self, routed, series, row, verdicts, k) -> None:
        if verdicts.codes[k] == MALFORMED:
            reason = f"value of {row['quantity']} cannot be taken by {routed.spec.function_name}"
            self.malformed_count += 1
            self._dead_letter(reason, row["raw"], int(row["partition"]), int(row["offset"]))
            return
        if verdicts.codes[k] != LATE:
            return
        value = {
            "reason": "late",
            "thing": row["thing"],
            "quantity": row["quantity"],
            "phenomenonTime": float(row["t"]),
            "result": float(row["v"]),
            "series": series,
            "join": routed.spec.result,
            "watermark": float(verdicts.watermark[k]),
            "partition": int(row["partition"]),
            "offset": int(row["offset"]),
        }
        self._add("late", self.topics.late, f"{row['thing']}.{row['quantity']}", json.dumps(value))

    def stats(self, records: int, state_records: int) -> None:
        """The last row: the call's figures (in the numeric columns, empty in all other rows)."""
        self._add("stats", "", None, "")
        self.figures = {
            "records": records,
            "duplicates": self.duplicates,
            "state_records": state_records,
        }

    def frame(self) -> pd.DataFrame:
        count = len(self.rows["value"])
        columns: dict[str, object] = dict(self.rows)
        for name, value in self.figures.items():
            data, empty = np.zeros(count, dtype=np.int64), np.ones(count, dtype=bool)
            data[-1], empty[-1] = value, False
            columns[name] = pd.arrays.IntegerArray(data, empty)
        event_time = np.full(count, np.nan)
        event_time[-1] = self.max_event_time
        columns["max_event_time"] = event_time
        return pd.DataFrame(columns)


_TEXT_COLUMNS = ("kind", "topic", "key", "value")


def _malformed_reason(raw: str | None) -> str:
    if raw is None:
        return "empty message"
    columns = RecordColumns()
    parse_line(raw, 0, columns)
    if columns.malformed:
        return columns.malformed[0][1]
    return "not a record {thing, quantity, phenomenonTime, result} with numeric time and result"
