"""The as-of join of two Spark DataFrames, in `pandas.merge_asof` terms, batch or streaming.

    >>> quotes_at_trades = asof_join(trades, quotes, on="time", by="ticker")     # doctest: +SKIP
    >>> nearest = asof_join(a, b, on="t", by=["machine"], direction="nearest",
    ...                     tolerance=timedelta(seconds=2))                       # doctest: +SKIP

Every left row comes out once, with the columns of its matching right row, or nulls: the right
row with the same `by` values whose `on` time is the last at or before the left row's
(`backward`), the first at or after it (`forward`), or the nearer of those two (`nearest`).
`tolerance` bounds the distance; `allow_exact_matches=False` makes "at or" strict. Among right
rows of equal time, backward takes the last in arrival order and forward the first: arrival
order is the `order` column when given, else the DataFrame's own order (batch). The matching is
`statestream.join.asof`, the same as `pandas.merge_asof` on any input (property-tested).

Both sides streaming: each left row comes out once its match is certain (a later right row, the
right side's watermark past it, or the tolerance passed), never retracted; the pending rows
wait in the query's state (`statestream.join.asof_stream` per bucket, see `_asof_stream`).
A row below its own side's watermark (the side's latest time for its key minus `disorder`) when
it arrives is late: it is not joined, and `late=True` returns it. A streaming left side with a
static right side matches at once (`_asof_batch.static_asof`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from statestream.errors import ConfigError
from statestream.join.asof import AsofRule
from statestream.spark._asof_batch import batch_asof, static_asof
from statestream.spark._asof_sides import AsofColumns
from statestream.spark._asof_stream import stream_asof
from statestream.spark.plan_size import default_buckets
from statestream.spark.worker_python import check_worker_python

Direction = Literal["backward", "forward", "nearest"]
Span = float | int | dt.timedelta


@overload
def asof_join(
    left: DataFrame,
    right: DataFrame,
    *,
    on: str,
    by: str | Sequence[str] | None = ...,
    direction: Direction = ...,
    tolerance: Span | None = ...,
    allow_exact_matches: bool = ...,
    order: str | None = ...,
    disorder: Span = ...,
    suffixes: tuple[str, str] = ...,
    buckets: int | None = ...,
    late: Literal[False] = ...,
) -> DataFrame: ...


@overload
def asof_join(
    left: DataFrame,
    right: DataFrame,
    *,
    on: str,
    by: str | Sequence[str] | None = ...,
    direction: Direction = ...,
    tolerance: Span | None = ...,
    allow_exact_matches: bool = ...,
    order: str | None = ...,
    disorder: Span = ...,
    suffixes: tuple[str, str] = ...,
    buckets: int | None = ...,
    late: Literal[True],
) -> tuple[DataFrame, DataFrame]: ...


def asof_join(
    left: DataFrame,
    right: DataFrame,
    *,
    on: str,
    by: str | Sequence[str] | None = None,
    direction: Direction = "backward",
    tolerance: Span | None = None,
    allow_exact_matches: bool = True,
    order: str | None = None,
    disorder: Span = 0,
    suffixes: tuple[str, str] = ("_x", "_y"),
    buckets: int | None = None,
    late: bool = False,
) -> DataFrame | tuple[DataFrame, DataFrame]:
    """Every row of `left` with the columns of its as-of match in `right`, or nulls.

    - `on`: the time column of both sides (timestamp, date or number); `by`: column(s) both
      sides have, matched by equal values first.
    - `direction`, `tolerance`, `allow_exact_matches`: as in `pandas.merge_asof`. A tolerance
      or `disorder` on a timestamp is a `datetime.timedelta` or seconds; on a number, in its
      unit.
    - `order`: a column giving each side's arrival order (a Kafka offset, an id): ties among
      right rows of equal time, and in a stream which rows are late (a stream's micro-batches
      count in the order they come, the column orders the rows within one). Without it, a
      batch side's own order is used (a stream's static side: its rows' values), and a
      stream's rows are taken in each micro-batch's time order.
    - `disorder` (streams): how far a side's times may go back before a row is late.
    - `suffixes`: appended to the names the two sides share (the right's `on` and `by` columns
      are not in the output).
    - `buckets`: how many groups the keys are hashed into (default: the session's
      `spark.sql.shuffle.partitions`); for a stream, part of its checkpoint: keep it fixed.
      Without it, a batch join whose sides Spark estimates at most its broadcast size
      (`spark.sql.autoBroadcastJoinThreshold`) runs in one task, without a shuffle.
    - `late=True` (streams): also return the refused rows: `side`, `reason` (`late`, or
      `no time` for a right row without its time) and `row` (the row as JSON).

    The output has the left columns, then the right ones but `on` and `by`. Raises `SchemaError`
    for a missing column or an `on` type that has no order, `ConfigError` for a static left side
    with a streaming right side or Python workers that cannot import statestream, and
    `ValueError` for a bad direction or a negative span.
    """
    check_worker_python(left.sparkSession)
    plan = asof_plan(
        left, right, on, by, direction, tolerance, allow_exact_matches, order, disorder, suffixes
    )
    if not left.isStreaming and right.isStreaming:
        raise ConfigError(
            "asof_join of a static left side with a streaming right side: every left row would "
            "wait forever; read the left side as a stream too (spark.readStream)"
        )
    if left.isStreaming and right.isStreaming:
        count = buckets or default_buckets(left)
        joined, refused = stream_asof(*plan.sides, plan.setup, plan.names, plan.payload, count)
        return (joined, refused) if late else joined
    if left.isStreaming:
        joined = static_asof(*plan.sides, plan.rule, plan.names, plan.payload)
    else:
        joined = batch_asof(*plan.sides, plan.rule, plan.names, plan.payload, buckets)
    if not late:
        return joined
    return joined, joined.sparkSession.createDataFrame([], "side string, reason string, row string")


@dataclass(frozen=True)
class AsofPlan:
    """What the three ways of joining need: the prepared sides (`asof_key`, `asof_t`,
    `asof_order`), the rule, the stream's settings, the output names and the right columns
    that come out."""

    sides: tuple[DataFrame, DataFrame]
    rule: AsofRule
    setup: dict[str, Any]
    names: tuple[list[str], list[str]]
    payload: list[str]


def asof_plan(
    left: DataFrame,
    right: DataFrame,
    on: str,
    by: str | Sequence[str] | None,
    direction: Direction,
    tolerance: Span | None,
    allow_exact_matches: bool,
    order: str | None,
    disorder: Span,
    suffixes: tuple[str, str],
) -> AsofPlan:
    """`asof_join`'s arguments checked and turned into its plan."""
    columns = AsofColumns(on, _names(by), order, suffixes)
    kind = columns.check(left, right)
    rule = AsofRule(direction, kind.span(tolerance, "tolerance"), allow_exact_matches)
    setup = {
        "direction": rule.direction,
        "tolerance": rule.tolerance,
        "allow_exact_matches": rule.allow_exact_matches,
        "disorder": kind.span(disorder, "disorder") or 0,
        "integer_time": isinstance(kind.numbers, T.LongType),
    }
    key_types = columns.key_types(left)
    numbered = not left.isStreaming  # a static right side of a stream: ties by the row's values
    sides = (
        columns.prepared(left, kind, key_types),
        columns.prepared(right, kind, key_types, numbered),
    )
    names = columns.output_names(left, right)
    return AsofPlan(sides, rule, setup, names, columns.right_payload(right))


def _names(by: str | Sequence[str] | None) -> tuple[str, ...]:
    if by is None:
        return ()
    return (by,) if isinstance(by, str) else tuple(by)
