"""The Spark side of the sink: the one way statestream starts a query, on the exactly-once sink.

A query's stateful processor returns packed rows (`exactly_once.packed_rows`); `start_query`
writes them through `jvm/exactly-once`'s sink (`io.statestream.kafka.ExactlyOnceKafkaSink`),
whose tasks write their own partition's records in a Kafka transaction per (query lineage,
partition), with a commit marker on the commits topic in the same transaction
(`exactly_once.markers`). The driver plans and commits; it receives a few numbers per task,
never records. Why this is exactly once: `statestream.exactly_once`.

    query = start_query(frame, settings, QueryRun("join", checkpoint, interval_s=0.5))
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

from statestream.config import Settings
from statestream.exactly_once.markers import ensure_commits_topic

SINK_FORMAT = "io.statestream.kafka.ExactlyOnceKafkaSink"


@dataclass(frozen=True)
class QueryRun:
    """How one run of a streaming query is named, checkpointed and triggered.

    `pause_after_commit_s` and `task_fault` are fault injection for tests: the first prints
    "committed batch N to Kafka" once a batch's transactions are committed and waits (a window
    to kill the job between Kafka's commit and Spark's); the second makes one task fail once
    (`TaskFault`), and Spark retries it.
    """

    name: str
    checkpoint: Path
    interval_s: float
    available_now: bool = False
    pause_after_commit_s: float = 0.0
    task_fault: TaskFault | None = None


@dataclass(frozen=True)
class TaskFault:
    """Fault injection for tests: the first task to create `file` fails, inside its open Kafka
    transaction, or just after committing it when `after_commit`."""

    file: Path
    after_commit: bool = False


@dataclass(frozen=True)
class QueryOptions:
    """How one run of a job's query reads and where it keeps its checkpoint.

    The fields every job shares; a job's own options subclass it, give `query_name` its default
    and add their own fields. Unset fields come from the job's section of the settings.
    """

    available_now: bool = False
    max_offsets_per_trigger: int | None = None
    starting_offsets: str = "earliest"
    checkpoint: Path | None = None
    query_name: str = ""
    pause_after_commit_s: float = 0.0  # fault injection for tests: a window to crash in
    task_fault: TaskFault | None = None  # fault injection for tests: a task fails once
    spec: Any = None  # the query's definitions (its engine's spec); None: from its settings

    def query_run(self, settings: Settings, interval_s: float) -> QueryRun:
        """The run these options ask for: checkpoint `query_name` in the checkpoint root unless
        one is given, triggered every `interval_s` unless `available_now`."""
        return QueryRun(
            name=self.query_name,
            checkpoint=self.checkpoint or settings.checkpoint_root / self.query_name,
            interval_s=interval_s,
            available_now=self.available_now,
            pause_after_commit_s=self.pause_after_commit_s,
            task_fault=self.task_fault,
        )


def start_query(frame: DataFrame, settings: Settings, run: QueryRun) -> StreamingQuery:
    """Start `frame`'s packed rows as query `run.name`, written by the exactly-once Kafka sink."""
    stream = frame.writeStream.queryName(run.name).option("checkpointLocation", str(run.checkpoint))
    stream = exactly_once_sink(stream, settings, run)
    if run.available_now:
        stream = stream.trigger(availableNow=True)
    else:
        stream = stream.trigger(processingTime=f"{run.interval_s} seconds")
    return stream.start()


def exactly_once_sink(
    stream: DataStreamWriter, settings: Settings, run: QueryRun
) -> DataStreamWriter:
    """`stream` to the exactly-once Kafka sink (the commits topic is created if missing)."""
    ensure_commits_topic(settings, settings.topics.commits)
    stream = (
        stream.format(SINK_FORMAT)
        .options(**settings.kafka.spark_connection_options("jobs"))
        .option("query", run.name)
        .option("commits.topic", settings.topics.commits)
    )
    if run.pause_after_commit_s:
        stream = stream.option("pause.after.commit.ms", str(round(run.pause_after_commit_s * 1000)))
    if run.task_fault is not None:
        stream = stream.option("fault.fail.once.file", str(run.task_fault.file))
        stream = stream.option("fault.after.commit", str(run.task_fault.after_commit).lower())
    return stream


def packed_count(condition: Column) -> Column:
    """The number of records in the output rows where `condition` holds (0 if none)."""
    return F.coalesce(F.sum(F.when(condition, F.col("count"))), F.lit(0))


def summed(column: str) -> Column:
    """The sum of a figures column over the output rows (0 if none), for a batch's metrics."""
    return F.coalesce(F.sum(column), F.lit(0))
