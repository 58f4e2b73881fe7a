"""`statestream run geo`: vehicle positions → H3 cells in tumbling event-time windows, on Spark.

input.vehicle.positions (Kafka, read_committed) → decode and place in cells, bucketed by cell,
Spark's watermark (`queries.geo.input`) → `CellWindowsProcessor` (transformWithStateInPandas, the
windows in RocksDB, event-time timers) → cell results, late positions and dead letters, written
by the tasks, each partition of a micro-batch in one Kafka transaction of its own
(`exactly_once.sink`), exactly once. Why a retried batch writes the same: docs/queries/geo.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from statestream.config import Settings
from statestream.exactly_once.sink import QueryOptions, start_query
from statestream.geo import GeoSpec
from statestream.jobs.kafka_input import read_limits
from statestream.queries.geo import QUERY, GeoTopics
from statestream.queries.geo.input import kafka_positions
from statestream.queries.geo.processor import CellWindowsProcessor
from statestream.queries.geo.rows import OUTPUT_SCHEMA
from statestream.queries.stateful import check_checkpoint, observed, processed

QUERY_NAME = QUERY.name
METRICS_NAME = QUERY.metrics_name
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
    limits = read_limits(settings, QUERY.section, options)
    positions = kafka_positions(spark, settings, topics.vehicle_positions, **limits)
    output = processed(positions, processor, OUTPUT_SCHEMA, time_mode="EventTime")
    return observed(output, QUERY, F.max("watermark").alias("watermark_ms"))


def start_geo_query(
    spark: SparkSession, settings: Settings, options: GeoJobOptions
) -> StreamingQuery:
    """Start the geo query; its tasks write each micro-batch to Kafka, exactly once."""
    run = options.query_run(settings, settings.geo.trigger_interval_s)
    check_checkpoint_spec(run.checkpoint, geo_spec(settings))
    return start_query(cell_windows(spark, settings, options), settings, run)


def check_options(settings: Settings, options: GeoJobOptions) -> None:
    """Before Spark starts: refuse a checkpoint of other cells or windows (one line)."""
    checkpoint = options.checkpoint or settings.checkpoint_root / QUERY_NAME
    check_checkpoint_spec(checkpoint, geo_spec(settings))


def check_checkpoint_spec(checkpoint: Path, spec: GeoSpec) -> None:
    """Refuse a checkpoint whose state holds cells or windows of other settings than `spec`'s."""
    wanted = {"resolution": spec.resolution, "window_ms": spec.window_ms}
    check_checkpoint(checkpoint, SPEC_FILE, wanted, "cells and windows")
