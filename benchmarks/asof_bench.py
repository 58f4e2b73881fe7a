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
- the baselines, which Spark has built in (`benchmarks/asof_baselines.py`):
  `pyspark.pandas.merge_asof` (pandas-on-Spark, with its "distributed" default index) and
  `DataFrame._joinAsOf` (Spark's batch as-of join, the private method pandas-on-Spark calls).
  Spark plans that join as a correlated subquery (`RewriteAsOfJoin`), which it runs as a
  nested-loop join of every distinct left time with every right row, whatever the keys: its
  work grows with the product of the two sides' rows. So these two run on the first M rows a
  side (`baseline_rows`); `asof_join` is timed on those M rows too;
- Spark SQL's `LEFT ASOF JOIN` (`trades LEFT ASOF JOIN quotes MATCH_CONDITION (t.time >= q.time)
  ON t.key = q.key`; `<=` for `forward`), where this Spark has it: 4.3, with
  `spark.sql.join.asofJoin.enabled`, which the run turns on and restores after; 4.0 and 4.1
  have none. Spark plans it as a sort-merge join, so it runs on the N rows a side. It has no
  `nearest`: with `nearest` it is not measured. `spark_sql_asof_join` says which of these it
  was ("measured", its figures then under `SQL ASOF JOIN`; "in this Spark, but it has no
  nearest: not measured"; "not in this Spark").

Every baseline is cut off after `baseline_timeout_s` (a baseline cut off has no figure); nothing
is extrapolated. Rows/s counts the input rows of both sides. Each baseline has two ratios:
`ratio`, `asof_join`'s rows/s on N rows ÷ the baseline's on its own rows (M, or N for the SQL
join), and `ratio_same_input`, `asof_join`'s rows/s on the baseline's rows ÷ the baseline's
(for the SQL join both are on N, and equal).

Before it is timed, each baseline is checked against `asof_join` on the first `check_rows` rows
a side (which also warms it up): each trade once, matched or not alike, at the same distance
from its quote (the same quote for backward and forward; `nearest` may pick either of two
quotes at equal distance in Spark); a difference raises `StatestreamError`.

`statestream bench asof` runs it on the pipeline's Spark session; `python -m
benchmarks.asof_bench` (`main`) on a plain local one, in any venv with statestream and PySpark
(e.g. another PySpark version's), from the checkout's root.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from benchmarks import bench_output
from benchmarks.asof_baselines import (
    BASELINES,
    CAPPED,
    SQL,
    SQL_CONDITIONS,
    conf_set,
    disagreements,
    has_sql_asof_join,
    join_as_of,
    pandas_on_spark_join,
    sql_asof_enabled,
    sql_asof_join,
    within,
)
from statestream.errors import StatestreamError

BASE_MS = 1_700_000_000_000
PARTITIONS = "spark.sql.shuffle.partitions"
SQL_MEASURED = "measured"
SQL_NO_NEAREST = "in this Spark, but it has no nearest: not measured"
SQL_MISSING = "not in this Spark"
CAPPED_JOINS = {"pyspark.pandas": pandas_on_spark_join, "joinAsOf": join_as_of}

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


def noop_seconds(df: DataFrame) -> float:
    """Seconds to compute every row of `df` into Spark's no-op sink."""
    started = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def run(spark: SparkSession, options: AsofBenchOptions, say: Progress) -> dict:
    """The figures of `asof_join` and of the baselines, measured in this run; the session's
    shuffle partitions and `spark.sql.join.asofJoin.enabled` as they were after it."""
    folder = Path(tempfile.mkdtemp(prefix="statestream-bench-asof-"))
    try:
        partitions = str(options.partitions) if options.partitions else None
        with conf_set(spark, PARTITIONS, partitions), sql_asof_enabled(spark):
            return _measured(spark, options, folder, say)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


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
        "partitions": int(spark.conf.get(PARTITIONS) or 200),
        "warmup_rows": options.warmup_rows,
        "seconds": round(seconds, 2),
        "rows_per_s": round(2 * rows / seconds),
    }
    if small is not full:
        say(f"asof_join on the baselines' input, {capped:,} rows a side")
        small_seconds = noop_seconds(statestream_join(small, direction))
        figures["rows_on_baseline_input_per_s"] = round(2 * capped / small_seconds)
    for key in CAPPED:
        figures[key] = _baseline(
            spark, key, CAPPED_JOINS[key], (small, sample), options, figures, say
        )
    if not has_sql_asof_join(spark):
        figures["spark_sql_asof_join"] = SQL_MISSING
    elif direction not in SQL_CONDITIONS:
        figures["spark_sql_asof_join"] = SQL_NO_NEAREST
    else:  # a sort-merge join: on the full input
        figures[SQL] = _baseline(spark, SQL, sql_asof_join, (full, sample), options, figures, say)
        figures["spark_sql_asof_join"] = SQL_MEASURED
    figures["spark_version"] = spark.version
    figures["cpus"] = os.cpu_count()
    figures["load_average_1m"] = round(os.getloadavg()[0], 2)
    return figures


def _baseline(
    spark: SparkSession,
    key: str,
    join: Callable[[Inputs, str], DataFrame],
    inputs: tuple[Inputs, Inputs],
    options: AsofBenchOptions,
    ours: dict[str, Any],
    say: Progress,
) -> dict[str, Any]:
    """One baseline: checked against `asof_join` on the sample (which also warms it up), then
    timed on its input (the capped or the full one), unless cut off; its ratios to `ours`,
    asof_join's figures: on the full input, and on the baseline's own."""
    (timed, sample), name, direction = inputs, BASELINES[key], options.direction
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
        "rows": timed.rows,
        "capped": timed.rows < options.rows,
        "checked_trades": check["trades"],
        "matched_trades": check["matched"],
    }
    say(f"{name} on {timed.rows:,} rows a side")
    timeout = options.baseline_timeout_s
    seconds = within(spark, timeout, lambda: noop_seconds(join(timed, direction)))
    if seconds is None:
        say(f"{name} cut off after {timeout:g} s: no figure")
        found["timed_out_after_s"] = timeout
        return found
    per_s = round(2 * timed.rows / seconds)
    same_input = (
        ours["rows_per_s"] if timed.rows == options.rows else ours["rows_on_baseline_input_per_s"]
    )
    found.update(seconds=round(seconds, 2), rows_per_s=per_s)
    found["ratio"] = round(ours["rows_per_s"] / per_s, 2)
    found["ratio_same_input"] = round(same_input / per_s, 2)
    return found


def main(argv: list[str] | None = None) -> int:
    """`python -m benchmarks.asof_bench`: the bench on a plain local SparkSession (`local[*]`),
    from any venv with statestream and PySpark; prints the figures (one JSON object with
    --json) and with --record appends them to `benchmarks/results/asof.jsonl` as
    `statestream bench --record asof` does."""
    args = _parser().parse_args(argv)
    options = AsofBenchOptions(
        rows=args.rows,
        keys=args.keys,
        direction=args.direction,
        partitions=args.partitions or os.cpu_count() or 2,
        baseline_rows=args.baseline_rows,
        baseline_timeout_s=args.baseline_timeout,
        warmup_rows=args.warmup_rows,
    )
    say: Progress = (
        (lambda text: None) if args.json else (lambda text: print(f"… {text}", file=sys.stderr))
    )
    with bench_output.stdout_to_stderr(args.json):  # Spark's Python workers print to stdout
        spark = plain_session(args.driver_memory)
        try:
            figures = run(spark, options, say)
        finally:
            spark.stop()
    figures["session"] = "plain local[*] (python -m benchmarks.asof_bench)"
    if args.record:
        for path in bench_output.record_result("asof", figures):
            print(f"written: {path}", file=sys.stderr)
    print(json.dumps(figures) if args.json else summary(figures))
    return 0


def plain_session(driver_memory: str) -> SparkSession:
    """A local SparkSession on every core, made as a PySpark user makes one (no statestream
    settings), its Python workers this interpreter."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")  # pandas-on-Spark asks for it
    spark = (
        SparkSession.builder.master("local[*]")
        .appName("statestream-bench-asof")
        .config("spark.driver.memory", driver_memory)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")  # the bench's own lines say what runs
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def summary(figures: dict[str, Any]) -> str:
    """The figures as lines of text: each join's rows a side, rows/s and ratios."""
    lines = [
        f"bench asof ({figures['direction']}, {figures['keys']:,} keys, "
        f"{figures['partitions']} partitions), Spark {figures['spark_version']}",
        f"asof_join: {figures['rows']:,} rows a side, {figures['rows_per_s']:,} rows/s",
    ]
    if "rows_on_baseline_input_per_s" in figures:
        lines.append(
            f"asof_join on the capped input: {figures['rows_on_baseline_input_per_s']:,} rows/s"
        )
    for b in (figures[key] for key in BASELINES if key in figures):
        if "rows_per_s" in b:
            lines.append(
                f"{b['baseline']}: {b['rows']:,} rows a side, {b['rows_per_s']:,} rows/s, "
                f"ratio {b['ratio']}, on the same input {b['ratio_same_input']}"
            )
        else:
            lines.append(f"{b['baseline']}: cut off after {b['timed_out_after_s']:g} s")
    lines.append(f"Spark SQL's ASOF JOIN: {figures['spark_sql_asof_join']}")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    defaults = AsofBenchOptions()
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.asof_bench",
        description="bench asof on a plain local SparkSession (see benchmarks/asof_bench.py)",
    )
    parser.add_argument("--rows", type=int, default=defaults.rows, help="rows of each side")
    parser.add_argument("--keys", type=int, default=defaults.keys, help="keys (`by` values)")
    parser.add_argument(
        "--direction", choices=("backward", "forward", "nearest"), default=defaults.direction
    )
    parser.add_argument(
        "--partitions", type=int, help="spark.sql.shuffle.partitions (default: the cores)"
    )
    parser.add_argument("--baseline-rows", type=int, default=defaults.baseline_rows)
    parser.add_argument("--baseline-timeout", type=float, default=defaults.baseline_timeout_s)
    parser.add_argument("--warmup-rows", type=int, default=defaults.warmup_rows)
    parser.add_argument("--driver-memory", default="2g", help="spark.driver.memory (2g)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--record", action="store_true", help="append the run to benchmarks/results/asof.jsonl"
    )
    return parser


if __name__ == "__main__":
    sys.exit(main())
