"""The baseline of `statestream bench pipeline`: Spark's own stream-stream join.

This is the windowed approach the seed benchmarked in Flink: both series with a watermark, joined
on thing and component with a time-range condition (the torque record within ±range of the speed
record). It reads the same topic as the complement join and keeps (thing, left time, right time)
of every pair it emits, to count the spec's pairs it finds, misses and adds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from benchmarks.pipeline_input import PAIR_KEY
from statestream.config import Settings
from statestream.jobs.machine_input import MACHINE_RECORD_SCHEMA


@dataclass
class BaselineRun:
    """What the windowed join emitted and how long it took."""

    seconds: float = 0.0
    batches: list[pd.DataFrame] = field(default_factory=list)

    @property
    def pairs(self) -> pd.DataFrame:
        if not self.batches:
            return pd.DataFrame(columns=PAIR_KEY)
        return pd.concat(self.batches, ignore_index=True)


def _series(records: DataFrame, prefix: str, alias: str, delay_s: float) -> DataFrame:
    quantity = F.col("r.quantity")
    return (
        records.where(quantity.startswith(prefix))
        .select(
            F.col("r.thing").alias(f"{alias}_thing"),
            F.substring_index(quantity, "_", -1).alias(f"{alias}_component"),
            F.col("r.phenomenonTime").cast("long").alias(f"{alias}_t"),
            F.timestamp_millis(F.col("r.phenomenonTime").cast("long")).alias(f"{alias}_ts"),
        )
        .withWatermark(f"{alias}_ts", f"{int(delay_s * 1000)} milliseconds")
    )


def windowed_join(
    spark: SparkSession,
    settings: Settings,
    topic: str,
    range_s: float,
    watermark_s: float,
    max_offsets_per_trigger: int,
) -> DataFrame:
    """speed ⋈ torque on thing and component, torque time within ±range_s of speed time."""
    records = (
        spark.readStream.format("kafka")
        .options(**settings.kafka.spark_options("admin"))  # the bench's own topic
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
        .load()
        .select(F.from_json(F.col("value").cast("string"), MACHINE_RECORD_SCHEMA).alias("r"))
    )
    speed = _series(records, "actSpeed_", "s", watermark_s)
    torque = _series(records, "vaTorque_", "q", watermark_s)
    window = F.expr(f"INTERVAL {int(range_s * 1000)} MILLISECONDS")
    condition = (
        (F.col("s_thing") == F.col("q_thing"))
        & (F.col("s_component") == F.col("q_component"))
        & (F.col("q_ts") >= F.col("s_ts") - window)
        & (F.col("q_ts") <= F.col("s_ts") + window)
    )
    return speed.join(torque, condition, "inner").select(
        F.col("s_thing").alias("thing"),
        F.col("s_t").alias("left_t"),
        F.col("q_t").alias("right_t"),
    )


def run_baseline(
    spark: SparkSession,
    settings: Settings,
    topic: str,
    checkpoint: Path,
    range_s: float,
    watermark_s: float,
    max_offsets_per_trigger: int,
) -> BaselineRun:
    """Run the windowed join over everything in `topic` (available now) and keep its pairs."""
    run = BaselineRun()

    def keep(batch: DataFrame, _batch_id: int) -> None:
        frame = batch.toPandas()
        if len(frame):
            run.batches.append(frame)

    started = time.perf_counter()
    query = (
        windowed_join(spark, settings, topic, range_s, watermark_s, max_offsets_per_trigger)
        .writeStream.queryName("bench-windowed-join")
        .option("checkpointLocation", str(checkpoint))
        .outputMode("append")
        .trigger(availableNow=True)
        .foreachBatch(keep)
        .start()
    )
    query.awaitTermination()
    run.seconds = time.perf_counter() - started
    if query.exception() is not None:
        raise RuntimeError(f"the windowed join failed: {query.exception()}")
    return run
