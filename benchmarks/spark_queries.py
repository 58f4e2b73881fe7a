"""What the pipeline bench's parts ask of their Spark queries: the first batch, bytes per batch."""

from __future__ import annotations

import time

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery


class ResultSizes:
    """Bytes each batch's tasks returned to the driver: Spark's own task metric resultSize,
    added up per query and batch by a listener of `jvm/exactly-once` (`ResultSizeListener`)."""

    @staticmethod
    def install(spark: SparkSession) -> None:
        spark._jvm.io.statestream.kafka.ResultSizeListener.install(spark.sparkContext._jsc.sc())

    @staticmethod
    def of(spark: SparkSession, query_id: str, batches: int) -> list[int]:
        spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()  # task-end events delivered
        listener = spark._jvm.io.statestream.kafka.ResultSizeListener
        return [int(listener.bytes(str(query_id), batch)) for batch in range(batches)]


def wait_for_first_batch(query: StreamingQuery, timeout_s: float = 120.0) -> None:
    """Wait until `query` has reported a batch; an error if it failed or took too long."""
    deadline = time.monotonic() + timeout_s
    while not query.recentProgress:
        if query.exception() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the query {query.name} did not start: {query.exception()}")
        time.sleep(0.1)


def rate_after_first_batch(progress: list[dict]) -> int | None:
    """Records/s of the batches after the first (which carries the query's start-up), from a
    query's progress reports; None for a run of one batch.

    >>> rate_after_first_batch([
    ...     {"numInputRows": 9, "durationMs": {"triggerExecution": 5000}},
    ...     {"numInputRows": 500, "durationMs": {"triggerExecution": 250}},
    ...     {"numInputRows": 300, "durationMs": {"triggerExecution": 150}},
    ... ])
    2000
    """
    later = progress[1:]
    seconds = sum(p["durationMs"]["triggerExecution"] for p in later) / 1000
    return round(sum(p["numInputRows"] for p in later) / seconds) if seconds else None


def input_rows(query: StreamingQuery) -> int:
    """Records the query has read so far (over its recent progress reports)."""
    return sum(p["numInputRows"] for p in query.recentProgress)
