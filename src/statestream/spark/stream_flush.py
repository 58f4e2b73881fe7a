"""The final flush of a streaming complement join: the pairs still pending in its checkpoint.

A stream has no flush (`stream_join`): when its input has ended and its query has stopped, the
pairs that wait for records that will never come stay in the engines' state. `flush_stream`
reads that state from the query's checkpoint with Spark's state data source (format
`statestore`, the MapState `things` of the `transformWithStateInPandas` operator, found by the
checkpoint's operator metadata (format `state-metadata`): one row per
thing, its engines packed by result name, `spark.stored_engines`), finishes every thing's
engines on the executors, one bucket per group, and returns their pairs in `complement_join`'s
columns. So the stream's pairs and the flush's together are the batch join's with flush.

    >>> pairs = complement_join(stream, specs, order="offset")        # doctest: +SKIP
    >>> # … the query ran to the end of its input (availableNow) and stopped …
    >>> rest = flush_stream(stream, specs, checkpoint, order="offset")  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, DataFrameReader
from pyspark.sql import functions as F
from pyspark.sql import types as T

from statestream.errors import ConfigError
from statestream.join import JoinSpec, SpecTemplate, restore_state, unpack_states
from statestream.spark._batch_input import InputColumns, check_schema
from statestream.spark._bucket_join import BucketJoin, new_router
from statestream.spark._pair_rows import output_schema, pairs
from statestream.spark._stream_bucket import NAME_COLUMNS, with_spec_names
from statestream.spark.batch_join import with_defaults
from statestream.spark.stored_engines import MAP_STATE
from statestream.spark.worker_python import check_worker_python

STATE_FORMAT = "statestore"  # Spark's state data source (reads transformWithState variables)
METADATA_FORMAT = "state-metadata"  # the operators of a checkpoint and their state variables
_NO_COMMITTED_BATCH = "STDS_COMMITTED_BATCH_UNAVAILABLE"


def flush_stream(
    df: DataFrame,
    specs: Sequence[JoinSpec | SpecTemplate],
    checkpoint: str | Path,
    *,
    thing: str = "thing",
    quantity: str = "quantity",
    time: str = "phenomenonTime",
    value: str = "result",
    order: str | None = None,
    disorder: float = 0.0,
    tolerance: float | None = None,
    buckets: int | None = None,
    time_unit: str = "ms",
    operator: int | None = None,
) -> DataFrame:
    """The pairs still pending in the checkpoint of a stopped streaming `complement_join`: its
    final flush, as a batch DataFrame of `complement_join`'s columns.

    Call it with what the stream's `complement_join` was given (`df`, the same `specs` and
    options; only `df`'s schema is used, and `order` and `buckets` change nothing here) and the
    query's `checkpointLocation`, once the query has stopped at the end of its input. The
    stream's pairs and these together are `complement_join(…, flush=True)` of the same records
    in batch. Reads the state of the last committed micro-batch of the join's operator: the
    query's one `transformWithStateInPandas` operator with the join's state, found in the
    checkpoint's metadata; `operator` (its `operatorId`) when the query has more than one.
    No record goes through the driver. Flushing declares the input finished: a query continued
    from this checkpoint afterwards would emit these pairs again, when they become certain.

    Raises `ConfigError` when the checkpoint has no committed micro-batch (a wrong path, or a
    query that never ran), no join state or the state of several joins without `operator`, or
    holds join state for a result that none of `specs` makes (found on
    the executors, so inside Spark's error), and `SchemaError` and `ConfigError` as
    `complement_join`.
    """
    check_worker_python(df.sparkSession)
    columns = InputColumns(thing, quantity, time, value, order)
    kind = check_schema(df, columns, time_unit)
    if not specs:
        raise ConfigError("flush_stream needs the JoinSpecs or SpecTemplates of the stream")
    del buckets  # the state's rows carry their bucket
    defaulted = [with_defaults(spec, disorder, tolerance) for spec in specs]
    if operator is None:
        operator = join_operator(df.sparkSession.read, checkpoint)
    state = stored_engines(df.sparkSession.read, checkpoint, operator)
    integral = isinstance(kind.carried_type, T.IntegralType)
    finish = StoredEnginesFlush(
        defaulted,
        BucketJoin(
            [], kind.to_ms, flush=False, integer_time=kind.is_timestamp, times_from_engine=True
        ),
        np.dtype(np.int64 if integral else np.float64),
    )
    schema = output_schema(state, kind, finish.join.columns, list(NAME_COLUMNS.values()))
    out = state.groupBy("bucket").applyInPandas(_one_frame(finish), schema)
    return pairs(out, lambda role: F.col(NAME_COLUMNS[role]), kind)


def join_operator(reader: DataFrameReader, checkpoint: str | Path) -> int:
    """The `operatorId` of the checkpoint's one complement join: a `transformWithStateInPandas`
    operator whose state variables include the MapState of the engines (`MAP_STATE`)."""
    return operator_holding(reader, checkpoint, MAP_STATE[0], "complement_join", "flush_stream")


def operator_holding(
    reader: DataFrameReader, checkpoint: str | Path, state: str, what: str, call: str
) -> int:
    """The `operatorId` of the checkpoint's one transformWithState operator with the state
    variable `state` (the state of a `what`); `ConfigError` naming `call`'s `operator=` when
    there are several, and when there is none."""
    metadata = read_state(reader.format(METADATA_FORMAT), checkpoint)
    rows = metadata.select("operatorId", "operatorName", "operatorProperties").collect()
    found = sorted({int(row.operatorId) for row in rows if _holds(row, state)})
    if len(found) == 1:
        return found[0]
    if not rows:  # no state at all (Spark's reader only logs a warning)
        raise _no_committed_batch(checkpoint)
    if not found:
        operators = ", ".join(sorted({row.operatorName for row in rows}))
        raise ConfigError(
            f"the checkpoint {checkpoint} holds no {what} state (its operators: {operators})"
        )
    raise ConfigError(
        f"the checkpoint {checkpoint} holds the state of {len(found)} {what} queries "
        f"(operators {', '.join(map(str, found))}): say which with {call}(operator=…)"
    )


def _holds(row, state: str) -> bool:  # one row of the state-metadata source
    if not str(row.operatorName).startswith("transformWithState"):
        return False
    variables = json.loads(row.operatorProperties or "{}").get("stateVariables", [])
    return any(v.get("stateName") == state for v in variables)


def stored_engines(reader: DataFrameReader, checkpoint: str | Path, operator: int = 0) -> DataFrame:
    """The engines a stream's checkpoint holds in its operator `operator`, one row per thing:
    bucket, thing, engines (the packed engine states of the last committed micro-batch)."""
    state_reader = reader.format(STATE_FORMAT).option("operatorId", operator)
    state = read_state(state_reader.option("stateVarName", MAP_STATE[0]), checkpoint)
    return state.select(
        F.col("key.bucket").alias("bucket"),
        F.col("user_map_key.thing").alias("thing"),
        F.col("user_map_value.engines").alias("engines"),
    )


def read_state(reader: DataFrameReader, checkpoint: str | Path) -> DataFrame:
    """`reader.load(checkpoint)`; a checkpoint without a committed batch is a `ConfigError`.
    Its schema is asked for here: Spark Connect analyses a plan only then, classic at `load`."""
    try:
        state = reader.load(str(checkpoint))
        state.schema  # noqa: B018 (analysed now, so an error is raised here)
        return state
    except PySparkException as error:
        if error.getCondition() != _NO_COMMITTED_BATCH:
            raise
        raise _no_committed_batch(checkpoint) from error


def _no_committed_batch(checkpoint: str | Path) -> ConfigError:
    return ConfigError(
        f"the checkpoint {checkpoint} has no committed micro-batch: is it the stream's "
        "checkpointLocation, and has its query run? (a query that never ran has no pairs)"
    )


def _one_frame(finish: StoredEnginesFlush) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """`finish` as a plain function of one bucket's frame (Spark passes a callable object the
    group key)."""

    def run(state: pd.DataFrame) -> pd.DataFrame:
        return finish(state)

    return run


@dataclasses.dataclass(frozen=True)
class StoredEnginesFlush:
    """applyInPandas function: one bucket's stored engines finished, their pairs as the stream's
    processor gives its pairs (`BucketJoin.output`, quantities in `NAME_COLUMNS`).

    `join` is the stream's `BucketJoin` (times from the engine); `time_dtype` the dtype of the
    stream's carried times (integers come back rounded, as in the stream).
    """

    specs: Sequence[JoinSpec | SpecTemplate]
    join: BucketJoin
    time_dtype: np.dtype

    def __call__(self, state: pd.DataFrame) -> pd.DataFrame:
        stored = {
            thing: unpack_states(bytes(engines))
            for thing, engines in zip(state["thing"], state["engines"], strict=True)
        }
        results = sorted({result for states in stored.values() for result in states})
        specs = [self.spec_for(result) for result in results]

        def load(thing: str, index: int):
            return restore_state(specs[index], stored[thing][specs[index].result])

        router = new_router(specs, load_engine=load)
        for index, spec in enumerate(specs):
            router.load([thing for thing, states in stored.items() if spec.result in states], index)
        join = dataclasses.replace(self.join, specs=specs)
        no_records = pd.DataFrame({"t": np.empty(0, dtype=self.time_dtype)})
        return with_spec_names(join.output([router.finish()], no_records), specs)

    def spec_for(self, result: str) -> JoinSpec:
        """The spec whose engines are stored under `result`: a JoinSpec's, or a template's."""
        for spec in self.specs:
            if isinstance(spec, JoinSpec) and spec.result == result:
                return spec
            if isinstance(spec, SpecTemplate) and (found := spec.spec_for_result(result)):
                return found
        raise ConfigError(
            f"the checkpoint holds join state for {result!r}, which none of the specs makes; "
            "give flush_stream the specs of the stream"
        )
