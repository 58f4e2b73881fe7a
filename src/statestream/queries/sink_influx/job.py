"""`statestream run sink-influx`: the raw, joined, statistics, alert and cell topics into InfluxDB.

One Spark Structured Streaming query reads its topics (`read_committed`, so only committed
transactions of the exactly-once jobs); its tasks write their own partition of each micro-batch
(`InfluxPartitionWriter`, through `mapInPandas`), and the driver only plans and commits:

- each record becomes points of its stream's measurement (`statestream.sinks.line_protocol`);
  within a task the last record of a point wins (a refined window replaces the earlier one; the
  records of one series share a Kafka partition, so one task);
- the points go to InfluxDB through `InfluxWriter`, which returns only once all are written: while
  InfluxDB is down the task waits (retrying with backoff, logging a warning), so the query never
  commits a batch whose points are not in InfluxDB;
- a point is identified by measurement, tags and time, so a batch Spark replays after a crash, or
  a task it retries, overwrites its own points and doubles nothing;
- records that cannot be points (bad JSON, a missing or non-numeric field) and points InfluxDB
  refuses go to the dead-letter topic with the reason, through the exactly-once Kafka sink the
  join uses (`exactly_once.sink`), and are counted in the batch's metrics (`SinkBatchReport`).
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import pandas as pd
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from pyspark import TaskContext
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from requests.exceptions import RequestException

from statestream.codecs.bad_input import dead_letter, to_json
from statestream.config import Settings
from statestream.errors import ServiceError
from statestream.exactly_once.packed_rows import OutputRows, output_schema
from statestream.exactly_once.sink import QueryOptions, packed_count, start_query, summed
from statestream.jobs.kafka_input import committed_stream, read_limits
from statestream.queries import REGISTRY
from statestream.queries.sink_influx import QUERY
from statestream.sinks.influx import Backoff, InfluxWriter
from statestream.sinks.line_protocol import BadRecord, Point, PointBuilder, PointShape

QUERY_NAME = QUERY.name
METRICS_NAME = QUERY.metrics_name
FIGURE_COLUMNS = (
    "records long, points long, bad_records long, refused_points long, retries long, "
    "waited_s double, convert_s double, write_s double"
)
OUTPUT_SCHEMA = output_schema(FIGURE_COLUMNS)
log = logging.getLogger("statestream.sink.influx")


@dataclass(frozen=True)
class SinkBatchReport:
    """The figures of one micro-batch of the sink, added up over its tasks."""

    batch_id: int
    records: int
    points: int
    bad_records: int
    refused_points: int
    retries: int
    waited_s: float  # the longest a task waited for InfluxDB
    seconds: float  # the batch, planning and commit included
    convert_s: float = 0.0  # records → points, summed over the tasks
    write_s: float = 0.0  # InfluxDB requests, waits included, summed over the tasks

    @classmethod
    def of(cls, progress: dict) -> SinkBatchReport:
        """The report of the batch whose progress (as a dict) is `progress`."""
        figures = (progress.get("observedMetrics") or {}).get(METRICS_NAME) or {}
        if hasattr(figures, "asDict"):  # observed metrics arrive as a Row
            figures = figures.asDict()
        return cls(
            batch_id=int(progress["batchId"]),
            records=int(figures.get("records", 0)),
            points=int(figures.get("points", 0)),
            bad_records=int(figures.get("bad_records", 0)),
            refused_points=int(figures.get("refused_points", 0)),
            retries=int(figures.get("retries", 0)),
            waited_s=float(figures.get("waited_s") or 0.0),
            seconds=progress["durationMs"].get("triggerExecution", 0) / 1000,
            convert_s=float(figures.get("convert_s") or 0.0),
            write_s=float(figures.get("write_s") or 0.0),
        )

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


class SinkTotals:
    """Each batch's line, and the figures added up for the summary."""

    def __init__(self) -> None:
        self.batches = self.records = self.points = self.bad = 0

    def line(self, progress: dict) -> str:
        report = SinkBatchReport.of(progress)
        self.batches += 1
        self.records += report.records
        self.points += report.points
        self.bad += report.bad_records + report.refused_points
        return report.line()

    def summary(self) -> str:
        return (
            f"query sink_influx stopped: {self.batches:,} batches, {self.records:,} records, "
            f"{self.points:,} points written, {self.bad:,} dead-lettered"
        )


@dataclass(frozen=True)
class InfluxSinkOptions(QueryOptions):
    """How one run of the sink reads and where it writes; unset fields come from the settings."""

    query_name: str = QUERY_NAME
    database: str | None = None


def sink_streams(settings: Settings) -> dict[str, str]:
    """The topics the sink reads and the measurement each one's records become: the built-in
    ones, then each registered query's declared points (`QueryDef.influx`)."""
    topics = settings.topics
    return {
        topics.machine_data: "machine_data",
        topics.machine_out: "machine_out",
        topics.stats: "machine_stats",
        topics.alerts: "machine_alerts",
        topics.vehicle_cells: "vehicle_cells",
        **{getattr(topics, shape.topic): shape.measurement for shape in declared_points()},
    }


def declared_points() -> tuple[PointShape, ...]:
    """The points the registered queries declare for their output topics."""
    return tuple(shape for query in REGISTRY for shape in query.influx)


def kafka_records(spark: SparkSession, settings: Settings, options: InfluxSinkOptions) -> DataFrame:
    """The sink's topics as rows (topic, partition, offset, value), committed data only.

    The value stays binary: a value that is no UTF-8 would fail the conversion of a text column
    to pandas and with it the task, every retry of it; as bytes it becomes a dead letter."""
    limits = read_limits(settings, QUERY.section, options)
    rows = committed_stream(spark, settings, ",".join(sink_streams(settings)), **limits)
    return rows.select("topic", "partition", "offset", "value")


class InfluxPartitionWriter:
    """The `mapInPandas` function of the sink: one task writes its partition (see module).

    It yields its dead letters packed (`exactly_once.packed_rows`) and one row of figures.
    """

    def __init__(self, settings: Settings, database: str | None) -> None:
        self.influx = settings.influx
        self.sink = settings.influx_sink
        self.database = database
        self.dead_letter_topic = settings.topics.dead_letter
        self.measurements: Mapping[str, str] = sink_streams(settings)

    def __call__(self, frames: Iterable[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        parts = list(frames)
        if not parts:
            return
        frame = pd.concat(parts, ignore_index=True)
        topics, values = frame["topic"].tolist(), frame["value"].tolist()
        started = time.perf_counter()
        points, origins, bad = self._points(topics, values)
        converted = time.perf_counter()
        writer = self._writer()
        try:
            outcome = writer.write(points, label=_task_label())
        finally:
            writer.close()
        dead = bad + [(origins[index], reason) for index, reason in outcome.rejected]
        rows = OutputRows()
        for row, reason in sorted(dict(dead).items()):  # one entry per record
            rows.add("malformed", self.dead_letter_topic, None, _dead_letter(frame, row, reason))
        figures = {
            "records": len(frame),
            "points": outcome.written,
            "bad_records": len(bad),
            "refused_points": len(outcome.rejected),
            "retries": outcome.retries,
            "waited_s": outcome.waited_s,
            "convert_s": converted - started,
            "write_s": time.perf_counter() - converted,
        }
        yield rows.frame(figures, FIGURE_COLUMNS)

    def _writer(self) -> InfluxWriter:
        return InfluxWriter(
            self.influx,
            database=self.database,
            points_per_request=self.sink.points_per_request,
            backoff=Backoff(self.sink.retry_initial_s, self.sink.retry_max_s),
            timeout_s=self.sink.request_timeout_s,
        )

    def _points(
        self, topics: list[str], values: list[bytes | None]
    ) -> tuple[list[Point], list[int], list[tuple[int, str]]]:
        """The points (the last wins per series and time), the row of each, the bad rows."""
        latest: dict[tuple[str, int | float], tuple[Point, int]] = {}
        bad: list[tuple[int, str]] = []
        points_of, measurements = PointBuilder(declared_points()).points, self.measurements
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


def _dead_letter(frame: pd.DataFrame, row: int, reason: str) -> str:
    """The dead letter (`statestream.codecs.bad_input`) of the sink's input row `row`."""
    value = frame["value"].iat[row]
    record = dead_letter(
        QUERY.dead_letter_stage,
        reason,
        None if pd.isna(value) else value,
        source_topic=frame["topic"].iat[row],
        partition=int(frame["partition"].iat[row]),
        offset=int(frame["offset"].iat[row]),
    )
    return to_json(record)


def _task_label() -> str:
    """ "partition P of batch B", as the task's log lines name what waits for InfluxDB."""
    context = TaskContext.get()
    if context is None:
        return "write"
    batch = context.getLocalProperty("streaming.sql.batchId")
    return f"partition {context.partitionId()} of batch {batch}"


@contextmanager
def _garbage_collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while a batch's objects are built (they hold no cycles).

    Collections triggered by the many new objects took a large part of the conversion time.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def sink_output(spark: SparkSession, settings: Settings, options: InfluxSinkOptions) -> DataFrame:
    """The tasks' dead letters and figures, with the batch metrics observed under `sink_metrics`."""
    writer = InfluxPartitionWriter(settings, options.database)
    output = kafka_records(spark, settings, options).mapInPandas(writer, OUTPUT_SCHEMA)
    sums = ("records", "points", "bad_records", "refused_points", "retries", "convert_s", "write_s")
    return output.observe(
        METRICS_NAME,
        *(summed(name).alias(name) for name in sums),
        F.coalesce(F.max("waited_s"), F.lit(0.0)).alias("waited_s"),
        packed_count(F.col("kind") == "malformed").alias("dead_letters"),
    )


def start_influx_sink_query(
    spark: SparkSession, settings: Settings, options: InfluxSinkOptions
) -> StreamingQuery:
    """Start the sink query (its own name and checkpoint); raises if a topic is missing."""
    check_sink_topics(settings)
    writer = InfluxWriter(settings.influx, database=options.database)
    try:
        writer.ensure_database()
    except RequestException as exc:  # InfluxDB down: the first batch's tasks wait for it
        log.warning("InfluxDB %s unavailable (%s)", settings.influx.url, type(exc).__name__)
    finally:
        writer.close()
    run = options.query_run(settings, settings.influx_sink.trigger_interval_s)
    frame = sink_output(spark, settings, options)
    return start_query(frame, settings, run)


def check_options(settings: Settings, options: InfluxSinkOptions) -> None:
    """Before Spark starts: a topic missing, or Kafka silent, is one line (`check_sink_topics`)."""
    del options
    check_sink_topics(settings)


def check_sink_topics(settings: Settings) -> None:
    """Raise `ServiceError` naming the sink's topics Kafka lacks, or when Kafka is silent."""
    topics = list(sink_streams(settings))
    try:
        existing = AdminClient(settings.kafka.client_config("jobs")).list_topics(timeout=30).topics
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
