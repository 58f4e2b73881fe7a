"""`statestream run quantity-stats`: the quantity statistics of machine.data on Spark.

machine.data (Kafka, read_committed) → group by a bucket of things →
`QuantityStatisticsProcessor` (transformWithStateInPandas, window state in RocksDB) → window
results, late and malformed records, written to their topics by the tasks, each partition of a
micro-batch in one Kafka transaction of its own (`exactly_once.sink`), exactly once.

Event time is judged per series (thing, quantity), as the statistics query does: machines run
on their own clocks, and per series the outcome depends only on the series' arrival order, never
on how Spark cuts it into micro-batches.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from statestream.config import Settings
from statestream.exactly_once.sink import QueryOptions, start_query
from statestream.jobs.machine_input import section_records
from statestream.queries.quantity_stats import QUERY, QuantityTopics
from statestream.queries.quantity_stats.processor import QuantityStatisticsProcessor
from statestream.queries.quantity_stats.rows import OUTPUT_SCHEMA
from statestream.queries.quantity_stats.spec import QuantitySpec
from statestream.queries.stateful import check_checkpoint, observed, processed

WINDOWS_FILE = "statestream-windows.json"


@dataclass(frozen=True)
class QuantityStatsOptions(QueryOptions):
    """How one run of the query reads and where it keeps its checkpoint; unset fields come
    from the settings (section `quantity_stats`)."""

    query_name: str = QUERY.name


def quantity_spec(settings: Settings) -> QuantitySpec:
    """The time rules of the settings, in ms."""
    section = settings.quantity_stats
    return QuantitySpec(
        window_ms=round(section.window_s * 1000),
        out_of_orderness_ms=section.out_of_orderness_s * 1000.0,
        allowed_lateness_ms=section.allowed_lateness_s * 1000.0,
    )


def quantity_statistics(
    spark: SparkSession, settings: Settings, options: QuantityStatsOptions
) -> DataFrame:
    """Output rows of the processor, with the batch metrics observed under its metrics name."""
    spec = options.spec or quantity_spec(settings)
    processor = QuantityStatisticsProcessor(spec, QuantityTopics.of(settings))
    records = section_records(spark, settings, settings.topics.machine_data, QUERY.section, options)
    return observed(processed(records, processor, OUTPUT_SCHEMA), QUERY)


def start_quantity_stats_query(
    spark: SparkSession, settings: Settings, options: QuantityStatsOptions
) -> StreamingQuery:
    """Start the query; its tasks write each micro-batch to Kafka, exactly once."""
    run = options.query_run(settings, settings.quantity_stats.trigger_interval_s)
    check_options(settings, options)
    return start_query(quantity_statistics(spark, settings, options), settings, run)


def check_options(settings: Settings, options: QuantityStatsOptions) -> None:
    """Refuse a checkpoint whose state holds windows of another length (one line)."""
    checkpoint = options.checkpoint or settings.checkpoint_root / QUERY.name
    spec = options.spec or quantity_spec(settings)
    check_checkpoint(checkpoint, WINDOWS_FILE, {"window_ms": spec.window_ms}, "windows")
