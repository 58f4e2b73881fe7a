"""`statestream run geo`: vehicle positions → H3 cells in tumbling event-time windows, on Spark.

input.vehicle.positions (Kafka, read_committed) → decode and place in cells, bucketed by cell,
Spark's watermark (`jobs.geo_input`) → `CellWindowsProcessor` (transformWithStateInPandas, the
windows in RocksDB, event-time timers) → cell results, late positions and dead letters, written
by the tasks, each partition of a micro-batch in one Kafka transaction of its own
(`exactly_once.sink`), exactly once. Why a retried batch writes the same: README, "Geo cells".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from statestream.config import Settings
from statestream.errors import ConfigError
from statestream.exactly_once.sink import QueryOptions, packed_count, start_query, summed
from statestream.geo import GeoSpec
from statestream.jobs.geo_input import kafka_positions
from statestream.jobs.geo_processor import CellWindowsProcessor, GeoTopics
from statestream.jobs.geo_rows import OUTPUT_SCHEMA
from statestream.jobs.status import batch_figures

QUERY_NAME = "geo"
METRICS_NAME = "geo_metrics"
SPEC_FILE = "statestream-geo.json"
COUNTERS = ("positions", "no_fix", "cell_results", "late", "malformed", "state_windows")


@dataclass(frozen=True)
class GeoJobOptions(QueryOptions):
    """How one run of the geo query reads and where it keeps its checkpoint.

    Unset fields come from the settings (section `geo`).
    """

    query_name: str = QUERY_NAME


def geo_spec(settings: Settings) -> GeoSpec:
    """The cell and window definitions of the settings, times in ms."""
    geo = settings.geo
    return GeoSpec(
        resolution=geo.resolution,
        window_ms=round(geo.window_s * 1000),
        disorder_ms=round(geo.disorder_s * 1000),
        allowed_lateness_ms=round(geo.allowed_lateness_s * 1000),
    )


def cell_windows(spark: SparkSession, settings: Settings, options: GeoJobOptions) -> DataFrame:
    """Output rows of the processor, with the batch metrics observed under `geo_metrics`."""
    topics = settings.topics
    processor = CellWindowsProcessor(
        geo_spec(settings),
        GeoTopics(topics.vehicle_cells, topics.late, topics.dead_letter, topics.vehicle_positions),
    )
    positions = kafka_positions(
        spark,
        settings,
        topics.vehicle_positions,
        starting_offsets=options.starting_offsets,
        max_offsets_per_trigger=(
            options.max_offsets_per_trigger or settings.geo.max_offsets_per_trigger
        ),
    )
    output = positions.groupBy("bucket").transformWithStateInPandas(
        statefulProcessor=processor,
        outputStructType=OUTPUT_SCHEMA,
        outputMode="Update",
        timeMode="EventTime",
    )
    kind = F.col("kind")
    return output.observe(
        METRICS_NAME,
        summed("records").alias("records_in"),
        summed("positions").alias("positions"),
        summed("no_fix").alias("no_fix"),
        packed_count(kind == "cells").alias("cell_results"),
        summed("late").alias("late"),
        summed("malformed").alias("malformed"),
        summed("open_windows").alias("state_windows"),
        F.max("max_event_time").alias("max_event_time_ms"),
        F.max("watermark").alias("watermark_ms"),
    )


def start_geo_query(
    spark: SparkSession, settings: Settings, options: GeoJobOptions
) -> StreamingQuery:
    """Start the geo query; its tasks write each micro-batch to Kafka, exactly once."""
    run = options.query_run(settings, settings.geo.trigger_interval_s)
    check_checkpoint_spec(run.checkpoint, geo_spec(settings))
    return start_query(cell_windows(spark, settings, options), settings, run)


def check_checkpoint_spec(checkpoint: Path, spec: GeoSpec) -> None:
    """Refuse a checkpoint whose state holds windows or cells of other settings than `spec`'s.

    Resolution and window length are kept in a small file in the checkpoint folder, so a
    changed setting stops the command with one line before Spark starts.
    """
    wanted = {"resolution": spec.resolution, "window_ms": spec.window_ms}
    marker = checkpoint / SPEC_FILE
    if not marker.is_file():
        checkpoint.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps(wanted))
        return
    stored = json.loads(marker.read_text())
    if stored != wanted:
        raise ConfigError(
            f"checkpoint {checkpoint} holds cells and windows of other settings ({stored}) than "
            f"the settings ({wanted}); use a new --checkpoint"
        )


def batch_metrics(progress: dict) -> dict[str, float | int | None]:
    """The figures of one batch of the geo query, from its progress report."""
    return batch_figures(progress, METRICS_NAME, COUNTERS)
