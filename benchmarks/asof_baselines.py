"""The baselines of `bench asof` (`benchmarks/asof_bench.py`): Spark's own as-of joins of the
bench's trades and quotes, the check of their output against `asof_join`'s, and the cut-off of
a baseline that runs too long.

- `pyspark.pandas.merge_asof` and `DataFrame._joinAsOf` (the private method pandas-on-Spark
  calls), which Spark plans as a nested-loop join: the bench runs them on capped input;
- Spark SQL's `LEFT ASOF JOIN … MATCH_CONDITION (…) ON …`, where this Spark has it (4.3, behind
  `spark.sql.join.asofJoin.enabled`; 4.0 and 4.1 have none), which Spark plans as a sort-merge
  join (`SortMergeAsOfJoin`): the bench runs it on the full input. It has `backward` (`>=`) and
  `forward` (`<=`) but no `nearest`.
"""

from __future__ import annotations

import contextlib
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pyspark import InheritableThread
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from statestream.errors import StatestreamError

if TYPE_CHECKING:
    from benchmarks.asof_bench import Inputs

CANCEL_GRACE_S = 60  # for a cut-off baseline's tasks to stop
SQL = "SQL ASOF JOIN"  # Spark SQL's as-of join: its figures' key
# each baseline's figures are under its key (no underscores: the docs' tables make them spaces)
BASELINES = {
    "pyspark.pandas": "pyspark.pandas.merge_asof",
    "joinAsOf": "DataFrame._joinAsOf",
    SQL: "Spark SQL LEFT ASOF JOIN",
}
CAPPED = ("pyspark.pandas", "joinAsOf")  # the nested-loop ones, run on the capped input
SQL_FLAG = "spark.sql.join.asofJoin.enabled"  # Spark 4.3 parses ASOF JOIN only with it on
SQL_CONDITIONS = {"backward": "t.time >= q.time", "forward": "t.time <= q.time"}  # no nearest
SQL_PROBE = (
    "SELECT * FROM VALUES (1, 2) AS l(k, t) ASOF JOIN VALUES (1, 1) AS r(k, t) "
    "MATCH_CONDITION (l.t >= r.t) ON l.k = r.k"
)


def pandas_on_spark_join(inputs: Inputs, direction: str) -> DataFrame:
    """`ps.merge_asof` of the same sides, as a Spark DataFrame (its index left out).

    Spark 4.0's pandas-on-Spark refuses a session in ANSI mode (4.0's default) unless told not
    to fail (`compute.fail_on_ansi_mode`); 4.1 and later support it. Its output is checked
    against `asof_join`'s before it is timed either way."""
    import pyspark.pandas as ps

    options = ("compute.default_index_type", "distributed", "compute.fail_on_ansi_mode", False)
    with ps.option_context(*options), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The config 'spark.sql.ansi.enabled' is set to True")
        left, right = inputs.trades.pandas_api(), inputs.quotes.pandas_api()
        joined = ps.merge_asof(left, right, on="time", by="key", direction=direction)
        with warnings.catch_warnings():  # "the existing index is lost": it is the default one
            warnings.simplefilter("ignore")
            return joined.to_spark()


def join_as_of(inputs: Inputs, direction: str) -> DataFrame:
    """Spark's batch as-of join (`DataFrame._joinAsOf`, a left join) of the same sides."""
    left = inputs.trades.alias("l")
    right = inputs.quotes.select(F.col("key").alias("quote_key"), "qid", "quote_time", "bid").alias(
        "r"
    )
    return left._joinAsOf(
        right,
        leftAsOfColumn=F.col("l.time"),
        rightAsOfColumn=F.col("r.quote_time"),
        on=F.col("l.key") == F.col("r.quote_key"),
        how="left",
        direction=direction,
    ).drop("quote_key")


def sql_asof_join(inputs: Inputs, direction: str) -> DataFrame:
    """Spark SQL's `LEFT ASOF JOIN` of the same sides: each trade with the closest quote of its
    key at or before its time (`backward`) or at or after it (`forward`), the sides passed as
    DataFrame parameters. Spark parses it at once: `SQL_FLAG` must be on (`sql_asof_enabled`)."""
    if direction not in SQL_CONDITIONS:
        raise StatestreamError(f"Spark SQL's ASOF JOIN has no {direction!r} direction")
    query = (
        "SELECT t.*, q.qid, q.quote_time, q.bid FROM {t} AS t LEFT ASOF JOIN {q} AS q "
        f"MATCH_CONDITION ({SQL_CONDITIONS[direction]}) ON t.key = q.key"
    )
    return inputs.trades.sparkSession.sql(query, t=inputs.trades, q=inputs.quotes)


@contextmanager
def conf_set(spark: SparkSession, key: str, value: str | None) -> Iterator[None]:
    """The session's `key` at `value` inside the block (None: unchanged), as the session had it
    after (unset if it was unset), also on an error."""
    previous = spark.conf.get(key, None)
    if value is not None:
        spark.conf.set(key, value)
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, previous)


def sql_asof_enabled(spark: SparkSession) -> contextlib.AbstractContextManager[None]:
    """`SQL_FLAG` on inside the block (`conf_set`). A Spark without an ASOF JOIN takes the key
    and ignores it."""
    return conf_set(spark, SQL_FLAG, "true")


def has_sql_asof_join(spark: SparkSession) -> bool:
    """Whether this Spark's SQL has an `ASOF JOIN` (asked with `SQL_FLAG` on)."""
    with sql_asof_enabled(spark):
        try:
            spark.sql(SQL_PROBE).collect()
        except Exception:  # a ParseException where there is no such join
            return False
    return True


def within(spark: SparkSession, seconds: float, action: Callable[[], float]) -> float | None:
    """`action()`'s result, or None when it has not finished after `seconds` (its Spark jobs are
    then cancelled; `StatestreamError` if they do not stop)."""
    group = f"statestream-bench-asof-{uuid.uuid4().hex[:8]}"
    outcome: dict[str, Any] = {}

    def work() -> None:
        spark.sparkContext.setJobGroup(group, "bench asof baseline", interruptOnCancel=True)
        try:
            outcome["seconds"] = action()
        except Exception as error:  # raised again below, unless it was cancelled
            outcome["error"] = error

    worker = InheritableThread(target=work, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        spark.sparkContext.cancelJobGroup(group)
        worker.join(CANCEL_GRACE_S)
        if worker.is_alive():  # its tasks ignore the cancellation: later timings would share cores
            raise StatestreamError(f"a baseline cut off after {seconds:g} s did not stop")
        return None
    if "error" in outcome:
        raise outcome["error"]
    return outcome["seconds"]


def disagreements(ours: DataFrame, theirs: DataFrame) -> dict[str, int]:
    """How `theirs` differs from `ours` per trade: missing or repeated trades, and trades whose
    match differs (matched against unmatched, or another distance to its quote)."""

    def distances(df: DataFrame) -> DataFrame:
        distance = F.abs(F.unix_micros("time") - F.unix_micros("quote_time"))
        return df.groupBy("tid").agg(F.count("*").alias("n"), F.first(distance).alias("d"))

    a, b = distances(ours).alias("a"), distances(theirs).alias("b")
    both = a.join(b, "tid", "full_outer")
    counts = both.agg(
        F.count("*").alias("trades"),
        F.count_if(F.col("b.n").isNull() | F.col("a.n").isNull()).alias("missing"),
        F.count_if((F.col("a.n") > 1) | (F.col("b.n") > 1)).alias("repeated"),
        F.count_if(~F.col("a.d").eqNullSafe(F.col("b.d"))).alias("other_match"),
        F.count_if(F.col("b.d").isNotNull()).alias("matched"),
    ).first()
    assert counts is not None  # an aggregate without grouping has one row
    return counts.asDict()
