"""The queries of the vehicle use case that `statestream run geo` starts in one Spark application.

`VEHICLE_QUERIES` lists them: each entry starts one query on a SparkSession and returns it with
the function that turns one batch's progress into its printed line: the geo cells and the
bunching alerts (`jobs.bunching_job`). Every query keeps its own name and checkpoint folder.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from statestream.config import Settings
from statestream.jobs.bunching_job import (
    BunchingJobOptions,
    bunching_metrics_line,
    start_bunching_query,
)
from statestream.jobs.bunching_job import batch_metrics as bunching_batch_metrics
from statestream.jobs.geo_job import GeoJobOptions, batch_metrics, start_geo_query
from statestream.jobs.status import batch_line

ProgressLine = Callable[[dict], str]
QueryStarter = Callable[
    [SparkSession, Settings, GeoJobOptions], tuple[StreamingQuery, ProgressLine]
]


def geo_metrics_line(m: dict) -> str:
    """The printed line of one batch of the geo query."""
    return batch_line(
        m,
        f"{m['positions']:,} placed, {m['no_fix']:,} without fix, "
        f"{m['cell_results']:,} cell results, late {m['late']:,}, "
        f"malformed {m['malformed']:,}, {m['state_windows']:,} open windows",
    )


def _geo(
    spark: SparkSession, settings: Settings, options: GeoJobOptions
) -> tuple[StreamingQuery, ProgressLine]:
    query = start_geo_query(spark, settings, options)
    return query, lambda progress: geo_metrics_line(batch_metrics(progress))


def _bunching(
    spark: SparkSession, settings: Settings, options: GeoJobOptions
) -> tuple[StreamingQuery, ProgressLine]:
    """The bunching alerts; checkpoint `bunching`, or `DIR-bunching` beside a geo one given."""
    geo_checkpoint = options.checkpoint
    bunching = BunchingJobOptions(
        available_now=options.available_now,
        max_offsets_per_trigger=options.max_offsets_per_trigger,
        starting_offsets=options.starting_offsets,
        checkpoint=geo_checkpoint and geo_checkpoint.with_name(f"{geo_checkpoint.name}-bunching"),
    )
    query = start_bunching_query(spark, settings, bunching)
    return query, lambda progress: bunching_metrics_line(bunching_batch_metrics(progress))


VEHICLE_QUERIES: list[QueryStarter] = [_geo, _bunching]


def start_vehicle_queries(
    spark: SparkSession, settings: Settings, options: GeoJobOptions
) -> list[tuple[StreamingQuery, ProgressLine]]:
    """Start every query of `VEHICLE_QUERIES`; if one fails to start, stop those started."""
    started: list[tuple[StreamingQuery, ProgressLine]] = []
    try:
        for start in VEHICLE_QUERIES:
            started.append(start(spark, settings, options))
    except BaseException:
        for query, _ in started:
            query.stop()
        raise
    return started
