"""The flat rows of a bucket join (`_bucket_join.BucketJoin.columns`) shaped as the caller's output:
the pairs as the spec's output record, the rejected rows in the input's columns and a reason.

Shared by the batch and the streaming `complement_join`; the quantities of a pair's spec come
from a function of its role (left, right, result): looked up by the spec's index in batch, read
from columns a stream's processor fills.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from statestream.join import JoinSpec
from statestream.spark._batch_input import InputColumns, TimeKind
from statestream.spark._bucket_join import PAIR, REJECTED

SpecNames = Callable[[str], Column]  # role (left, right, result) → the quantity of a row's spec


def output_schema(
    grouped: DataFrame, kind: TimeKind, columns: Sequence[str], extra: Sequence[str] = ()
) -> T.StructType:
    """The schema of the flat rows of `grouped`'s bucket join, in `columns` (`BucketJoin.columns`);
    `extra`: string columns after them."""
    carried = kind.carried_type
    pair_time = T.LongType() if kind.is_timestamp else T.DoubleType()
    order_type = grouped.schema["o"].dataType if "o" in grouped.columns else T.LongType()
    types = {
        "kind": T.StringType(),
        "spec": T.IntegerType(),
        "thing": T.StringType(),
        "pair_t": pair_time,
        "result": T.DoubleType(),
        "left_t": carried,
        "left_v": T.DoubleType(),
        "right_t": carried,
        "right_v": T.DoubleType(),
        "quantity": T.StringType(),
        "t": carried,
        "v": T.DoubleType(),
        "o": order_type,
        "reason": T.StringType(),
    }
    fields = [T.StructField(name, types[name]) for name in columns]
    return T.StructType(fields + [T.StructField(name, T.StringType()) for name in extra])


def by_spec_index(specs: list[JoinSpec]) -> SpecNames:
    """The quantities of each row's spec, looked up by its index in `specs`."""

    def names(role: str) -> Column:
        by_index = F.array(*(F.lit(getattr(spec, role)) for spec in specs))
        return F.element_at(by_index, F.col("spec") + 1)

    return names


def pairs(out: DataFrame, names: SpecNames, kind: TimeKind) -> DataFrame:
    """The pair rows of `out` as the spec's output record, times in the caller's type."""
    if "kind" in out.columns:
        out = out.filter(F.col("kind") == PAIR)
    pair_time = F.timestamp_micros(F.col("pair_t")) if kind.is_timestamp else F.col("pair_t")

    def record(side: str) -> Column:
        return F.struct(
            names(side).alias("quantity"),
            kind.restored(F.col(f"{side}_t")).alias("phenomenonTime"),
            F.col(f"{side}_v").alias("result"),
        ).alias(side)

    return out.select(
        F.col("thing"),
        names("result").alias("quantity"),
        pair_time.alias("phenomenonTime"),
        F.col("result"),
        record("left"),
        record("right"),
    )


def rejected_rows(
    df: DataFrame, columns: InputColumns, kind: TimeKind, out: DataFrame, bad_rows: DataFrame
) -> DataFrame:
    """The rows not joined: those with a bad field, then those the engine rejected."""
    types = {field.name: field.dataType for field in df.schema.fields}
    engine = out.filter(F.col("kind") == REJECTED).select(
        F.col("thing").alias(columns.thing),
        F.col("quantity").alias(columns.quantity),
        kind.restored(F.col("t")).alias(columns.time),
        F.col("v").cast(types[columns.value]).alias(columns.value),
        *([F.col("o").alias(columns.order)] if columns.order is not None else []),
        F.col("reason"),
    )
    names = [name for _, name in columns.roles()]
    return bad_rows.select(*names, "reason").unionByName(engine)
