"""The queries of the vehicle use case that `statestream run geo` starts in one Spark application.

`VEHICLE_QUERIES` lists them: each entry starts one query on a SparkSession and returns it with
the function that turns one batch's progress into its printed line: the geo cells and the
bunching alerts (`queries.bunching.job`). Every query keeps its own name and checkpoint folder.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from statestream.config import Settings
from statestream.queries.bunching import QUERY as BUNCHING
from statestream.queries.bunching.job import BunchingJobOptions, start_bunching_query
from statestream.queries.geo import QUERY as GEO
from statestream.queries.geo.job import GeoJobOptions, start_geo_query

ProgressLine = Callable[[dict], str]
QueryStarter = Callable[
    [SparkSession, Settings, GeoJobOptions], tuple[StreamingQuery, ProgressLine]
]


def _geo(
    spark: SparkSession, settings: Settings, options: GeoJobOptions
) -> tuple[StreamingQuery, ProgressLine]:
    query = start_geo_query(spark, settings, options)
    return query, GEO.batch_line


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
    return query, BUNCHING.batch_line


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
