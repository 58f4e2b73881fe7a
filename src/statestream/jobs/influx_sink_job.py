"""`statestream run sink-influx`: the raw, joined, statistics and alert topics into InfluxDB.

One Spark Structured Streaming query reads the four topics (`read_committed`, so only committed
transactions of the exactly-once jobs) and writes each micro-batch in `foreachBatch`:

- each record becomes points of its stream's measurement (`statestream.sinks.line_protocol`);
  within a batch the last record of a point wins (a refined window replaces the earlier one);
- the points go to InfluxDB through `InfluxWriter`, which returns only once all are written: while
  InfluxDB is down the batch waits (retrying with backoff, logging a warning), so the query never
  commits a batch whose points are not in InfluxDB;
- a point is identified by measurement, tags and time, so a batch Spark replays after a crash
  overwrites its own points and doubles nothing;
- records that cannot be points (bad JSON, a missing or non-numeric field) and points InfluxDB
  refuses go to the dead-letter topic with the reason, in one Kafka transaction per batch
  (`TransactionalKafkaWriter`, so a replay does not repeat them), and are counted.
"""

from __future__ import annotations

import gc
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from requests.exceptions import RequestException

from statestream.config import Settings
from statestream.errors import ServiceError
from statestream.sinks.influx import Backoff, InfluxWriter
from statestream.sinks.kafka_exactly_once import TransactionalKafkaWriter, checkpoint_query_id
from statestream.sinks.line_protocol import BadRecord, Point, PointBuilder

QUERY_NAME = "sink_influx"
log = logging.getLogger("statestream.sink.influx")


@dataclass(frozen=True)
class SinkBatchReport:
    """The figures of one micro-batch of the sink."""

    batch_id: int
    records: int
    points: int
    bad_records: int
    refused_points: int
    retries: int
    waited_s: float
    seconds: float
    read_s: float = 0.0  # Kafka read and collect (Arrow)
    convert_s: float = 0.0  # records → points
    write_s: float = 0.0  # InfluxDB requests, waits included

    @property
    def points_per_s(self) -> float:
        return self.points / self.seconds if self.seconds else 0.0

    def line(self) -> str:
        waited = f", waited {self.waited_s:.1f} s for InfluxDB" if self.retries else ""
        return (
            f"batch {self.batch_id}: {self.records:,} records → {self.points:,} points, "
            f"dead-lettered {self.bad_records:,} bad records + {self.refused_points:,} refused "
            f"points, {self.seconds:.2f} s, {self.points_per_s:,.0f} points/s{waited}"
        )


@dataclass(frozen=True)
class InfluxSinkOptions:
    """How one run of the sink reads and where it writes; unset fields come from the settings.

    `stop_waiting` set makes a batch that waits for InfluxDB give up (the query then fails
    without committing it): the CLI sets it on Ctrl-C.
    """

    available_now: bool = False
    starting_offsets: str = "earliest"
    checkpoint: Path | None = None
    query_name: str = QUERY_NAME
    database: str | None = None
    max_offsets_per_trigger: int | None = None
    on_batch: Callable[[SinkBatchReport], None] | None = None
    stop_waiting: threading.Event = field(default_factory=threading.Event)


def sink_streams(settings: Settings) -> dict[str, str]:
    """The topics the sink reads and the measurement each one's records become."""
    topics = settings.topics
    return {
        topics.machine_data: "machine_data",
        topics.machine_out: "machine_out",
        topics.stats: "machine_stats",
        topics.alerts: "machine_alerts",
    }


def kafka_records(spark: SparkSession, settings: Settings, options: InfluxSinkOptions) -> DataFrame:
    """The four topics as rows (topic, partition, offset, value as text), committed data only."""
    reader = (
        spark.readStream.format("kafka")
        .options(**settings.kafka.spark_options())
        .option("subscribe", ",".join(sink_streams(settings)))
        .option("startingOffsets", options.starting_offsets)
        .option("kafka.isolation.level", "read_committed")
    )
    max_offsets = options.max_offsets_per_trigger or settings.influx_sink.max_offsets_per_trigger
    if max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets))
    return reader.load().select(
        "topic", "partition", "offset", F.col("value").cast("string").alias("value")
    )


class InfluxSinkBatches:
    """The `foreachBatch` function of the sink: one call writes one micro-batch (see module)."""

    def __init__(self, settings: Settings, options: InfluxSinkOptions, checkpoint: Path) -> None:
        sink = settings.influx_sink
        self.settings = settings
        self.options = options
        self.checkpoint = checkpoint
        self.measurements: Mapping[str, str] = sink_streams(settings)
        self.builder = PointBuilder()
        self.writer = InfluxWriter(
            settings.influx,
            database=options.database,
            points_per_request=sink.points_per_request,
            backoff=Backoff(sink.retry_initial_s, sink.retry_max_s),
            timeout_s=sink.request_timeout_s,
            cancelled=options.stop_waiting,
        )
        self._dead_letters: TransactionalKafkaWriter | None = None

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        started = time.perf_counter()
        table = batch.toArrow()  # the one Spark action of the batch
        topics, partitions, offsets, values = (table.column(i).to_pylist() for i in range(4))
        read = time.perf_counter()
        points, origins, bad = self._points(topics, values)
        converted = time.perf_counter()
        outcome = self.writer.write(points, label=f"batch {batch_id}")
        written = time.perf_counter()
        dead = bad + [(origins[index], reason) for index, reason in outcome.rejected]
        if dead:
            self._dead_letter(batch_id, dead, topics, partitions, offsets, values)
        report = SinkBatchReport(
            batch_id=batch_id,
            records=len(values),
            points=outcome.written,
            bad_records=len(bad),
            refused_points=len(outcome.rejected),
            retries=outcome.retries,
            waited_s=outcome.waited_s,
            seconds=time.perf_counter() - started,
            read_s=read - started,
            convert_s=converted - read,
            write_s=written - converted,
        )
        log.info("%s", report.line())
        if self.options.on_batch is not None:
            self.options.on_batch(report)

    def _points(
        self, topics: list[str], values: list[str | None]
    ) -> tuple[list[Point], list[int], list[tuple[int, str]]]:
        """The points (the last wins per series and time), the row of each, the bad rows."""
        latest: dict[tuple[str, int | float], tuple[Point, int]] = {}
        bad: list[tuple[int, str]] = []
        points_of, measurements = self.builder.points, self.measurements
        with _garbage_collector_paused():
            for row, (topic, value) in enumerate(zip(topics, values, strict=True)):
                try:
                    for point in points_of(measurements[topic], value):
                        latest[point.key] = (point, row)
                except BadRecord as exc:
                    bad.append((row, str(exc)))
        points = [point for point, _ in latest.values()]
        origins = [row for _, row in latest.values()]
        return points, origins, bad

    def _dead_letter(
        self,
        batch_id: int,
        dead: list[tuple[int, str]],
        topics: list[str],
        partitions: list[int],
        offsets: list[int],
        values: list[str | None],
    ) -> None:
        """The bad records of a batch to the dead-letter topic, once per batch (one transaction)."""
        if self._dead_letters is None:
            lineage = f"{self.options.query_name}.{checkpoint_query_id(self.checkpoint)}"
            self._dead_letters = TransactionalKafkaWriter(self.settings, lineage)
        topic = self.settings.topics.dead_letter
        records = []
        for row, reason in sorted(dict(dead).items()):  # one entry per record
            value = {
                "reason": reason,
                "raw": values[row],
                "source_topic": topics[row],
                "partition": partitions[row],
                "offset": offsets[row],
                "query": self.options.query_name,
            }
            records.append((topic, None, json.dumps(value).encode()))
        if not self._dead_letters.write_batch(batch_id, records):
            log.warning("dead letters of batch %d were committed before; skipped", batch_id)


@contextmanager
def _garbage_collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while a batch's objects are built (they hold no cycles).

    Collections triggered by a million new objects took about half of the conversion time.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def start_influx_sink_query(
    spark: SparkSession, settings: Settings, options: InfluxSinkOptions
) -> StreamingQuery:
    """Start the sink query (its own name and checkpoint); raises if a topic is missing."""
    check_sink_topics(settings)
    checkpoint = options.checkpoint or settings.checkpoint_root / options.query_name
    batches = InfluxSinkBatches(settings, options, checkpoint)
    try:
        batches.writer.ensure_database()
    except RequestException as exc:  # InfluxDB down: the first batch waits for it
        log.warning("InfluxDB %s unavailable (%s)", settings.influx.url, type(exc).__name__)
    stream = (
        kafka_records(spark, settings, options)
        .writeStream.queryName(options.query_name)
        .option("checkpointLocation", str(checkpoint))
        .foreachBatch(batches)
    )
    if options.available_now:
        stream = stream.trigger(availableNow=True)
    else:
        interval = settings.influx_sink.trigger_interval_s
        stream = stream.trigger(processingTime=f"{interval} seconds")
    return stream.start()


def check_sink_topics(settings: Settings) -> None:
    """Raise `ServiceError` naming the sink's topics Kafka lacks, or when Kafka is silent."""
    topics = list(sink_streams(settings))
    try:
        existing = AdminClient(settings.kafka.client_config()).list_topics(timeout=30).topics
    except KafkaException as exc:
        raise ServiceError(
            f"Kafka {settings.kafka.bootstrap_servers} does not answer: {exc.args[0].str()}"
        ) from None
    missing = [topic for topic in topics if topic not in existing]
    if missing:
        raise ServiceError(
            f"topic(s) {', '.join(missing)} missing on {settings.kafka.bootstrap_servers}: "
            "run `statestream topics create`"
        )
