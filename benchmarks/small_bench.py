"""`statestream bench small`: what the joins cost on a small DataFrame, against a groupBy of it.

Issue #49 point 5: a batch call on a small DataFrame should cost about what a Spark `groupBy` of
it costs on the same session, without the user tuning partitions (the joins size their buckets
from the data, or let adaptive execution coalesce them).

The input is the library example's (docs/how-to/pyspark.md, examples/batch_parquet.py): the
bundled sample of wide machine rows (`statestream/data/machine_events.jsonl`) as narrow records,
`observations(spark.read.json(sample))`, cached and counted before any clock starts.

The session is the one every bench gets (`statestream.jobs.session.spark_session`: the settings'
master, memory and statestream's patches), with two settings as a user's own session has them,
for the run only: `spark.sql.shuffle.partitions` at Spark's default (`SPARK_PARTITIONS`), and
adaptive execution as Spark ships it (every `spark.sql.adaptive.*` the session set is unset).
The pipeline's few shuffle partitions (`spark.shuffle_partitions`) would otherwise hide what is
measured: a small input under a user's default partitions.

Timed, each the same way (`.write.format("noop")`, every output row and column computed):

- `complement_join(records, [SpecTemplate()])`, as the library example calls it;
- `asof_join(speed, torque, on="phenomenonTime", by="thing")`: each actSpeed_C11 record with the
  vaTorque_C11 record in force at its time, per thing (`LEFT`, `RIGHT`: two sides cut from the
  same records), the README's library example (tests/spark/test_readme_example.py checks that
  they are the same rows);
- the baseline, `records.groupBy("thing").count()`;
- the same count through a Python UDF, `groupBy("thing").applyInPandas(…)`: every record goes to
  a Python worker and back as one row per thing, so the reader sees the fixed cost any Python
  UDF has on this session.

Each runs once as a warm-up, then `repeat` times, one of each in turn (a change of the machine's
load falls on all four alike): its median and fastest seconds, and the ratios of the medians
(`complement_join_to_groupby`: the join's median ÷ the groupBy's; 1 is as cheap). After the
clocks, each output's rows and the partitions of its last stage are counted (not timed).
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from benchmarks.asof_bench import noop_seconds
from statestream.errors import StatestreamError

PARTITIONS = "spark.sql.shuffle.partitions"
SPARK_PARTITIONS = 200  # Spark's default of spark.sql.shuffle.partitions
ADAPTIVE = "spark.sql.adaptive."
LEFT, RIGHT = "actSpeed_C11", "vaTorque_C11"  # asof_join's sides: speed with the torque in force
JOINS = ("complement_join", "asof_join")
BASELINES = ("groupby", "python_udf")

Progress = Callable[[str], None]


@dataclass(frozen=True)
class SmallBenchOptions:
    repeat: int = 5  # timed runs of each query, after one warm-up run each


def sample_records(spark: SparkSession) -> DataFrame:
    """The bundled sample as narrow records (thing, quantity, phenomenonTime, result), as the
    library example builds them."""
    from statestream.spark import observations

    sample = resources.files("statestream.data").joinpath("machine_events.jsonl")
    return observations(spark.read.json(str(sample)))


def complement_join_of(records: DataFrame) -> DataFrame:
    """The library example's call: every thing's actSpeed ⋈ vaTorque → vaPower, with flush."""
    from statestream.join import SpecTemplate
    from statestream.spark import complement_join

    return complement_join(records, [SpecTemplate()])


def asof_sides(records: DataFrame) -> tuple[DataFrame, DataFrame]:
    """`LEFT`'s records as `speed` and `RIGHT`'s as `torque`: thing, phenomenonTime, value."""

    def side(quantity: str, name: str) -> DataFrame:
        rows = records.where(F.col("quantity") == quantity)
        return rows.select("thing", "phenomenonTime", F.col("result").alias(name))

    return side(LEFT, "speed"), side(RIGHT, "torque")


def asof_join_of(records: DataFrame) -> DataFrame:
    """Each speed record with the torque in force at its time, per thing (backward)."""
    from statestream.spark import asof_join

    speed, torque = asof_sides(records)
    return asof_join(speed, torque, on="phenomenonTime", by="thing")


def groupby_of(records: DataFrame) -> DataFrame:
    """The baseline: the records per thing, all in the JVM."""
    return records.groupBy("thing").count()


def python_udf_of(records: DataFrame) -> DataFrame:
    """The same count in a Python UDF: every record to a Python worker, a row per thing back."""

    def count(group: Any) -> Any:  # nested: pickled by value, the workers need no benchmarks/
        import pandas as pd

        return pd.DataFrame({"thing": [group["thing"].iloc[0]], "count": [len(group)]})

    return records.groupBy("thing").applyInPandas(count, schema="thing string, count long")


QUERIES: dict[str, Callable[[DataFrame], DataFrame]] = {
    "complement_join": complement_join_of,
    "asof_join": asof_join_of,
    "groupby": groupby_of,
    "python_udf": python_udf_of,
}


@contextmanager
def spark_defaults(spark: SparkSession) -> Iterator[None]:
    """Spark's own shuffle partitions and adaptive execution inside the block; the session's
    settings back after it."""
    saved = {
        key: value
        for key, value in spark.conf.getAll.items()
        if (key == PARTITIONS or key.startswith(ADAPTIVE)) and spark.conf.isModifiable(key)
    }
    for key in saved:
        spark.conf.unset(key)
    spark.conf.set(PARTITIONS, str(SPARK_PARTITIONS))
    try:
        yield
    finally:
        spark.conf.unset(PARTITIONS)
        for key, value in saved.items():
            spark.conf.set(key, value)


def timed(frames: dict[str, DataFrame], repeat: int, say: Progress) -> dict[str, list[float]]:
    """Each frame's seconds into the noop sink, `repeat` times in turn after one warm-up each."""
    say(f"warming up: {', '.join(frames)} once each")
    for frame in frames.values():
        noop_seconds(frame)
    times: dict[str, list[float]] = {name: [] for name in frames}
    for run in range(1, repeat + 1):
        say(f"run {run} of {repeat}: {', '.join(frames)}")
        for name, frame in frames.items():
            times[name].append(noop_seconds(frame))
    return times


def summary(times: dict[str, list[float]]) -> dict[str, float]:
    """The median (`<query>_s`) and fastest (`<query>_min_s`) seconds of each query, and each
    join's median ÷ each baseline's, and the Python UDF's ÷ the groupBy's (`<a>_to_<b>`).

    >>> summary({"complement_join": [2.0, 4.0, 3.0], "asof_join": [1.0],
    ...          "groupby": [1.0], "python_udf": [2.0]})["complement_join_to_python_udf"]
    1.5
    """
    medians = {name: statistics.median(found) for name, found in times.items()}
    figures: dict[str, float] = {}
    for name, found in times.items():
        figures[f"{name}_s"] = round(medians[name], 4)
        figures[f"{name}_min_s"] = round(min(found), 4)
    pairs = [(join, base) for join in JOINS for base in BASELINES] + [("python_udf", "groupby")]
    for top, bottom in pairs:
        figures[f"{top}_to_{bottom}"] = round(medians[top] / medians[bottom], 2)
    return figures


def outputs(frames: dict[str, DataFrame]) -> dict[str, int]:
    """Each output's rows and the partitions of its last stage (after adaptive execution's
    coalescing), counted after the clocks; `StatestreamError` for an empty output."""
    found: dict[str, int] = {}
    for name, frame in frames.items():
        found[f"{name}_rows"] = frame.count()
        found[f"{name}_partitions"] = frame.rdd.getNumPartitions()
    empty = [name for name in frames if not found[f"{name}_rows"]]
    if empty:
        raise StatestreamError(f"bench small: no output rows from {', '.join(empty)}")
    return found


def run(spark: SparkSession, options: SmallBenchOptions, say: Progress) -> dict[str, Any]:
    """The figures of the joins and of the baselines on the sample, measured in this run."""
    with spark_defaults(spark):
        records = sample_records(spark).cache()
        try:
            return _measured(spark, records, options, say)
        finally:
            records.unpersist()


def _measured(
    spark: SparkSession, records: DataFrame, options: SmallBenchOptions, say: Progress
) -> dict[str, Any]:
    say("reading the bundled sample as records and caching them (not timed)")
    count = records.count()
    things = records.select("thing").distinct().count()
    frames = {name: query(records) for name, query in QUERIES.items()}
    figures: dict[str, Any] = {
        "records": count,
        "things": things,
        "repeat": options.repeat,
        "shuffle_partitions": int(spark.conf.get(PARTITIONS) or SPARK_PARTITIONS),
        "adaptive": spark.conf.get("spark.sql.adaptive.enabled") == "true",
    }
    figures.update(summary(timed(frames, options.repeat, say)))
    say("counting each output's rows and partitions (not timed)")
    figures.update(outputs(frames))
    figures["spark_version"] = spark.version
    figures["cpus"] = os.cpu_count()
    figures["load_average_1m"] = round(os.getloadavg()[0], 2)
    return figures
