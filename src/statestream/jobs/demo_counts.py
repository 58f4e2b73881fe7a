"""The demo query: how many observations each thing has put on machine.data so far.

A Structured Streaming query (trigger availableNow) reads the topic from where its checkpoint
stopped, keeps a running count per thing in the RocksDB state store and ends when it has caught
up. A second run therefore reads only what arrived since the first, and reports counts since the
first run.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from statestream.config import Settings
from statestream.jobs.machine_input import MACHINE_RECORD_SCHEMA

QUERY_NAME = "demo_counts"


@dataclass(frozen=True)
class DemoCountsResult:
    """What one run read and the running count per thing after it (empty when nothing was new)."""

    topic: str
    checkpoint: Path
    records_read: int
    counts: dict[str, int]


def run_demo_counts(
    spark: SparkSession,
    settings: Settings,
    *,
    topic: str | None = None,
    checkpoint: Path | None = None,
    fresh: bool = False,
) -> DemoCountsResult:
    """Run the demo query until it has read everything on `topic` (default: machine.data).

    `fresh` deletes the query's checkpoint first, so it counts the whole topic again.
    """
    topic = topic or settings.topics.machine_data
    checkpoint = checkpoint or settings.checkpoint_root / QUERY_NAME
    if fresh:
        shutil.rmtree(checkpoint, ignore_errors=True)
    observations = (
        spark.readStream.format("kafka")
        .options(**settings.kafka.spark_options("jobs"))
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .select(F.from_json(F.col("value").cast("string"), MACHINE_RECORD_SCHEMA).alias("o"))
        .select("o.*")
    )
    counts = observations.groupBy("thing").count()
    query = (
        counts.writeStream.queryName(QUERY_NAME)
        .outputMode("complete")
        .format("memory")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    records_read = sum(progress["numInputRows"] for progress in query.recentProgress)
    rows = spark.table(QUERY_NAME).collect()
    return DemoCountsResult(
        topic, checkpoint, records_read, {row["thing"]: row["count"] for row in rows}
    )
