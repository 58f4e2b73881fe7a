"""`statestream bench asof`: `asof_join` of two batch DataFrames against Spark's own as-of joins.

The input: trades (left) and quotes (right), N rows each over K keys, made by Spark itself
(`spark.range`, deterministic expressions, no data through the driver): row `id` has key
`id mod K`, and its time is second `id div K` plus a hashed offset of 0–999 ms (another hash on
each side), so each side's times are strictly increasing within a key and the two sides
interleave irregularly. Each input is written to Parquet in a temporary folder before any clock
starts, so generating it is not timed; every join reads it back from there.

Timed, each the same way (`.write.format("noop")`, every output row and column computed):

- `statestream.spark.asof_join(trades, quotes, on="time", by="key", direction=…)` on N rows a
  side, after a warm-up join of W rows a side (the JVM compiles its hot code then);
- the baselines, which Spark has built in: `pyspark.pandas.merge_asof` (pandas-on-Spark, with
  its "distributed" default index) and `DataFrame._joinAsOf` (Spark's batch as-of join, the
  private method pandas-on-Spark calls). Spark plans that join as a correlated subquery
  (`RewriteAsOfJoin`), which it runs as a nested-loop join of every distinct left time with
  every right row, whatever the keys: its work grows with the product of the two sides' rows.
  So the baselines run on the first M rows a side (`baseline_rows`) and are cut off after
  `baseline_timeout_s` (a baseline cut off has no figure); nothing is extrapolated.
  `asof_join` is timed on those M rows too, for a ratio on the same input. Spark SQL's
  `ASOF JOIN` is looked for; the figures say whether this Spark has one (4.1 has none; this
  bench does not time it).

Rows/s counts the input rows of both sides. Before it is timed, each baseline is checked against
`asof_join` on the first `check_rows` rows a side (which also warms it up): each trade once,
matched or not alike, at the same distance from its quote (the same quote for backward and
forward; `nearest` may pick either of two quotes at equal distance in Spark); a difference
raises `StatestreamError`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pyspark import InheritableThread
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from statestream.errors import StatestreamError

BASE_MS = 1_700_000_000_000
CANCEL_GRACE_S = 60  # for a cut-off baseline's tasks to stop
# each baseline's figures are under its key (no underscores: the docs' tables make them spaces)
BASELINES = {"pyspark.pandas": "pyspark.pandas.merge_asof", "joinAsOf": "DataFrame._joinAsOf"}
SQL_PROBE = (
    "SELECT * FROM VALUES (1, 2) AS l(k, t) ASOF JOIN VALUES (1, 1) AS r(k, t) "
    "MATCH_CONDITION (l.t >= r.t) ON l.k = r.k"
)

Progress = Callable[[str], None]


@dataclass(frozen=True)
class AsofBenchOptions:
    rows: int = 10_000_000  # per side
    keys: int = 1_000
    direction: str = "backward"
    partitions: int | None = None  # the run's spark.sql.shuffle.partitions (asof_join's buckets)
    baseline_rows: int = 20_000  # per side
    baseline_timeout_s: float = 600.0
    warmup_rows: int = 100_000  # per side, asof_join's; 0: no warm-up
    check_rows: int = 5_000  # per side: the sample each baseline is checked on


def trades(spark: SparkSession, rows: int, keys: int) -> DataFrame:
    """The left side: `key`, `time`, `tid` (the row's id), `price`."""
    return spark.range(rows).select(
        (F.col("id") % keys).alias("key"),
        _time(keys, seed=1),
        F.col("id").alias("tid"),
        ((F.col("id") % 1009) / 10).alias("price"),
    )


def quotes(spark: SparkSession, rows: int, keys: int) -> DataFrame:
    """The right side: `key`, `time`, `qid` (the row's id), `quote_time` (`time` again: the join
    drops the right's `on` column, the check needs it), `bid`."""
    return spark.range(rows).select(
        (F.col("id") % keys).alias("key"),
        _time(keys, seed=2),
        F.col("id").alias("qid"),
        _time(keys, seed=2).alias("quote_time"),
        ((F.col("id") % 997) / 10).alias("bid"),
    )


def _time(keys: int, seed: int) -> Column:
    offset = F.pmod(F.xxhash64(F.col("id"), F.lit(seed)), F.lit(1000))
    millis = F.lit(BASE_MS) + F.floor(F.col("id") / keys) * 1000 + offset
    return F.timestamp_millis(millis).alias("time")


@dataclass(frozen=True)
class Inputs:
    """One pair of sides, written to Parquet: the DataFrames that read them back."""

    rows: int
    trades: DataFrame
    quotes: DataFrame


def written(spark: SparkSession, folder: Path, rows: int, keys: int) -> Inputs:
    """Trades and quotes of `rows` rows each, generated once into `folder` and read back."""
    paths = {}
    for name, side in (("trades", trades), ("quotes", quotes)):
        path = str(folder / f"{name}-{rows}")
        side(spark, rows, keys).write.mode("overwrite").parquet(path)
        paths[name] = path
    return Inputs(rows, spark.read.parquet(paths["trades"]), spark.read.parquet(paths["quotes"]))


def statestream_join(inputs: Inputs, direction: str) -> DataFrame:
    from statestream.spark import asof_join
    from statestream.spark.asof import Direction

    return asof_join(
        inputs.trades, inputs.quotes, on="time", by="key", direction=cast(Direction, direction)
    )


def pandas_on_spark_join(inputs: Inputs, direction: str) -> DataFrame:
    """`ps.merge_asof` of the same sides, as a Spark DataFrame (its index left out)."""
    import pyspark.pandas as ps

    with ps.option_context("compute.default_index_type", "distributed"):
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


def sql_asof_join(spark: SparkSession) -> bool:
    """Whether this Spark's SQL has an `ASOF JOIN` (Snowflake's form, as Spark would take it)."""
    try:
        spark.sql(SQL_PROBE).collect()
    except Exception:  # a ParseException where there is no such join
        return False
    return True


def noop_seconds(df: DataFrame) -> float:
    """Seconds to compute every row of `df` into Spark's no-op sink."""
    started = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


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


def run(spark: SparkSession, options: AsofBenchOptions, say: Progress) -> dict:
    """The figures of `asof_join` and of the baselines, measured in this run."""
    partitions = spark.conf.get("spark.sql.shuffle.partitions") or "200"
    if options.partitions:
        spark.conf.set("spark.sql.shuffle.partitions", str(options.partitions))
    folder = Path(tempfile.mkdtemp(prefix="statestream-bench-asof-"))
    try:
        return _measured(spark, options, folder, say)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        spark.conf.set("spark.sql.shuffle.partitions", partitions)


def _measured(spark: SparkSession, options: AsofBenchOptions, folder: Path, say: Progress) -> dict:
    direction, keys, rows = options.direction, options.keys, options.rows
    capped = min(rows, options.baseline_rows)
    checked = min(capped, options.check_rows)
    say(f"writing {rows:,} trades and quotes over {keys:,} keys to Parquet (not timed)")
    sizes = {rows, capped, checked, min(options.warmup_rows, rows)} - {0}
    inputs = {size: written(spark, folder, size, keys) for size in sorted(sizes)}
    full, small, sample = inputs[rows], inputs[capped], inputs[checked]
    if options.warmup_rows:
        say(f"warming up: asof_join on {options.warmup_rows:,} rows a side")
        noop_seconds(statestream_join(inputs[min(options.warmup_rows, rows)], direction))
    say(f"asof_join ({direction}) of {rows:,} trades and {rows:,} quotes")
    seconds = noop_seconds(statestream_join(full, direction))
    figures: dict[str, Any] = {
        "rows": rows,
        "keys": keys,
        "direction": direction,
        "partitions": int(spark.conf.get("spark.sql.shuffle.partitions") or 200),
        "warmup_rows": options.warmup_rows,
        "seconds": round(seconds, 2),
        "rows_per_s": round(2 * rows / seconds),
    }
    if small is not full:
        say(f"asof_join on the baselines' input, {capped:,} rows a side")
        small_seconds = noop_seconds(statestream_join(small, direction))
        figures["rows_on_baseline_input_per_s"] = round(2 * capped / small_seconds)
    for key, join in (("pyspark.pandas", pandas_on_spark_join), ("joinAsOf", join_as_of)):
        figures[key] = _baseline(
            spark, BASELINES[key], join, (small, sample), options, figures, say
        )
    has_sql = sql_asof_join(spark)
    figures["spark_sql_asof_join"] = (
        "in this Spark, not measured by this bench" if has_sql else "not in this Spark"
    )
    figures["spark_version"] = spark.version
    figures["cpus"] = os.cpu_count()
    figures["load_average_1m"] = round(os.getloadavg()[0], 2)
    return figures


def _baseline(
    spark: SparkSession,
    name: str,
    join: Callable[[Inputs, str], DataFrame],
    inputs: tuple[Inputs, Inputs],
    options: AsofBenchOptions,
    ours: dict[str, Any],
    say: Progress,
) -> dict[str, Any]:
    """One baseline: checked against `asof_join` on the sample (which also warms it up), then
    timed on the baselines' input, unless cut off; its ratios to `ours`, asof_join's figures."""
    small, sample = inputs
    direction = options.direction
    say(f"{name}: checked against asof_join on {sample.rows:,} rows a side")
    check = disagreements(statestream_join(sample, direction), join(sample, direction))
    wrong = {what: check[what] for what in ("missing", "repeated", "other_match") if check[what]}
    if wrong or check["trades"] != sample.rows:
        raise StatestreamError(
            f"asof_join and {name} disagree on {sample.rows:,} rows a side ({direction}): "
            f"{wrong or check}"
        )
    found: dict[str, Any] = {
        "baseline": name,
        "rows": small.rows,
        "capped": small.rows < options.rows,
        "checked_trades": check["trades"],
        "matched_trades": check["matched"],
    }
    say(f"{name} on {small.rows:,} rows a side")
    timeout = options.baseline_timeout_s
    seconds = within(spark, timeout, lambda: noop_seconds(join(small, direction)))
    if seconds is None:
        say(f"{name} cut off after {timeout:g} s: no figure")
        found["timed_out_after_s"] = timeout
        return found
    per_s = round(2 * small.rows / seconds)
    same_input = ours.get("rows_on_baseline_input_per_s", ours["rows_per_s"])
    found.update(seconds=round(seconds, 2), rows_per_s=per_s)
    found["ratio"] = round(ours["rows_per_s"] / per_s, 2)
    found["ratio_same_input"] = round(same_input / per_s, 2)
    return found
