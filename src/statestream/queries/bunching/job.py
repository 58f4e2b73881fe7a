"""The bunching query: two vehicles of a line close together for a while → one alert, exactly once.

input.vehicle.positions (Kafka, read_committed) → decode (`mapInPandas`, the envelope's codec:
`jobs.vehicle_decoding`) → group by line (`route/direction`) → `VehicleBunchingProcessor`
(transformWithStateInPandas, the line's state in RocksDB) → alerts on
`analytics.vehicle.alerts` (key `route/direction`) and dead letters, written by the tasks, each
partition of a micro-batch in one Kafka transaction of its own (`exactly_once.sink`), exactly
once. What counts as bunched, when an episode ends and why the alerts do not depend on the
micro-batches: `statestream.geo.bunching`.

`statestream run geo` starts it beside the cells query (same `command`), checkpoint
`bunching` in the checkpoint root (`DIR-bunching` beside a geo checkpoint `DIR` given).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from statestream.config import Settings
from statestream.exactly_once.sink import QueryOptions, start_query
from statestream.geo.bunching import BunchingSpec
from statestream.ingest.envelope import Envelope
from statestream.jobs.kafka_input import committed_stream, read_limits
from statestream.jobs.vehicle_decoding import decode_vehicle_rows
from statestream.queries.bunching import QUERY, REJECTS_LINE, BunchingTopics
from statestream.queries.bunching.processor import VehicleBunchingProcessor
from statestream.queries.bunching.rows import OUTPUT_SCHEMA
from statestream.queries.stateful import observed, processed

QUERY_NAME = QUERY.name
METRICS_NAME = QUERY.metrics_name
DECODED_SCHEMA = (
    "line string, vehicle string, mode string, route string, direction int, t double, "
    "lat double, long double, partition int, offset long, reason string, raw binary"
)
_DECODED_COLUMNS = [column.split()[0] for column in DECODED_SCHEMA.split(",")]


@dataclass(frozen=True)
class BunchingJobOptions(QueryOptions):
    """How one run of the bunching query reads and where it keeps its checkpoint.

    Unset fields come from the settings (section `geo`): the bunching definitions, the trigger
    interval and max offsets per trigger.
    """

    query_name: str = QUERY_NAME


def bunching_spec(settings: Settings) -> BunchingSpec:
    """The bunching definitions of the settings, times in ms."""
    geo = settings.geo
    return BunchingSpec(
        distance_m=geo.bunching_m,
        duration_ms=geo.bunching_s * 1000.0,
        max_skew_ms=geo.bunching_max_skew_s * 1000.0,
    )


def vehicle_alerts(
    spark: SparkSession, settings: Settings, options: BunchingJobOptions
) -> DataFrame:
    """Output rows of the processor, with the batch metrics observed under `bunching_metrics`."""
    topics = settings.topics
    processor = VehicleBunchingProcessor(
        options.spec or bunching_spec(settings),
        BunchingTopics(topics.vehicle_alerts, topics.dead_letter, topics.vehicle_positions),
    )
    limits = read_limits(settings, QUERY.section, options)
    rows = committed_stream(spark, settings, topics.vehicle_positions, **limits)
    rows = rows.select(F.col("key").cast("string").alias("key"), "value", "partition", "offset")
    positions = rows.mapInPandas(_decoder(settings.ingest.envelope), DECODED_SCHEMA)
    output = processed(positions, processor, OUTPUT_SCHEMA, key="line")
    return observed(output, QUERY)


def start_bunching_query(
    spark: SparkSession, settings: Settings, options: BunchingJobOptions
) -> StreamingQuery:
    """Start the bunching query; its tasks write each micro-batch to Kafka, exactly once."""
    run = options.query_run(settings, settings.geo.trigger_interval_s)
    return start_query(vehicle_alerts(spark, settings, options), settings, run)


def _decoder(envelope: Envelope):
    """The `mapInPandas` function: Kafka rows → decoded positions, rejects under line ""."""

    def decode(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for rows in batches:
            positions, rejects = decode_vehicle_rows(rows, envelope)
            rejects = rejects.assign(line=REJECTS_LINE)
            both = pd.concat([positions, rejects], ignore_index=True)
            both = both.reindex(columns=_DECODED_COLUMNS)
            yield both.astype({"direction": "Int32", "partition": "int32", "offset": "int64"})

    return decode
