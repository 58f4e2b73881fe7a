"""The final flush of a streaming `asof_join`: the left rows still waiting in its checkpoint.

A stream never ends, so a left row whose match is not certain yet (no later right row, the right
side's watermark not past it) waits in the query's state. Once the input has ended and the query
has stopped, `flush_asof` reads that state from the checkpoint with Spark's state data source
(the ValueState `asof` of the `transformWithStateInPandas` operator), finishes each bucket's
engine on the executors (`AsofStream.flush`) and returns those rows as `asof_join` would. The
stream's rows and these together are `asof_join` of the same rows in batch.

    >>> joined = asof_join(left, right, on="t", by="k", order="offset")  # doctest: +SKIP
    >>> # … the query ran to the end of its input (availableNow) and stopped …
    >>> rest = flush_asof(left, right, checkpoint, on="t", by="k", order="offset")  # doctest: +SKIP
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, overload

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from statestream.join.asof_stream import AsofStream
from statestream.spark._asof_call import emitted, engine_rule
from statestream.spark._asof_processor import STATE
from statestream.spark._asof_stream import OUTPUT, read_back
from statestream.spark.asof import Direction, Span, asof_plan
from statestream.spark.stream_flush import STATE_FORMAT, operator_holding, read_state
from statestream.spark.worker_python import check_worker_python


@overload
def flush_asof(
    left: DataFrame,
    right: DataFrame,
    checkpoint: str | Path,
    *,
    on: str,
    by: str | Sequence[str] | None = ...,
    direction: Direction = ...,
    tolerance: Span | None = ...,
    allow_exact_matches: bool = ...,
    order: str | None = ...,
    disorder: Span = ...,
    suffixes: tuple[str, str] = ...,
    operator: int | None = ...,
    late: Literal[False] = ...,
) -> DataFrame: ...


@overload
def flush_asof(
    left: DataFrame,
    right: DataFrame,
    checkpoint: str | Path,
    *,
    on: str,
    by: str | Sequence[str] | None = ...,
    direction: Direction = ...,
    tolerance: Span | None = ...,
    allow_exact_matches: bool = ...,
    order: str | None = ...,
    disorder: Span = ...,
    suffixes: tuple[str, str] = ...,
    operator: int | None = ...,
    late: Literal[True],
) -> tuple[DataFrame, DataFrame]: ...


def flush_asof(
    left: DataFrame,
    right: DataFrame,
    checkpoint: str | Path,
    *,
    on: str,
    by: str | Sequence[str] | None = None,
    direction: Direction = "backward",
    tolerance: Span | None = None,
    allow_exact_matches: bool = True,
    order: str | None = None,
    disorder: Span = 0,
    suffixes: tuple[str, str] = ("_x", "_y"),
    operator: int | None = None,
    late: bool = False,
) -> DataFrame | tuple[DataFrame, DataFrame]:
    """The left rows still pending in the checkpoint of a stopped streaming `asof_join`, matched
    among the right rows it kept: its final flush, as a batch DataFrame of `asof_join`'s columns.

    Give it the two streams and the options the stream's `asof_join` was given (only the
    schemas are read) and the query's `checkpointLocation`; `operator` (its `operatorId`) when
    the query has more than one stateful operator of this kind. Flushing declares the input
    finished: a query continued from this checkpoint would emit these rows again. Raises
    `ConfigError` when the checkpoint has no committed micro-batch or no as-of join state.
    """
    check_worker_python(left.sparkSession)
    plan = asof_plan(
        left, right, on, by, direction, tolerance, allow_exact_matches, order, disorder, suffixes
    )
    reader = left.sparkSession.read
    if operator is None:
        operator = operator_holding(reader, checkpoint, STATE[0], "asof_join", "flush_asof")
    state_reader = reader.format(STATE_FORMAT).option("operatorId", operator)
    state = read_state(state_reader.option("stateVarName", STATE[0]), checkpoint)
    blobs = state.select(F.col("value.blob").alias("blob"))
    out = blobs.mapInPandas(FlushBuckets(plan.setup), OUTPUT)
    joined, refused = read_back(out, *plan.sides, plan.payload, plan.names)
    return (joined, refused) if late else joined


@dataclass(frozen=True)
class FlushBuckets:
    """mapInPandas function: each stored bucket's engine finished, its rows as the stream's."""

    setup: dict[str, Any]

    def __call__(self, frames: Iterable[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for frame in frames:
            for blob in frame["blob"]:
                stored = pickle.loads(bytes(blob))
                engine = AsofStream.from_state(
                    engine_rule(self.setup), self.setup["disorder"], stored["engine"]
                )
                yield emitted(engine.flush())
