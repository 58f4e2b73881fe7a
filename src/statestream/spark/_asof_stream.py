"""`asof_join` of two streams: one `transformWithStateInPandas` over both sides, bucketed by key.

The two sides become one stream of the same columns: the side, the bucket (a hash of
`asof_key`), `asof_key`, `asof_t`, `asof_order`, and each side's whole row as JSON
(`asof_lrow` / `asof_rrow`, times to the microsecond), so one processor
(`_asof_processor.AsofProcessor`) sees both sides whatever their schemas. Each bucket keeps one
`statestream.join.asof_stream.AsofStream` in a ValueState; a micro-batch's rows go through it in
their order (`asof_order`; without an order column, numbered per bucket in the micro-batch's
time order), and what it emits (left rows whose match is certain, late rows) comes out as JSON
again and is read back into the caller's types (`_asof_call` is one call).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from statestream.spark._asof_call import KIND, LEFT_ROW, PAIR, RIGHT_ROW, SIDES
from statestream.spark._asof_processor import AsofProcessor
from statestream.spark._asof_sides import BUCKET, KEY, ORDER, SIDE, TIME
from statestream.spark.stream_join import with_state_api

JSON_OPTIONS = {  # every time to the microsecond, both ways
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
    "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
}
OUTPUT = T.StructType(
    [
        T.StructField(KIND, T.StringType()),
        T.StructField(SIDE, T.StringType()),
        T.StructField(LEFT_ROW, T.StringType()),
        T.StructField(RIGHT_ROW, T.StringType()),
    ]
)


def stream_asof(
    left: DataFrame,
    right: DataFrame,
    setup: dict[str, Any],
    names: tuple[list[str], list[str]],
    payload: list[str],
    buckets: int,
) -> tuple[DataFrame, DataFrame]:
    """The streaming as-of join of the prepared sides, and the rows it refused."""
    left_columns = [c for c in left.columns if c not in (KEY, TIME, ORDER)]
    right_columns = [c for c in right.columns if c not in (KEY, TIME, ORDER)]
    both = _side(left, 0, left_columns, LEFT_ROW, buckets).unionByName(
        _side(right, 1, right_columns, RIGHT_ROW, buckets)
    )
    by_bucket = with_state_api(both.groupBy(BUCKET), "asof_join of two streams")
    out = by_bucket.transformWithStateInPandas(
        statefulProcessor=AsofProcessor(setup),
        outputStructType=OUTPUT,
        outputMode="Append",
        timeMode="None",
    )
    return read_back(out, left, right, payload, names)


def read_back(
    out: DataFrame,
    left: DataFrame,
    right: DataFrame,
    payload: list[str],
    names: tuple[list[str], list[str]],
) -> tuple[DataFrame, DataFrame]:
    """The processor's output rows `out` as the join's columns, and the refused rows."""
    left_columns = [c for c in left.columns if c not in (KEY, TIME, ORDER)]
    left_schema = T.StructType([left.schema[c] for c in left_columns])
    right_schema = T.StructType([right.schema[c] for c in payload])
    left_names, right_names = names
    read = [
        F.col("l").getField(c).alias(n) for c, n in zip(left_columns, left_names, strict=True)
    ] + [F.col("r").getField(c).alias(n) for c, n in zip(payload, right_names, strict=True)]
    pairs = (
        out.filter(F.col(KIND) == PAIR)
        .select(
            F.from_json(F.col(LEFT_ROW), left_schema, JSON_OPTIONS).alias("l"),
            F.from_json(F.col(RIGHT_ROW), right_schema, JSON_OPTIONS).alias("r"),
        )
        .select(*read)
    )
    refused = out.filter(F.col(KIND) != PAIR).select(
        F.col(SIDE).alias("side"),
        F.col(KIND).alias("reason"),
        F.when(F.col(SIDE) == SIDES[0], F.col(LEFT_ROW)).otherwise(F.col(RIGHT_ROW)).alias("row"),
    )
    return pairs, refused


def _side(df: DataFrame, side: int, columns: list[str], row: str, buckets: int) -> DataFrame:
    whole = F.to_json(F.struct(*[F.col(f"`{c}`") for c in columns]), JSON_OPTIONS)
    other = LEFT_ROW if row == RIGHT_ROW else RIGHT_ROW
    return df.select(
        F.lit(side).alias(SIDE),
        _bucket(buckets).alias(BUCKET),
        F.col(KEY),
        F.col(TIME),
        F.col(ORDER),
        whole.alias(row),
        F.lit(None).cast(T.StringType()).alias(other),
    )


def _bucket(buckets: int) -> Column:
    return F.pmod(F.xxhash64(F.col(KEY)), F.lit(buckets)).cast(T.IntegerType())
