"""One call of the streaming join's processor: Kafka rows → engine → output rows.

The rows of a call (a bucket of things) arrive unordered: `jobs.record_decoding` decodes them
and puts them back in Kafka offset order. A call's records go out packed, one row per kind
(`pair`, `late`, `malformed`) and topic, then a `figures` row with the counts that the query
reports as metrics (`exactly_once.packed_rows`). `queries.join.processor` imports this module on its
first call.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from statestream.codecs.bad_input import dead_letter, late_record, to_json
from statestream.codecs.pair_json import pair_json_block
from statestream.exactly_once.packed_rows import OutputRows, output_schema, value_runs
from statestream.jobs.record_decoding import KafkaRecords, decode_rows
from statestream.join import (
    DUPLICATE,
    LATE,
    MALFORMED,
    CodedNames,
    JoinRouter,
    JoinSpec,
    RoutedSteps,
    SpecTemplate,
)
from statestream.queries.join import QUERY, OutputTopics
from statestream.spark.stored_engines import StoredEngines

FIGURE_COLUMNS = "records long, duplicates long, state_records long, max_event_time double"
OUTPUT_SCHEMA = output_schema(FIGURE_COLUMNS)


def join_rows(
    rows: Iterable[pd.DataFrame],
    things_state,
    templates: Sequence[SpecTemplate],
    topics: OutputTopics,
) -> pd.DataFrame:
    """The output rows of one call: `rows` (Kafka rows of a bucket), the engines of their things
    kept in `things_state` (the processor's MapState)."""
    out = _Output(topics)
    records, rejects = decode_rows(rows, topics.envelope)
    out.malformed(rejects)
    specs = [s for t in templates for s in t.specs_for(records.quantities.names)]
    stored = StoredEngines(things_state)
    if specs:
        stored.prefetch(records.things.names)
    router = JoinRouter(specs, load_states=stored.states_loader(specs))
    steps = router.process(
        records.things,
        records.quantities,
        records.t,
        records.v,
        np.arange(len(records), dtype=np.int64),
    )
    out.steps(steps, records)
    stored.save_router(router, specs)
    out.stats(len(records) + len(rejects), router.state_size)
    return out.frame()


class _Output:
    """The rows one call produces, column by column."""

    def __init__(self, topics: OutputTopics) -> None:
        self.topics = topics
        self.rows = OutputRows()
        self.figures: dict[str, float] = {}
        self.duplicates = 0
        self.max_event_time = float("nan")

    def malformed(self, rejects: pd.DataFrame) -> None:
        """Values that are no records (`record_decoding.decode_rows`' rejects)."""
        self.rows.add_dead_letters(
            QUERY.dead_letter_stage, self.topics.dead_letter, self.topics.source, rejects
        )

    def _dead_letter(self, reason: str, raw: bytes | None, partition: int, offset: int) -> None:
        """A dead letter (`codecs.bad_input`); `ingested_at`: when the call reads the row."""
        value = dead_letter(
            "join",
            reason,
            raw,
            source_topic=self.topics.source,
            partition=partition,
            offset=offset,
        )
        self.rows.add("malformed", self.topics.dead_letter, None, to_json(value))

    def steps(self, steps: RoutedSteps, records: KafkaRecords) -> None:
        """The pairs, late and malformed records of one call's steps, all things of a spec at
        once (keys `thing.result`, each thing's pairs in a row, in emission order)."""
        names = steps.names
        for spec, things, pairs in steps.pairs_by_spec(codes=True):
            runs = [(f"{names[code]}.{spec.result}", n) for code, n in value_runs(things)]
            block = pair_json_block(CodedNames(things, names), spec, pairs)
            self.rows.add_block("pair", self.topics.pairs, runs, block)
            self.max_event_time = np.nanmax([self.max_event_time, float(pairs.time.max())])
        for spec, series, rows, verdicts in steps.verdicts_by_spec():
            self.duplicates += int(np.count_nonzero(verdicts.codes == DUPLICATE))
            for k in np.flatnonzero(verdicts.codes >= MALFORMED):
                self._rejected(spec, series, records.row(int(rows[k])), verdicts, k)

    def _rejected(self, spec: JoinSpec, series, row: dict, verdicts, k) -> None:
        if verdicts.codes[k] == MALFORMED:
            reason = f"value of {row['quantity']} cannot be taken by {spec.function_name}"
            self._dead_letter(reason, row["value"], int(row["partition"]), int(row["offset"]))
            return
        if verdicts.codes[k] != LATE:
            return
        value = late_record(
            "join",
            thing=row["thing"],
            quantity=row["quantity"],
            phenomenon_time=row["t"],
            result=row["v"],
            watermark=verdicts.watermark[k],
            source_topic=self.topics.source,
            partition=int(row["partition"]),
            offset=int(row["offset"]),
            series=series,
            join=spec.result,
        )
        key = f"{row['thing']}.{row['quantity']}"
        self.rows.add("late", self.topics.late, key, to_json(value))

    def stats(self, records: int, state_records: int) -> None:
        """The call's figures, for the last row."""
        self.figures = {
            "records": records,
            "duplicates": self.duplicates,
            "state_records": state_records,
            "max_event_time": self.max_event_time,
        }

    def frame(self) -> pd.DataFrame:
        return self.rows.frame(self.figures, FIGURE_COLUMNS)
