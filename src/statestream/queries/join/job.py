"""`statestream run join`: the complement join as a Spark Structured Streaming query.

machine.data (Kafka) → group by a bucket of things → `ComplementJoinProcessor` (decodes)
(transformWithStateInPandas, RocksDB state) → machine.out, the late and the dead-letter topics,
written by the tasks, each partition of a micro-batch in one Kafka transaction of its own
(`exactly_once.sink`), exactly once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from statestream.config import Settings
from statestream.exactly_once.sink import QueryOptions, start_query
from statestream.jobs.machine_input import section_records
from statestream.join import SpecTemplate
from statestream.queries.join import QUERY, OutputTopics
from statestream.queries.join.processor import ComplementJoinProcessor
from statestream.queries.join.rows import OUTPUT_SCHEMA
from statestream.queries.stateful import observed, processed

QUERY_NAME = QUERY.name
METRICS_NAME = QUERY.metrics_name


@dataclass(frozen=True)
class JoinJobOptions(QueryOptions):
    """How one run of the join query reads and where it keeps its checkpoint.

    Unset fields come from the settings (section `join`): specs, buckets, trigger interval and
    max offsets per trigger.
    """

    query_name: str = QUERY_NAME
    templates: Sequence[SpecTemplate] | None = None
    trigger_interval_s: float | None = None


def spec_templates(settings: Settings) -> list[SpecTemplate]:
    """The join specs of the settings."""
    return [SpecTemplate(**spec.model_dump()) for spec in settings.join.specs]


def bucketed_records(spark: SparkSession, settings: Settings, options: JoinJobOptions) -> DataFrame:
    """machine.data as rows (bucket, key, value, partition, offset); values are decoded later.

    Read in as many tasks as the stateful step has (the session's shuffle partitions), not one
    per Kafka partition: a small batch's read tasks cost their start more than their records,
    and more tasks than cores run in waves, one after another.
    """
    rows = section_records(spark, settings, settings.topics.machine_data, QUERY.section, options)
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    assert partitions is not None  # a setting with a default (200): never unset
    return rows.coalesce(int(partitions))


def joined(spark: SparkSession, settings: Settings, options: JoinJobOptions) -> DataFrame:
    """Output rows of the processor, with the batch metrics observed under `join_metrics`."""
    topics = settings.topics
    processor = ComplementJoinProcessor(
        options.templates or spec_templates(settings),
        OutputTopics(
            topics.machine_out,
            topics.late,
            topics.dead_letter,
            topics.machine_data,
            envelope=settings.ingest.envelope,
        ),
    )
    output = processed(
        bucketed_records(spark, settings, options), processor, OUTPUT_SCHEMA, mode="Append"
    )
    return observed(output, QUERY)


def start_join_query(
    spark: SparkSession, settings: Settings, options: JoinJobOptions
) -> StreamingQuery:
    """Start the join query; its tasks write each micro-batch to Kafka, exactly once."""
    run = options.query_run(
        settings, options.trigger_interval_s or settings.join.trigger_interval_s
    )
    frame = joined(spark, settings, options)
    return start_query(frame, settings, run)
