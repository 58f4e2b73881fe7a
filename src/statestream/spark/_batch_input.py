"""The input side of the batch join: the caller's columns checked, bad rows told apart, bucketed.

A schema problem raises `SchemaError` naming the column; a bad row (no thing, quantity or time,
a value that is not a finite number, …) is kept with its reason for the rejected output.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from statestream.errors import SchemaError
from statestream.spark.bucket_labels import bucket_labels

TIME_UNITS = {"ms": 1.0, "s": 1000.0}  # numeric time columns: factor to epoch ms
_MICROS_TO_MS = 0.001


@dataclass(frozen=True)
class InputColumns:
    """The caller's names of the record's columns; `order` the arrival order, if any."""

    thing: str
    quantity: str
    time: str
    value: str
    order: str | None = None

    def roles(self) -> list[tuple[str, str]]:
        named = [
            ("thing", self.thing),
            ("quantity", self.quantity),
            ("time", self.time),
            ("value", self.value),
        ]
        return named + ([("order", self.order)] if self.order is not None else [])


@dataclass(frozen=True)
class TimeKind:
    """How a time column reaches the engine: its type, as carried (µs for a timestamp), to ms."""

    data_type: T.DataType
    carried_type: T.DataType
    to_ms: float

    @property
    def is_timestamp(self) -> bool:
        return isinstance(self.data_type, T.TimestampType)

    def carried(self, column: Column) -> Column:
        """The time as numbers: µs of a timestamp, the number itself (decimals as double)."""
        if self.is_timestamp:
            return F.unix_micros(column)
        return column.cast(self.carried_type)

    def restored(self, column: Column) -> Column:
        """A carried time back in the caller's type."""
        if self.is_timestamp:
            return F.timestamp_micros(column)
        return column.cast(self.data_type)


def check_schema(df: DataFrame, columns: InputColumns, time_unit: str) -> TimeKind:
    """Check that `df` has the columns with types the join can take; how its times are given."""
    types = {field.name: field.dataType for field in df.schema.fields}
    for role, name in columns.roles():
        if name not in types:
            raise SchemaError(
                f"column {name!r} (the {role}) is not in the DataFrame; "
                f"its columns are {', '.join(types)}; name it with {role}=…"
            )
    for role in ("thing", "quantity"):
        name = getattr(columns, role)
        if not isinstance(types[name], T.StringType):
            raise _wrong_type(name, role, types[name], "a string")
    time_type = types[columns.time]
    if isinstance(time_type, T.TimestampType):
        kind = TimeKind(time_type, T.LongType(), _MICROS_TO_MS)
    elif isinstance(time_type, T.NumericType):
        if time_unit not in TIME_UNITS:
            raise SchemaError(
                f"time_unit must be one of {', '.join(TIME_UNITS)} for the numeric time column "
                f"{columns.time!r}, got {time_unit!r}"
            )
        carried = T.DoubleType() if isinstance(time_type, T.DecimalType) else time_type
        kind = TimeKind(time_type, carried, TIME_UNITS[time_unit])
    else:
        raise _wrong_type(columns.time, "time", time_type, "epoch ms or s, or a timestamp")
    if not isinstance(types[columns.value], T.NumericType):
        raise _wrong_type(columns.value, "value", types[columns.value], "a number")
    if columns.order is not None:
        order_type = types[columns.order]
        if not isinstance(order_type, T.NumericType | T.TimestampType | T.StringType):
            raise _wrong_type(columns.order, "order", order_type, "a number, timestamp or string")
    return kind


def _wrong_type(name: str, role: str, found: T.DataType, wanted: str) -> SchemaError:
    return SchemaError(
        f"column {name!r} (the {role}) is {found.simpleString()}; it must be {wanted}"
    )


def rejection_reason(df: DataFrame, columns: InputColumns) -> Column:
    """Why a row cannot be joined (null when it can): the first rule it breaks."""
    types = {field.name: field.dataType for field in df.schema.fields}
    thing, quantity, time, value = (
        F.col(name) for name in (columns.thing, columns.quantity, columns.time, columns.value)
    )
    rules: list[tuple[Column, Column | str]] = [
        (thing.isNull(), f"missing {columns.thing}"),
        (thing == "", f"{columns.thing} is empty"),
        (quantity.isNull(), f"missing {columns.quantity}"),
        (time.isNull(), f"missing {columns.time}"),
    ]
    if _is_floating(types[columns.time]):
        rules.append((~_finite(time), f"{columns.time} is not a finite number"))
    if columns.order is not None:
        rules.append((F.col(columns.order).isNull(), f"missing {columns.order}"))
    rules.append((value.isNull(), f"missing {columns.value}"))
    if _is_floating(types[columns.value]):
        text = F.concat(
            F.lit("value of "), quantity, F.lit(" is not a number: "), value.cast("string")
        )
        rules.append((~_finite(value), text))
    reason: Column | None = None
    for broken, why in rules:
        why_column = F.lit(why) if isinstance(why, str) else why
        reason = F.when(broken, why_column) if reason is None else reason.when(broken, why_column)
    assert reason is not None
    return reason


def _is_floating(data_type: T.DataType) -> bool:
    return isinstance(data_type, T.FloatType | T.DoubleType)


def _finite(column: Column) -> Column:
    return ~F.isnan(column) & (F.abs(column) != F.lit(float("inf")))


def bucketed(df: DataFrame, columns: InputColumns, time: TimeKind, buckets: int) -> DataFrame:
    """The good rows in the bucket join's columns: thing, quantity, t, v, [o], row, bucket.

    `row` (`monotonically_increasing_id`) keeps the input's order among equal sort keys (0 on a
    stream, which cannot number its rows: ties are then taken in the order Spark delivers them);
    `bucket` is a hash of the thing modulo `buckets`, as a label that Spark's hash partitioning
    spreads evenly (`bucket_labels`).
    """
    labels = F.array(*(F.lit(label) for label in bucket_labels(buckets)))
    index = F.pmod(F.xxhash64(F.col(columns.thing)), F.lit(buckets)) + 1
    selected = [
        F.col(columns.thing).alias("thing"),
        F.col(columns.quantity).alias("quantity"),
        time.carried(F.col(columns.time)).alias("t"),
        F.col(columns.value).cast("double").alias("v"),
    ]
    if columns.order is not None:
        selected.append(F.col(columns.order).alias("o"))
    selected += [
        (F.lit(0).cast("long") if df.isStreaming else F.monotonically_increasing_id()).alias("row"),
        F.element_at(labels, index.cast("int")).alias("bucket"),
    ]
    return df.select(*selected)
