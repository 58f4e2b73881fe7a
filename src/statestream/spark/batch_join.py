"""The complement join of a Spark DataFrame, in batch: every thing's series joined with flush.

    >>> from statestream.join import SpecTemplate
    >>> pairs = complement_join(df, [SpecTemplate()])                          # doctest: +SKIP
    >>> pairs, rejected = complement_join(df, [SpecTemplate()], rejected=True) # doctest: +SKIP

Things are grouped into buckets (a hash of the thing modulo `buckets`); each bucket runs one
`JoinRouter` over its records in arrival order (`_bucket_join`), so a thing meets only its own
records and the result is the offline join's, whatever the partitioning.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from statestream.errors import ConfigError
from statestream.join import JoinSpec, SpecTemplate
from statestream.spark._batch_input import (
    InputColumns,
    TimeKind,
    bucketed,
    check_schema,
    rejection_reason,
)
from statestream.spark._bucket_join import OUTPUT_COLUMNS, PAIR, REJECTED, BucketJoin

DEFAULT_BUCKETS = 200


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

    Times come back in the input's type: a timestamp, or epoch ms or seconds (`time_unit` "ms"
    or "s" for a numeric column); a pair's time is the mean of its two (a timestamp's rounded
    down to the µs). Returns a DataFrame with columns thing, quantity, phenomenonTime, result,
    left and right (structs of quantity, phenomenonTime, result); with `rejected`, also a
    DataFrame of the rows that were not joined (the input's columns and a `reason`): missing
    or non-finite fields, late records, duplicates, values the result function cannot take.
    Each of the two is computed when an action uses it.

    Raises `SchemaError` naming the column when one is missing or of a type the join cannot take.
    """
    columns = InputColumns(thing, quantity, time, value, order)
    kind = check_schema(df, columns, time_unit)
    concrete = _concrete_specs(df, specs, quantity, disorder, tolerance)
    relevant = F.col(quantity).isin(sorted({q for s in concrete for q in (s.left, s.right)}))
    reason = rejection_reason(df, columns)
    records = df.filter(relevant & reason.isNull())
    join = BucketJoin(
        concrete,
        kind.to_ms,
        flush=flush,
        rejected=rejected,
        has_order=order is not None,
        integer_time=kind.is_timestamp,
    )
    grouped = bucketed(records, columns, kind, buckets or _default_buckets(df))
    out = grouped.groupBy("bucket").applyInPandas(_one_frame(join), _output_schema(grouped, kind))
    pairs = _pairs(out.filter(F.col("kind") == PAIR), concrete, kind)
    if not rejected:
        return pairs
    bad_rows = df.filter(F.col(quantity).isNull() | relevant).filter(reason.isNotNull())
    return pairs, _rejected(df, columns, kind, out, bad_rows.withColumn("reason", reason))


def _one_frame(join: BucketJoin) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """`join` as a plain function of one frame (Spark passes a callable object the group key)."""

    def run(frame: pd.DataFrame) -> pd.DataFrame:
        return join(frame)

    return run


def _concrete_specs(
    df: DataFrame,
    specs: Sequence[JoinSpec | SpecTemplate],
    quantity: str,
    disorder: float,
    tolerance: float | None,
) -> list[JoinSpec]:
    """The join specs, templates expanded with `df`'s quantities, defaults applied, once each."""
    if not specs:
        raise ConfigError("complement_join needs at least one JoinSpec or SpecTemplate")
    names: list[str] | None = None
    concrete: list[JoinSpec] = []
    for spec in specs:
        spec = _with_defaults(spec, disorder, tolerance)
        if isinstance(spec, JoinSpec):
            concrete.append(spec)
            continue
        if names is None:  # the quantities' names: metadata, not the data
            rows = df.select(quantity).where(F.col(quantity).isNotNull()).distinct().collect()
            names = [row[0] for row in rows]
        concrete += spec.specs_for(names)
    return list(dict.fromkeys(concrete))


def _with_defaults(
    spec: JoinSpec | SpecTemplate, disorder: float, tolerance: float | None
) -> JoinSpec | SpecTemplate:
    """`spec` with the call's disorder and tolerance where it leaves its own unset."""
    changes: dict = {}
    if spec.disorder == 0.0 and disorder:
        changes["disorder"] = disorder
    if spec.tolerance is None and tolerance is not None:
        changes["tolerance"] = tolerance
    return dataclasses.replace(spec, **changes) if changes else spec


def _default_buckets(df: DataFrame) -> int:
    value = df.sparkSession.conf.get("spark.sql.shuffle.partitions", str(DEFAULT_BUCKETS))
    return int(value) if value and value.isdigit() else DEFAULT_BUCKETS


def _output_schema(grouped: DataFrame, kind: TimeKind) -> T.StructType:
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
    return T.StructType([T.StructField(name, types[name]) for name in OUTPUT_COLUMNS])


def _by_spec(specs: list[JoinSpec], name: str) -> Column:
    """The `name` (left, right, result) of each row's spec, looked up by its index."""
    names = F.array(*(F.lit(getattr(spec, name)) for spec in specs))
    return F.element_at(names, F.col("spec") + 1)


def _pairs(out: DataFrame, specs: list[JoinSpec], kind: TimeKind) -> DataFrame:
    pair_time = F.timestamp_micros(F.col("pair_t")) if kind.is_timestamp else F.col("pair_t")

    def record(side: str) -> Column:
        return F.struct(
            _by_spec(specs, side).alias("quantity"),
            kind.restored(F.col(f"{side}_t")).alias("phenomenonTime"),
            F.col(f"{side}_v").alias("result"),
        ).alias(side)

    return out.select(
        F.col("thing"),
        _by_spec(specs, "result").alias("quantity"),
        pair_time.alias("phenomenonTime"),
        F.col("result"),
        record("left"),
        record("right"),
    )


def _rejected(
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
