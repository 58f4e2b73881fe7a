"""The Spark wiring every stateful query shares: its processor over groups of rows
(`processed`), and its batch metrics observed on the output, built from its declared figures
(`observed`)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.stateful_processor import StatefulProcessor
from pyspark.sql.types import StructType

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
