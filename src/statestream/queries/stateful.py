"""The Spark wiring every stateful query shares: its processor over groups of rows
(`processed`), its batch metrics observed on the output, built from its declared figures
(`observed`), and the settings its checkpoint's state was written with (`check_checkpoint`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.stateful_processor import StatefulProcessor
from pyspark.sql.types import StructType

from statestream.errors import ConfigError
from statestream.exactly_once.sink import packed_count, summed
from statestream.queries.definition import Figure, QueryDef


def processed(
    rows: DataFrame,
    processor: StatefulProcessor,
    schema: StructType | str,
    *,
    key: str = "bucket",
    mode: str = "Update",
    time_mode: str = "None",
) -> DataFrame:
    """`processor` over `rows` grouped by `key` (transformWithStateInPandas): its output rows,
    of `schema` (`exactly_once.packed_rows`)."""
    return rows.groupBy(key).transformWithStateInPandas(
        statefulProcessor=processor,
        outputStructType=schema,
        outputMode=mode,
        timeMode=time_mode,
    )


def observed(frame: DataFrame, query: QueryDef, *extra: Column) -> DataFrame:
    """`frame` observing, under the query's metrics name, the records in (the rows' `records`
    summed), each declared figure, the latest event time (`max_event_time`) and `extra`."""
    return frame.observe(
        query.metrics_name,
        summed("records").alias("records_in"),
        *(figure_column(figure) for figure in query.figures),
        F.max("max_event_time").alias("max_event_time_ms"),
        *extra,
    )


def figure_column(figure: Figure) -> Column:
    """The aggregate that computes `figure` from a batch's output rows (see `Figure.source`)."""
    how, _, what = figure.source.partition(":")
    if how == "sum":
        return summed(what).alias(figure.name)
    if how == "count":
        return packed_count(F.col("kind") == what).alias(figure.name)
    if how == "max":
        return F.max(what).alias(figure.name)
    raise ValueError(f"figure {figure.name}: unknown source {figure.source!r}")


def check_checkpoint(checkpoint: Path, marker: str, wanted: dict[str, Any], what: str) -> None:
    """Refuse a checkpoint whose state was written with other settings than `wanted`.

    The settings that shape a query's state (window lengths, a cell resolution) are kept in a
    small file `marker` in the checkpoint folder, written on the first start, so a changed
    setting stops the command with one line before Spark starts, not with a failed batch.
    `what` names the state in that line ("windows").
    """
    path = checkpoint / marker
    if not path.is_file():
        checkpoint.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(wanted))
        return
    stored = json.loads(path.read_text())
    if stored != wanted:
        raise ConfigError(
            f"checkpoint {checkpoint} holds {what} of other settings ({stored}) than the "
            f"settings ({wanted}); use a new --checkpoint"
        )
