"""`statestream run join`: the complement join as a Spark Structured Streaming query.

machine.data (Kafka) → parse → group by a bucket of things → `ComplementJoinProcessor`
(transformWithStateInPandas, RocksDB state) → each micro-batch written to machine.out, the late
and the dead-letter topics in one Kafka transaction (`TransactionalKafkaWriter`), exactly once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from statestream.config import Settings
from statestream.jobs.join_processor import OUTPUT_SCHEMA, ComplementJoinProcessor, OutputTopics
from statestream.jobs.record_decoding import decoded_records
from statestream.jobs.status import state_bytes
from statestream.join import SpecTemplate
from statestream.sinks.kafka_exactly_once import TransactionalKafkaWriter, checkpoint_query_id

QUERY_NAME = "join"
METRICS_NAME = "join_metrics"
log = logging.getLogger("statestream.join")


@dataclass(frozen=True)
class JoinJobOptions:
    """How one run of the join query reads and where it keeps its checkpoint.

    Unset fields come from the settings (section `join`): specs, buckets, trigger interval and
    max offsets per trigger.
    """

    available_now: bool = False
    max_offsets_per_trigger: int | None = None
    starting_offsets: str = "earliest"
    checkpoint: Path | None = None
    query_name: str = QUERY_NAME
    templates: Sequence[SpecTemplate] | None = None
    trigger_interval_s: float | None = None
    pause_after_commit_s: float = 0.0  # fault injection for tests: a window to crash in


def spec_templates(settings: Settings) -> list[SpecTemplate]:
    """The join specs of the settings."""
    return [SpecTemplate(**spec.model_dump()) for spec in settings.join.specs]


def parsed_records(spark: SparkSession, settings: Settings, options: JoinJobOptions) -> DataFrame:
    """The source topic as rows (bucket, thing, quantity, t, v, partition, offset, raw).

    Values are decoded as `settings.ingest.envelope` says: plain record JSON, or the event
    envelope as JSON or protobuf (`jobs.record_decoding`).
    """
    reader = (
        spark.readStream.format("kafka")
        .options(**settings.kafka.spark_options())
        .option("subscribe", settings.topics.machine_data)
        .option("startingOffsets", options.starting_offsets)
        .option("kafka.isolation.level", "read_committed")
    )
    max_offsets = options.max_offsets_per_trigger or settings.join.max_offsets_per_trigger
    if max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets))
    parsed = decoded_records(reader.load(), settings.ingest.envelope)  # plain JSON or envelope
    complete = _all_present("r.thing", "r.quantity", "r.phenomenonTime", "r.result")
    bucket = F.when(
        F.col("r.thing").isNotNull(), F.pmod(F.xxhash64("r.thing"), settings.join.buckets)
    )
    return parsed.select(
        bucket.otherwise(F.lit(-1)).cast("int").alias("bucket"),
        F.col("r.thing").alias("thing"),
        F.col("r.quantity").alias("quantity"),
        F.col("r.phenomenonTime").alias("t"),
        F.col("r.result").alias("v"),
        "partition",
        "offset",
        F.when(complete, F.lit(None).cast("string")).otherwise(F.col("raw")).alias("raw"),
    )


def _all_present(*names: str) -> Column:
    condition = F.lit(True)
    for name in names:
        condition = condition & F.col(name).isNotNull()
    return condition


def joined(spark: SparkSession, settings: Settings, options: JoinJobOptions) -> DataFrame:
    """Output rows of the processor, with the batch metrics observed under `join_metrics`."""
    topics = settings.topics
    processor = ComplementJoinProcessor(
        options.templates or spec_templates(settings),
        OutputTopics(topics.machine_out, topics.late, topics.dead_letter, topics.machine_data),
    )
    output = (
        parsed_records(spark, settings, options)
        .groupBy("bucket")
        .transformWithStateInPandas(
            statefulProcessor=processor,
            outputStructType=OUTPUT_SCHEMA,
            outputMode="Append",
            timeMode="None",
        )
    )
    kind = F.col("kind")
    return output.observe(
        METRICS_NAME,
        F.coalesce(F.sum("records"), F.lit(0)).alias("records_in"),
        F.count(F.when(kind == "pair", 1)).alias("pairs_out"),
        F.count(F.when(kind == "late", 1)).alias("late"),
        F.coalesce(F.sum("duplicates"), F.lit(0)).alias("duplicates"),
        F.count(F.when(kind == "malformed", 1)).alias("malformed"),
        F.coalesce(F.sum("state_records"), F.lit(0)).alias("state_records"),
        F.max("max_event_time").alias("max_event_time_ms"),
    )


def start_join_query(
    spark: SparkSession, settings: Settings, options: JoinJobOptions
) -> StreamingQuery:
    """Start the join query; each micro-batch goes to Kafka in one transaction."""
    checkpoint = options.checkpoint or settings.checkpoint_root / options.query_name
    writers: list[TransactionalKafkaWriter] = []

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        if not writers:  # Spark has written the checkpoint's metadata by the first batch
            lineage = f"{options.query_name}.{checkpoint_query_id(checkpoint)}"
            writers.append(TransactionalKafkaWriter(settings, lineage))
        writer = writers[0]
        table = batch.toArrow()  # one action: the stateful step runs once per batch
        kinds = table.column("kind").to_pylist()
        topics = table.column("topic").to_pylist()
        keys = table.column("key").to_pylist()
        values = table.column("value").to_pylist()
        records = (
            (topic, key.encode() if key is not None else None, value.encode())
            for kind, topic, key, value in zip(kinds, topics, keys, values, strict=True)
            if kind != "stats"
        )
        if not writer.write_batch(batch_id, records):
            log.warning(
                "batch %d of %s was committed before; skipped", batch_id, options.query_name
            )
        elif options.pause_after_commit_s:
            print(f"committed batch {batch_id} to Kafka", flush=True)
            time.sleep(options.pause_after_commit_s)

    stream = (
        joined(spark, settings, options)
        .writeStream.queryName(options.query_name)
        .option("checkpointLocation", str(checkpoint))
        .foreachBatch(write_batch)
    )
    if options.available_now:
        stream = stream.trigger(availableNow=True)
    else:
        interval = options.trigger_interval_s or settings.join.trigger_interval_s
        stream = stream.trigger(processingTime=f"{interval} seconds")
    return stream.start()


def batch_metrics(progress: dict) -> dict[str, float | int | None]:
    """The figures of one batch of the join query, from its progress report.

    Records in, pairs out, late, duplicates, malformed, state rows and bytes, batch duration and
    event-time lag (batch time minus the latest pair's event time).
    """
    observed = (progress.get("observedMetrics") or {}).get(METRICS_NAME) or {}
    if hasattr(observed, "asDict"):  # observed metrics arrive as a Row
        observed = observed.asDict()
    state = (progress.get("stateOperators") or [{}])[0]
    batch_ms = _epoch_ms(progress.get("timestamp"))
    latest_event = observed.get("max_event_time_ms")
    lag = (batch_ms - latest_event) / 1000.0 if batch_ms and latest_event else None
    return {
        "batch": progress.get("batchId"),
        "records_in": observed.get("records_in", progress.get("numInputRows", 0)),
        "pairs_out": observed.get("pairs_out", 0),
        "late": observed.get("late", 0),
        "duplicates": observed.get("duplicates", 0),
        "malformed": observed.get("malformed", 0),
        "state_records": observed.get("state_records", 0),
        "state_rows": state.get("numRowsTotal"),
        "state_bytes": state_bytes(state) if state else None,
        "duration_s": (progress.get("durationMs") or {}).get("triggerExecution", 0) / 1000.0,
        "event_time_lag_s": lag,
    }


def _epoch_ms(timestamp: str | None) -> float | None:
    if not timestamp:
        return None
    from datetime import datetime

    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000.0
