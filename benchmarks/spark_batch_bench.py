"""`statestream bench spark-batch`: `complement_join` on a batch DataFrame against merge_asof.

The input: N observations over K things, made by Spark itself (`spark.range`, no data through the
driver): thing `m<id mod K>`, each thing's records one second apart, each record L or R by a hash
(so the series interleave irregularly), a value. The join: L ⋈ R → P (product), with flush,
each series in time order (no `order` column), counted (every pair is computed: the pandas UDF
runs whatever columns the count needs), after a warm-up join of `warmup_records` observations
(1 M by default: a batch job's first pass through the JVM's compiler is slower, ~18 s against
~13.5 s for a second 10 M run in the same JVM; 0 measures that first pass). With `cached_input`
(the default) each input is generated and cached (`MEMORY_AND_DISK`) before its clock starts, as
a table that is already there: Spark would otherwise generate the columns twice inside the
timed join (once for the join's row filter, once for its rows: ~8 % of the time), which is the
generator's cost, not the join's.

The baseline is what a Spark user reaches for today: `pyspark.pandas.merge_asof` of L onto R by
thing, backward and forward (each L record's previous and next R record). It runs on the first
`baseline_records` observations only (it is much slower); on that input the benchmark also
counts how many of the spec's pairs the two as-of joins find together (the spec also pairs each
R record with its previous and next L record, which they miss).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from statestream.join import JoinSpec

SPEC = JoinSpec("L", "R", "P", function="product")
BASE_MS = 1_700_000_000_000
TARGET_RECORDS_PER_S = 1_000_000

Progress = Callable[[str], None]


@dataclass(frozen=True)
class SparkBatchOptions:
    records: int = 10_000_000
    things: int = 1_000
    baseline_records: int = 100_000
    buckets: int | None = None
    warmup_records: int = 1_000_000
    cached_input: bool = True


def observations(spark: SparkSession, records: int, things: int) -> DataFrame:
    """`records` observations over `things` things, one second apart within a thing."""
    step = F.floor(F.col("id") / things)
    return spark.range(records).select(
        F.concat(F.lit("m"), (F.col("id") % things).cast("string")).alias("thing"),
        F.when(F.xxhash64("id") % 2 == 0, F.lit("L")).otherwise(F.lit("R")).alias("quantity"),
        (F.lit(BASE_MS) + step * 1000).cast("long").alias("phenomenonTime"),
        (F.col("id") % 97).cast("double").alias("result"),
    )


def run(spark: SparkSession, options: SparkBatchOptions, say: Progress) -> dict:
    """The join's and the baseline's figures, measured in this run."""
    from statestream.spark import complement_join

    if options.warmup_records:
        say(f"warming up: the join of {options.warmup_records:,} observations (JVM, workers)")
        complement_join(observations(spark, options.warmup_records, options.things), [SPEC]).count()
    say(f"complement_join of {options.records:,} observations over {options.things:,} things")
    df = _input(spark, options.records, options, say)
    started = time.perf_counter()
    pairs = complement_join(df, [SPEC], buckets=options.buckets).count()
    seconds = time.perf_counter() - started

    capped = min(options.records, options.baseline_records)
    say(f"baseline: pyspark.pandas.merge_asof on {capped:,} observations")
    df.unpersist()
    small = _input(spark, capped, options, say)
    baseline = _merge_asof_pairs(small)
    started = time.perf_counter()
    baseline_pairs = baseline.count()
    baseline_seconds = time.perf_counter() - started
    say("counting the spec's pairs the baseline finds")
    spec_pairs = complement_join(small, [SPEC], buckets=options.buckets).select(
        "thing",
        F.col("left.phenomenonTime").alias("lt"),
        F.col("right.phenomenonTime").alias("rt"),
    )
    found = spec_pairs.join(baseline, ["thing", "lt", "rt"]).count()
    records_per_s = round(options.records / seconds)
    baseline_per_s = round(capped / baseline_seconds)
    return {
        "records": options.records,
        "things": options.things,
        "warmup_records": options.warmup_records,
        "cached_input": options.cached_input,
        "pairs": pairs,
        "seconds": round(seconds, 2),
        "records_per_s": records_per_s,
        "target_records_per_s": TARGET_RECORDS_PER_S,
        "baseline": "pyspark.pandas.merge_asof backward + forward",
        "baseline_records": capped,
        "baseline_capped": capped < options.records,
        "baseline_seconds": round(baseline_seconds, 2),
        "baseline_records_per_s": baseline_per_s,
        "baseline_pairs": baseline_pairs,
        "spec_pairs_on_baseline_input": spec_pairs.count(),
        "spec_pairs_found_by_baseline": found,
        "ratio": round(records_per_s / baseline_per_s, 2),
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def _input(
    spark: SparkSession, records: int, options: SparkBatchOptions, say: Progress
) -> DataFrame:
    """`observations`, cached and counted first when `options.cached_input`."""
    df = observations(spark, records, options.things)
    if not options.cached_input:
        return df
    say(f"generating and caching {records:,} observations")
    df = df.persist(StorageLevel.MEMORY_AND_DISK)
    df.count()
    return df


def _merge_asof_pairs(df: DataFrame) -> DataFrame:
    """The distinct (thing, lt, rt) of each L record's previous and next R record (merge_asof)."""
    import pyspark.pandas as ps

    ps.set_option("compute.default_index_type", "distributed")
    frame = df.pandas_api()
    left = frame[frame["quantity"] == "L"][["thing", "phenomenonTime"]].rename(
        columns={"phenomenonTime": "lt"}
    )
    right = frame[frame["quantity"] == "R"][["thing", "phenomenonTime"]].rename(
        columns={"phenomenonTime": "rt"}
    )
    left, right = left.sort_values("lt"), right.sort_values("rt")
    found = []
    for direction in ("backward", "forward"):
        joined = ps.merge_asof(
            left, right, left_on="lt", right_on="rt", by="thing", direction=direction
        )
        found.append(joined.to_spark().where(F.col("rt").isNotNull()))
    return found[0].unionByName(found[1]).select("thing", "lt", "rt").distinct()
