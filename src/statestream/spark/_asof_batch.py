"""`asof_join` of two batch DataFrames, and of a stream with a static right side.

Batch: both sides are bucketed by a hash of their `asof_key`; each bucket's two sides meet in one
`cogroup(…).applyInArrow` call (buckets labelled by `bucket_labels`, which Spark's hash
partitioning spreads evenly), which matches every left row with `statestream.join.asof`
(`asof_indices`, vectorized over the bucket's keys) and takes the matched right rows in Arrow, so
every column keeps its type. The shuffle is a plain grouping, so adaptive execution coalesces its
partitions.

Small batch: when both sides fit one task (`plan_size`: Spark's estimate is at most the size it
would broadcast) and no `buckets` are given, there is no shuffle: the two sides, as one union, go
to one task (`coalesce(1)`), whose `mapInArrow` call matches them all at once (`WholeMatch`).

Stream–static: the static right side is grouped by `asof_key` into one array of its rows per key,
sorted; the stream's rows meet their key's array in a stream–static left outer join, and each
micro-batch's rows pick their match from it (`mapInArrow`). A match against a static side is
certain at once, so each left row comes out in the micro-batch that brings it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from statestream.join.asof import AsofRule, asof_indices
from statestream.spark._asof_sides import BUCKET, KEY, ORDER, SIDE, TIME
from statestream.spark.bucket_labels import bucket_labels
from statestream.spark.plan_size import default_buckets, fits_one_task

RIGHTS = "asof_rights"  # stream–static: the key's right rows, one array


def batch_asof(
    left: DataFrame,
    right: DataFrame,
    rule: AsofRule,
    names: tuple[list[str], list[str]],
    payload: list[str],
    buckets: int | None,
) -> DataFrame:
    """The batch as-of join of the prepared sides (`asof_key`, `asof_t`, `asof_order` added):
    in one task if they are small and `buckets` is None, else in `buckets` (default: the
    session's shuffle partitions) buckets."""
    left_columns = [c for c in left.columns if c not in (KEY, TIME, ORDER)]
    schema = _output_schema(left, right, left_columns, payload, names)
    if buckets is None and fits_one_task(left, right):
        return whole_asof(left, right, rule, left_columns, payload, schema)
    match = BucketMatch(rule, left_columns, payload, schema.names)
    bucket = _bucket_label(buckets or default_buckets(left))
    return (
        left.withColumn(BUCKET, bucket)
        .groupBy(BUCKET)
        .cogroup(right.withColumn(BUCKET, bucket).groupBy(BUCKET))
        .applyInArrow(_two_tables(match), schema)
    )


def _bucket_label(buckets: int) -> Column:
    """A hash of `asof_key` modulo `buckets`, as the bucket's label (`bucket_labels`): labels
    that Spark's hash partitioning spreads evenly (the bucket numbers themselves are uneven:
    buckets 0 and 1 both go to partition 1 of 2, and one task does all the matching)."""
    labels = F.array(*(F.lit(label) for label in bucket_labels(buckets)))
    return F.element_at(labels, (F.pmod(F.xxhash64(KEY), F.lit(buckets)) + 1).cast("int"))


def _two_tables(match: BucketMatch) -> Callable[[pa.Table, pa.Table], pa.Table]:
    """`match` as a plain function of the two tables (Spark reads a callable object's `self`
    as a parameter, and would pass it the group key)."""

    def run(left: pa.Table, right: pa.Table) -> pa.Table:
        return match(left, right)

    return run


def static_asof(
    left: DataFrame,
    right: DataFrame,
    rule: AsofRule,
    names: tuple[list[str], list[str]],
    payload: list[str],
) -> DataFrame:
    """A streaming left side as-of joined with a static right side (both prepared)."""
    left_columns = [c for c in left.columns if c not in (KEY, TIME, ORDER)]
    schema = _output_schema(left, right, left_columns, payload, names)
    row = F.struct(F.col(TIME), F.col(ORDER), *[F.col(f"`{c}`") for c in payload])
    arrays = (
        right.filter(F.col(TIME).isNotNull())
        .groupBy(KEY)
        .agg(F.sort_array(F.collect_list(row)).alias(RIGHTS))
    )
    joined = left.join(arrays, on=KEY, how="left")
    return joined.mapInArrow(StaticMatch(rule, left_columns, payload, schema.names), schema)


@dataclass(frozen=True)
class BucketMatch:
    """cogroup applyInArrow function: one bucket's left rows, each with its right match."""

    rule: AsofRule
    left_columns: Sequence[str]
    payload: Sequence[str]
    names: Sequence[str]

    def __call__(self, left: pa.Table, right: pa.Table) -> pa.Table:
        found = _matches(
            self.rule,
            _keys(left[KEY]),
            left[TIME],
            _keys(right[KEY]),
            right[TIME],
            right[ORDER],
        )
        taken = right.select(list(self.payload)).take(_indices(found))
        columns = left.select(list(self.left_columns)).columns + taken.columns
        return pa.Table.from_arrays([_in_utc(c) for c in columns], names=list(self.names))


@dataclass(frozen=True)
class StaticMatch:
    """mapInArrow function: stream rows, each with its key's static right rows, matched."""

    rule: AsofRule
    left_columns: Sequence[str]
    payload: Sequence[str]
    names: Sequence[str]

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            rights = batch.column(RIGHTS)
            flat = pc.list_flatten(rights)
            owner = pc.list_parent_indices(rights).to_numpy()
            flat_time = pc.struct_field(flat, [0]) if len(flat) else pa.array([], pa.int64())
            flat_order = pc.struct_field(flat, [1]) if len(flat) else pa.array([], pa.int64())
            found = _matches(
                self.rule,
                np.arange(batch.num_rows, dtype=np.int64),
                batch.column(TIME),
                owner.astype(np.int64),
                flat_time,
                flat_order,
            )
            indices = _indices(found)
            taken = [pc.struct_field(flat, [2 + i]).take(indices) for i in range(len(self.payload))]
            columns = [batch.column(name) for name in self.left_columns] + taken
            yield pa.RecordBatch.from_arrays(columns, names=list(self.names))


def _in_utc(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """A timestamp column as PySpark takes it back from a grouped Arrow function, zoned "UTC":
    it hands them in zoned by the session's time zone (e.g. "Etc/UTC", "Europe/Helsinki") but
    refuses any zone other than "UTC" in the result (RESULT_COLUMN_TYPES_MISMATCH, PySpark
    4.0–4.3; `mapInArrow` takes either). The instants are the same; only the zone's name
    changes."""
    kind = column.type
    if pa.types.is_timestamp(kind) and kind.tz is not None and kind.tz != "UTC":
        return column.cast(pa.timestamp(kind.unit, "UTC"))
    return column


def _matches(
    rule: AsofRule,
    left_key: np.ndarray,
    left_time: pa.Array | pa.ChunkedArray,
    right_key: np.ndarray,
    right_time: pa.Array | pa.ChunkedArray,
    right_order: pa.Array | pa.ChunkedArray,
) -> np.ndarray:
    """For each left row, the index of its right match or -1; rows without a time match nothing."""
    found = np.full(len(left_key), -1, dtype=np.int64)
    left_ok = _valid(left_time)
    right_ok = _valid(right_time)
    if not left_ok.any() or not right_ok.any():
        return found
    kept = np.flatnonzero(right_ok)
    sub = asof_indices(
        left_key[left_ok],
        _numbers(left_time)[left_ok],
        right_key[right_ok],
        _numbers(right_time)[right_ok],
        rule,
        right_order=_numbers(right_order, fill=0)[right_ok].astype(np.int64),
    )
    found[left_ok] = np.where(sub >= 0, kept[np.maximum(sub, 0)], -1)
    return found


def _valid(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(pc.is_valid(values).to_numpy(zero_copy_only=False), dtype=bool)


def _numbers(values: pa.Array | pa.ChunkedArray, fill: int | float = 0) -> np.ndarray:
    return np.asarray(pc.fill_null(values, fill).to_numpy(zero_copy_only=False))


def _keys(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=object)


def _indices(found: np.ndarray) -> pa.Array:
    """`found` as Arrow take() indices: -1 (no match) as null, which takes a null row."""
    return pa.array(found, type=pa.int64(), mask=found < 0)


def _output_schema(
    left: DataFrame,
    right: DataFrame,
    left_columns: Sequence[str],
    payload: Sequence[str],
    names: tuple[list[str], list[str]],
) -> T.StructType:
    """The output: the left columns as they are, then the right payload, nullable, renamed."""
    left_names, right_names = names
    fields = [
        T.StructField(name, left.schema[column].dataType, left.schema[column].nullable)
        for name, column in zip(left_names, left_columns, strict=True)
    ]
    fields += [
        T.StructField(name, right.schema[column].dataType, True)
        for name, column in zip(right_names, payload, strict=True)
    ]
    return T.StructType(fields)


def whole_asof(
    left: DataFrame,
    right: DataFrame,
    rule: AsofRule,
    left_columns: Sequence[str],
    payload: Sequence[str],
    schema: T.StructType,
) -> DataFrame:
    """The batch as-of join in one task, without a shuffle: both sides as one union (`asof_side`
    0 or 1; each side's columns under their own names `l0…`, `r0…`, null on the other side's
    rows), coalesced to one partition, matched by `WholeMatch`."""
    helpers = [F.col(KEY), F.col(TIME), F.col(ORDER)]
    ours = [f"l{i}" for i in range(len(left_columns))]
    theirs = [f"r{i}" for i in range(len(payload))]
    left_values = [F.col(f"`{c}`").alias(n) for c, n in zip(left_columns, ours, strict=True)]
    right_values = [F.col(f"`{c}`").alias(n) for c, n in zip(payload, theirs, strict=True)]
    left_nulls = [_null(left, c, n) for c, n in zip(left_columns, ours, strict=True)]
    right_nulls = [_null(right, c, n) for c, n in zip(payload, theirs, strict=True)]
    both = left.select(F.lit(0).alias(SIDE), *helpers, *left_values, *right_nulls).unionByName(
        right.select(F.lit(1).alias(SIDE), *helpers, *left_nulls, *right_values)
    )
    match = BucketMatch(rule, ours, theirs, schema.names)
    return both.coalesce(1).mapInArrow(WholeMatch(match), schema)


def _null(df: DataFrame, column: str, name: str) -> Column:
    return F.lit(None).cast(df.schema[column].dataType).alias(name)


@dataclass(frozen=True)
class WholeMatch:
    """mapInArrow function: all rows of both sides (one partition), each left row matched."""

    match: BucketMatch

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        received = list(batches)
        if not received:
            return
        rows = pa.Table.from_batches(received)
        is_left = pc.equal(rows[SIDE], 0)
        joined = self.match(rows.filter(is_left), rows.filter(pc.invert(is_left)))
        yield from joined.to_batches()
