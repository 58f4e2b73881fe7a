"""The complement join of a Spark DataFrame, in batch: every thing's series joined with flush.

    >>> from statestream.join import SpecTemplate
    >>> pairs = complement_join(df, [SpecTemplate()])                          # doctest: +SKIP
    >>> pairs, rejected = complement_join(df, [SpecTemplate()], rejected=True) # doctest: +SKIP

Things are grouped into buckets (a hash of the thing modulo `buckets`), the buckets hashed into
shuffle partitions (Spark's hash of their labels, `bucket_labels`); each partition runs one
`JoinRouter` over its records in arrival order (`_bucket_join`), so a thing meets only its own
records and the result is the offline join's, whatever the partitioning. By default the shuffle
is a repartition by the bucket column alone, which adaptive execution coalesces into partitions of
several buckets (a small input does not run `spark.sql.shuffle.partitions` near-empty tasks), and
an input that fits one task (`plan_size`) has no shuffle: it is coalesced into one partition; a
`buckets=` given runs in exactly that many partitions. The partitions go through `mapInArrow`:
Spark does not sort them by bucket (as `groupBy(…).applyInArrow` would), the records are put in
arrival order in numpy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Literal, overload

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from statestream.errors import ConfigError
from statestream.join import JoinSpec, SpecTemplate
from statestream.spark._batch_input import (
    InputColumns,
    bucketed,
    check_schema,
    rejection_reason,
)
from statestream.spark._bucket_join import BucketJoin
from statestream.spark._pair_rows import by_spec_index, output_schema, pairs, rejected_rows
from statestream.spark._stream_bucket import specs_for
from statestream.spark.plan_size import default_buckets, fits_one_task
from statestream.spark.stream_join import streaming_join
from statestream.spark.worker_python import check_worker_python


# the pairs, or with rejected=True the pairs and the rejected rows (for a type checker)
@overload
def complement_join(
    df: DataFrame,
    specs: Sequence[JoinSpec | SpecTemplate],
    *,
    thing: str = ...,
    quantity: str = ...,
    time: str = ...,
    value: str = ...,
    order: str | None = ...,
    disorder: float = ...,
    tolerance: float | None = ...,
    flush: bool = ...,
    buckets: int | None = ...,
    rejected: Literal[False] = ...,
    time_unit: str = ...,
) -> DataFrame: ...


@overload
def complement_join(
    df: DataFrame,
    specs: Sequence[JoinSpec | SpecTemplate],
    *,
    thing: str = ...,
    quantity: str = ...,
    time: str = ...,
    value: str = ...,
    order: str | None = ...,
    disorder: float = ...,
    tolerance: float | None = ...,
    flush: bool = ...,
    buckets: int | None = ...,
    rejected: Literal[True],
    time_unit: str = ...,
) -> tuple[DataFrame, DataFrame]: ...


@overload
def complement_join(
    df: DataFrame,
    specs: Sequence[JoinSpec | SpecTemplate],
    *,
    thing: str = ...,
    quantity: str = ...,
    time: str = ...,
    value: str = ...,
    order: str | None = ...,
    disorder: float = ...,
    tolerance: float | None = ...,
    flush: bool = ...,
    buckets: int | None = ...,
    rejected: bool,
    time_unit: str = ...,
) -> DataFrame | tuple[DataFrame, DataFrame]: ...


def complement_join(
    df: DataFrame,
    specs: Sequence[JoinSpec | SpecTemplate],
    *,
    thing: str = "thing",
    quantity: str = "quantity",
    time: str = "phenomenonTime",
    value: str = "result",
    order: str | None = None,
    disorder: float = 0.0,
    tolerance: float | None = None,
    flush: bool = True,
    buckets: int | None = None,
    rejected: bool = False,
    time_unit: str = "ms",
) -> DataFrame | tuple[DataFrame, DataFrame]:
    """The pairs of the complement join of `df`'s records, as the spec's output records.

    `df` holds narrow records (one quantity's value per row; `observations` makes them from
    wide machine rows) under the column names given. `specs` are `JoinSpec`s or `SpecTemplate`s,
    the templates expanded with the quantities found in `df`. `disorder` and `tolerance`
    (seconds) apply to the specs that leave theirs unset (0 and None).

    Each series is taken in arrival order: `order` names a column giving it (a Kafka offset, an
    ingestion time); without it, in time order, ties in the input's order. `flush` emits the
    pairs still pending at the end (the whole join); without it, only the certain ones.
    `buckets` (default `spark.sql.shuffle.partitions`) is how many buckets the things are hashed
    into; in batch a `buckets` given is also the number of partitions the join runs in, while
    the default lets adaptive execution coalesce the shuffle's partitions to the data's size,
    and runs an input Spark estimates at most its broadcast size
    (`spark.sql.autoBroadcastJoinThreshold`) in one task, without a shuffle.

    On a streaming DataFrame (`stream_join`) the result is a streaming DataFrame of the same
    columns, each pair emitted in the micro-batch where it becomes certain, with the engines'
    state kept by the query (RocksDB, in its checkpoint). A stream is taken micro-batch by
    micro-batch in arrival order: `order` within a micro-batch (else time order), micro-batches
    in the order they come; over any split the pairs are the batch join's with `flush=False`.
    `flush` is ignored: pairs still pending are released by later records, also after a restart
    from the checkpoint; once the input has ended and the query stopped, `flush_stream` gives
    them from the checkpoint (batch with flush = the stream plus `flush_stream`). Keep `buckets`
    and the specs fixed for a checkpoint: they are the state's layout.

    Times come back in the input's type: a timestamp, or epoch ms or seconds (`time_unit` "ms"
    or "s" for a numeric column); a pair's time is the mean of its two (a timestamp's rounded
    down to the µs). Returns a DataFrame with columns thing, quantity, phenomenonTime, result,
    left and right (structs of quantity, phenomenonTime, result); with `rejected`, also a
    DataFrame of the rows that were not joined (the input's columns and a `reason`): missing
    or non-finite fields, late records, duplicates, values the result function cannot take.
    Each of the two is computed when an action uses it; in batch the join's output is persisted
    for both (`MEMORY_AND_DISK`), so it runs once (`spark.catalog.clearCache()` releases it once
    both are written); on a stream each query runs the join.

    Raises `SchemaError` naming the column when one is missing or of a type the join cannot
    take, and `ConfigError` when a local master's Python workers cannot import statestream
    (`worker_python`).
    """
    check_worker_python(df.sparkSession)
    columns = InputColumns(thing, quantity, time, value, order)
    kind = check_schema(df, columns, time_unit)
    if not specs:
        raise ConfigError("complement_join needs at least one JoinSpec or SpecTemplate")
    defaulted = [with_defaults(spec, disorder, tolerance) for spec in specs]
    if df.isStreaming:
        return streaming_join(
            df, defaulted, columns, kind, buckets=buckets or default_buckets(df), rejected=rejected
        )
    concrete = _concrete_specs(df, defaulted, quantity)
    relevant = F.col(quantity).isin(sorted({q for s in concrete for q in (s.left, s.right)}))
    reason = rejection_reason(df, columns)
    join = BucketJoin(
        concrete,
        kind.to_ms,
        flush=flush,
        rejected=rejected,
        has_order=order is not None,
        integer_time=kind.is_timestamp,
    )
    grouped = bucketed(
        df.filter(relevant & reason.isNull()), columns, kind, buckets or default_buckets(df)
    )
    schema = output_schema(grouped, kind, join.columns)
    batch_rows = _arrow_batch_rows(df)
    partitions = _partitioned(grouped, buckets).drop("bucket")
    out = partitions.mapInArrow(_one_partition(join, to_arrow_schema(schema), batch_rows), schema)
    if rejected:  # the pairs and the rejected rows: two actions, one run of the join
        out = out.persist(StorageLevel.MEMORY_AND_DISK)
    found = pairs(out, by_spec_index(concrete), kind)
    if not rejected:
        return found
    bad_rows = df.filter(F.col(quantity).isNull() | relevant).filter(reason.isNotNull())
    return found, rejected_rows(df, columns, kind, out, bad_rows.withColumn("reason", reason))


def _partitioned(grouped: DataFrame, buckets: int | None) -> DataFrame:
    """`grouped` with each bucket in one partition: `buckets` partitions when given; else, if it
    fits one task (`plan_size`), all of it in one partition without a shuffle; else a
    repartition by the bucket alone (`spark.sql.shuffle.partitions` partitions, coalesced by
    adaptive execution: a partition holds whole buckets, maybe several)."""
    if buckets:
        return grouped.repartition(buckets, "bucket")
    if fits_one_task(grouped):
        return grouped.coalesce(1)
    return grouped.repartition("bucket")


def _one_partition(
    join: BucketJoin, schema: pa.Schema, batch_rows: int
) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """`join` over one partition's records at once (Spark's `mapInArrow`), its output in batches
    of at most `batch_rows` rows (slices, not copies)."""

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        received = list(batches)
        table = pa.Table.from_batches(received) if received else None
        if table is not None and table.num_rows:
            yield from join.arrow(table, schema).to_batches(max_chunksize=batch_rows)

    return run


def _arrow_batch_rows(df: DataFrame) -> int:
    """Spark's `spark.sql.execution.arrow.maxRecordsPerBatch` (10,000 unless set; ≤ 0: no cap)."""
    value = df.sparkSession.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
    rows = int(value) if value and value.lstrip("-").isdigit() else 10_000
    return rows if rows > 0 else 2**62


def _concrete_specs(
    df: DataFrame, specs: Sequence[JoinSpec | SpecTemplate], quantity: str
) -> list[JoinSpec]:
    """The join specs, templates expanded with `df`'s quantities, once each."""
    names: list[str] = []
    if any(isinstance(spec, SpecTemplate) for spec in specs):  # the names: metadata, not data
        rows = df.select(quantity).where(F.col(quantity).isNotNull()).distinct().collect()
        names = [row[0] for row in rows]
    return specs_for(specs, names)


def with_defaults(
    spec: JoinSpec | SpecTemplate, disorder: float, tolerance: float | None
) -> JoinSpec | SpecTemplate:
    """`spec` with the call's disorder and tolerance where it leaves its own unset."""
    changes: dict = {}
    if spec.disorder == 0.0 and disorder:
        changes["disorder"] = disorder
    if spec.tolerance is None and tolerance is not None:
        changes["tolerance"] = tolerance
    return dataclasses.replace(spec, **changes) if changes else spec
