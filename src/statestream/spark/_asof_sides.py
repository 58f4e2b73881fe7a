"""The two sides of `asof_join` as the engine sees them, and the output's column names:
`asof_key` (the `by` values), `asof_t` (the `on` time as numbers), `asof_order` (arrival order).

The `by` values become one string per row, `to_json` of their struct (the right side's cast to
the left side's types first, so an int 7 meets a long 7); Spark's grouping treats nulls as equal,
and so does this key. A timestamp's `asof_t` is its epoch microseconds, a date's its epoch day, an
integer's the integer and any other number a double; a row without its `on` time takes part in no
match (a left row still comes out once, unmatched).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from statestream.errors import SchemaError

KEY, TIME, ORDER, SIDE, BUCKET = "asof_key", "asof_t", "asof_order", "asof_side", "asof_bucket"
HELPERS = (KEY, TIME, ORDER, SIDE, BUCKET)
_MICROS = 1_000_000


@dataclass(frozen=True)
class TimeKind:
    """How the `on` column becomes numbers: its type, the numbers' type, the unit of one second."""

    data_type: T.DataType
    numbers: T.DataType  # LongType or DoubleType
    per_second: int | None  # µs for a timestamp, None for plain numbers (tolerance as given)

    def carried(self, column: Column) -> Column:
        if isinstance(self.data_type, T.TimestampType):
            return F.unix_micros(column)
        if isinstance(self.data_type, T.TimestampNTZType):
            return F.unix_micros(column.cast(T.TimestampType()))
        if isinstance(self.data_type, T.DateType):
            return F.unix_date(column).cast(T.LongType())
        return column.cast(self.numbers)

    def span(self, value: float | int | dt.timedelta | None, name: str) -> float | int | None:
        """A tolerance or disorder in the numbers' unit: a timedelta or seconds for a timestamp,
        days (a timedelta or a number) for a date, the `on` column's unit otherwise."""
        if value is None:
            return None
        if isinstance(value, dt.timedelta):
            if isinstance(self.data_type, T.DateType):
                return value.days
            if self.per_second is None:
                raise SchemaError(f"{name} is a timedelta but the on column holds numbers")
            return round(value.total_seconds() * self.per_second)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SchemaError(f"{name} must be a number or a datetime.timedelta, not {value!r}")
        if value < 0:
            raise SchemaError(f"{name} must not be negative, got {value}")
        if self.per_second is not None:
            return round(value * self.per_second)
        return value if isinstance(self.numbers, T.DoubleType) else int(value)


def time_kind(data_type: T.DataType, column: str) -> TimeKind:
    """How `on` of type `data_type` is carried; `SchemaError` for a type that has no order."""
    if isinstance(data_type, T.TimestampType | T.TimestampNTZType):
        return TimeKind(data_type, T.LongType(), _MICROS)
    if isinstance(data_type, T.DateType | T.IntegralType):
        return TimeKind(data_type, T.LongType(), None)
    if isinstance(data_type, T.FloatType | T.DoubleType | T.DecimalType):
        return TimeKind(data_type, T.DoubleType(), None)
    raise SchemaError(
        f"the on column {column!r} is {data_type.simpleString()}: asof_join needs a timestamp, "
        "a date or a number"
    )


@dataclass(frozen=True)
class AsofColumns:
    """The caller's column names: `on`, `by`, `order` and the output's suffixes."""

    on: str
    by: tuple[str, ...]
    order: str | None
    suffixes: tuple[str, str]

    def check(self, left: DataFrame, right: DataFrame) -> TimeKind:
        """Check both sides' columns; how `on` is carried (both sides must agree)."""
        _check_helpers(left, "left")
        _check_helpers(right, "right")
        for side, df in (("left", left), ("right", right)):
            for name in (self.on, *self.by):
                _require(df, name, side)
        if self.order is not None:
            _require(right, self.order, "right")
            if left.isStreaming:
                _require(left, self.order, "left")
        left_kind = time_kind(_type(left, self.on), self.on)
        right_kind = time_kind(_type(right, self.on), self.on)
        if (left_kind.numbers, left_kind.per_second) != (right_kind.numbers, right_kind.per_second):
            raise SchemaError(
                f"the on column {self.on!r} is {_type(left, self.on).simpleString()} on the left "
                f"and {_type(right, self.on).simpleString()} on the right: give both one kind"
            )
        return left_kind

    def prepared(
        self,
        df: DataFrame,
        kind: TimeKind,
        key_types: Sequence[T.DataType],
        numbered: bool = True,
    ) -> DataFrame:
        """`df` with `asof_key`, `asof_t` and `asof_order` added: the order column, or a batch
        side's own order (`numbered`; Spark refuses that id in a streaming query, even on its
        static side), or null (a stream's rows, numbered by its processor)."""
        if self.by:
            fields = [
                F.col(name).cast(data_type).alias(f"k{i}")
                for i, (name, data_type) in enumerate(zip(self.by, key_types, strict=True))
            ]
            key = F.to_json(F.struct(*fields))
        else:
            key = F.lit("{}")
        if self.order is not None and self.order in df.columns:
            order = F.col(self.order).cast(T.LongType())
        elif not df.isStreaming and numbered:
            order = F.monotonically_increasing_id()  # the input's own order, for ties
        else:
            order = F.lit(None).cast(T.LongType())  # numbered by the stream's processor
        return df.select(
            *[F.col(f"`{name}`") for name in df.columns],
            key.alias(KEY),
            kind.carried(F.col(self.on)).alias(TIME),
            order.alias(ORDER),
        )

    def key_types(self, left: DataFrame) -> list[T.DataType]:
        return [_type(left, name) for name in self.by]

    def right_payload(self, right: DataFrame) -> list[str]:
        """The right columns that come out: all but `on` and `by` (the left's are kept)."""
        return [name for name in right.columns if name not in (self.on, *self.by)]

    def output_names(self, left: DataFrame, right: DataFrame) -> tuple[list[str], list[str]]:
        """The output names of the left columns and of the right payload: a name on both sides
        takes the suffixes, as in pandas.merge_asof."""
        payload = self.right_payload(right)
        shared = set(left.columns) & set(payload)
        left_names = [n + self.suffixes[0] if n in shared else n for n in left.columns]
        right_names = [n + self.suffixes[1] if n in shared else n for n in payload]
        clash = set(left_names) & set(right_names)
        if clash or len(set(left_names + right_names)) != len(left_names) + len(right_names):
            raise SchemaError(
                f"asof_join's output would have columns {sorted(clash)} twice: choose other "
                "suffixes=…"
            )
        return left_names, right_names


def _check_helpers(df: DataFrame, side: str) -> None:
    taken = [name for name in df.columns if name in HELPERS]
    if taken:
        raise SchemaError(
            f"the {side} DataFrame has columns {taken}, which asof_join uses itself: rename them"
        )


def _require(df: DataFrame, name: str, side: str) -> None:
    if name not in df.columns:
        raise SchemaError(
            f"column {name!r} is not in the {side} DataFrame; its columns are "
            f"{', '.join(df.columns)}"
        )


def _type(df: DataFrame, name: str) -> T.DataType:
    return df.schema[name].dataType
