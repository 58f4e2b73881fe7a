"""`statestream run stats`: operation statistics of the joined power series on Spark.

machine.out (Kafka, read_committed) → parse → group by a bucket of things →
`PowerStatisticsProcessor` (transformWithStateInPandas, window state in RocksDB) → window
results, alerts, late and malformed records, written to their topics by the tasks, each
partition of a micro-batch in one Kafka transaction of its own (`exactly_once.sink`), exactly
once.

Event time is judged per power series (thing, component), not by Spark's query-wide watermark:
machines run on their own clocks (the sample's three machines are days apart), and one query-wide
watermark would turn a lagging machine's whole series late. Per series, the outcome depends only
on the series' arrival order, never on how Spark cuts it into micro-batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from statestream.config import Settings
from statestream.exactly_once.sink import QueryOptions, start_query
from statestream.jobs.machine_input import section_records
from statestream.queries.stateful import check_checkpoint, observed, processed
from statestream.queries.stats import QUERY, StatsTopics
from statestream.queries.stats.processor import PowerStatisticsProcessor
from statestream.queries.stats.rows import OUTPUT_SCHEMA
from statestream.stats import StatsSpec

QUERY_NAME = QUERY.name
METRICS_NAME = QUERY.metrics_name
WINDOWS_FILE = "statestream-windows.json"


@dataclass(frozen=True)
class StatsJobOptions(QueryOptions):
    """How one run of the statistics query reads and where it keeps its checkpoint.

    Unset fields come from the settings (section `stats`): the definitions, buckets, trigger
    interval and max offsets per trigger.
    """

    query_name: str = QUERY_NAME


def stats_spec(settings: Settings) -> StatsSpec:
    """The statistics' definitions of the settings, times in ms and power in W."""
    stats = settings.stats
    return StatsSpec(
        rated_power_w=stats.rated_power_kw * 1000.0,
        window_ms=round(stats.window_s * 1000),
        duty_window_ms=round(stats.duty_window_s * 1000),
        duty_slide_ms=round(stats.duty_slide_s * 1000),
        duty_threshold=stats.duty_threshold,
        duty_limit=stats.duty_limit,
        sampling_interval_s=stats.sampling_interval_s,
        out_of_orderness_ms=stats.out_of_orderness_s * 1000.0,
        allowed_lateness_ms=stats.allowed_lateness_s * 1000.0,
    )


def statistics(spark: SparkSession, settings: Settings, options: StatsJobOptions) -> DataFrame:
    """Output rows of the processor, with the batch metrics observed under `stats_metrics`."""
    topics = settings.topics
    processor = PowerStatisticsProcessor(
        options.spec or stats_spec(settings),
        settings.stats.power_quantity,
        StatsTopics(
            topics.stats, topics.alerts, topics.late, topics.dead_letter, topics.machine_out
        ),
    )
    records = section_records(spark, settings, topics.machine_out, QUERY.section, options)
    output = processed(records, processor, OUTPUT_SCHEMA)
    return observed(output, QUERY)


def start_stats_query(
    spark: SparkSession, settings: Settings, options: StatsJobOptions
) -> StreamingQuery:
    """Start the statistics query; its tasks write each micro-batch to Kafka, exactly once."""
    run = options.query_run(settings, settings.stats.trigger_interval_s)
    check_checkpoint_windows(run.checkpoint, options.spec or stats_spec(settings))
    frame = statistics(spark, settings, options)
    return start_query(frame, settings, run)


def check_options(settings: Settings, options: StatsJobOptions) -> None:
    """Before Spark starts: refuse a checkpoint with other window lengths (one line)."""
    checkpoint = options.checkpoint or settings.checkpoint_root / QUERY_NAME
    check_checkpoint_windows(checkpoint, options.spec or stats_spec(settings))


def check_checkpoint_windows(checkpoint: Path, spec: StatsSpec) -> None:
    """Refuse a checkpoint whose state holds windows of other lengths than `spec`'s."""
    lengths = {
        "window_ms": spec.window_ms,
        "duty_window_ms": spec.duty_window_ms,
        "duty_slide_ms": spec.duty_slide_ms,
    }
    check_checkpoint(checkpoint, WINDOWS_FILE, lengths, "windows")
