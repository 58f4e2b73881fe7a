"""The one line a failed query leaves (the statestream error inside Spark's long description),
and how Ctrl-C stops the queries."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from statestream.cli._queries import Watched, failure_reason, ran_a_batch, run_watched, watch

SPARK_FAILURE = """[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: Job \
aborted due to stage failure: Task 1 in stage 15.0 failed 4 times, most recent failure: Lost \
task 1.3 (TID 41) (localhost executor driver): io.statestream.kafka.WriteFailed: Kafka \
transaction of batch 0, partition 1 of query join.1 failed: writing to topic out!: Invalid topic
\tat io.statestream.kafka.TransactionalPartition.failed(TransactionalPartition.java:163)
"""


def test_the_sinks_error_is_the_line() -> None:
    assert failure_reason(SPARK_FAILURE) == (
        "Kafka transaction of batch 0, partition 1 of query join.1 failed: "
        "writing to topic out!: Invalid topic"
    )


def test_a_python_error_of_statestream_is_the_line() -> None:
    text = "Traceback …\nstatestream.errors.ServiceError: InfluxDB refused the credentials\n"
    assert failure_reason(text) == "InfluxDB refused the credentials"


def test_without_one_the_first_line_is() -> None:
    assert failure_reason("something else\nmore") == "something else"


def test_the_progress_of_a_query_waiting_for_data_is_no_batch() -> None:
    """Spark's idle report carries the id of the batch to come (seen with PySpark 4.1.3):
    taken for that batch, it hid the batch's own line once it ran."""
    ran = {"batchId": 1, "durationMs": {"addBatch": 40, "latestOffset": 2, "triggerExecution": 60}}
    idle = {"batchId": 2, "durationMs": {"latestOffset": 1, "triggerExecution": 1}}
    assert ran_a_batch(ran)
    assert not ran_a_batch(idle)


class _StoppedQuery:
    """A query that has already stopped, with no batches."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.isActive = False
        self.recentProgress: list[dict] = []

    def exception(self) -> None:
        return None


class _Session:
    stopped = False

    def stop(self) -> None:
        self.stopped = True


def test_run_watched_names_the_queries_and_stops_the_session(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    session = _Session()
    monkeypatch.setattr(
        "statestream.jobs.session.spark_session", lambda settings, app_name: session
    )
    settings = None  # the fake session needs none
    run_watched(settings, "app", lambda spark: [Watched(_StoppedQuery("join"))])  # type: ignore[arg-type]
    two = [Watched(_StoppedQuery("geo")), Watched(_StoppedQuery("bunching"))]
    run_watched(settings, "app", lambda spark: two)  # type: ignore[arg-type]
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "query join started; Ctrl-C stops it"
    assert "queries geo, bunching started; Ctrl-C stops them" in lines
    assert session.stopped


class _RunningQuery(_StoppedQuery):
    """A query that runs until it is stopped."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.isActive = True
        self.status = {"isTriggerActive": False}
        self.lastProgress = None

    def stop(self) -> None:
        self.isActive = False


def test_ctrl_c_stops_every_query_without_pysparks_handler(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Ctrl-C while `watch` waits stops each query, and not through the SIGINT handler that was
    set (PySpark's cancels all jobs, failing each running batch, then raises KeyboardInterrupt
    in the middle of a call to the JVM); afterwards that handler is back."""
    cancelled: list[int] = []

    def like_pysparks(signum: int, frame: object) -> None:
        cancelled.append(signum)
        raise KeyboardInterrupt

    queries = [_RunningQuery("join"), _RunningQuery("stats")]
    before = signal.signal(signal.SIGINT, like_pysparks)
    try:
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
        watch([Watched(query) for query in queries])  # type: ignore[arg-type]
        assert cancelled == []
        assert signal.getsignal(signal.SIGINT) is like_pysparks
    finally:
        signal.signal(signal.SIGINT, before)
    assert not any(query.isActive for query in queries)
    assert capsys.readouterr().out.splitlines() == [
        "stopping … (each query after its running batch; Ctrl-C again: at once)",
        "query join stopped",
        "query stats stopped",
    ]


def _slow_batches(marker: str):
    """A function of each task's frames that marks, then sleeps 1.5 s, frame by frame."""

    def batches(frames):
        for frame in frames:
            Path(marker).touch()
            time.sleep(1.5)
            yield frame

    return batches


def _started_slow_query(spark: SparkSession, folder: Path):
    """A query of a rate source whose every batch takes ~1.5 s in its task."""
    return (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 20)
        .option("numPartitions", 1)
        .load()
        .mapInPandas(_slow_batches(str(folder / "in-a-task")), "timestamp timestamp, value long")
        .writeStream.format("noop")
        .option("checkpointLocation", str(folder / "checkpoint"))
        .trigger(processingTime="100 milliseconds")
        .start()
    )


def _last_batch(query) -> int:
    progress = query.lastProgress
    return -1 if progress is None else progress["batchId"]


def _inside_a_batch(query, folder: Path) -> int:
    """Wait until a batch's task is in its sleep; the last batch done before it."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if (folder / "in-a-task").exists():
            return _last_batch(query)
        time.sleep(0.02)
    raise AssertionError("no batch ran")


@pytest.mark.parametrize("wait_s", [10.0, 0.0])
def test_a_stop_waits_for_the_running_batch(
    spark: SparkSession, tmp_path: Path, wait_s: float
) -> None:
    """With a wait, the batch whose task runs at the stop ends and is recorded; without one,
    Spark's stop cancels it (the next start would do it again)."""
    query = _started_slow_query(spark, tmp_path)
    try:
        done_before = _inside_a_batch(query, tmp_path)
        Watched(query).stop(wait_s=wait_s)
    finally:
        query.stop()
    assert not query.isActive
    assert query.exception() is None
    assert _last_batch(query) == (done_before + 1 if wait_s else done_before)
