"""What `statestream status` reads of a query run: written by the listener in Spark's JVM
(`QueryProgressFiles`) and the lifecycle callbacks in Python, on the tests' real session; and a
query's Kafka lag, on the real Kafka."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from statestream.config import Settings
from statestream.jobs.lag import QueryLag
from statestream.jobs.status import (
    FAILED,
    STOPPED,
    QueryStatus,
    progress_after,
    read_statuses,
    status_folder,
    statuses_and_lags,
)
from tests.support import run_cli


def _finished(settings: Settings, name: str, timeout_s: float = 20.0) -> QueryStatus:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:  # the listener hears of the end asynchronously
        runs = read_statuses(status_folder(settings), include_finished=True)
        done = [s for s in runs if s.name == name and s.state in (STOPPED, FAILED)]
        if done:
            return done[0]
        time.sleep(0.2)
    raise AssertionError(f"no finished status of {name}")


def _numbers(spark: SparkSession, folder: Path, rows: int) -> DataFrame:
    """A stream of the numbers below `rows` in three files, a file a batch, observed as `m`."""
    folder.mkdir()
    for part in range(3):
        lines = [f'{{"n": {i}}}' for i in range(part, rows, 3)]
        (folder / f"part-{part}.json").write_text("\n".join(lines) + "\n")
    return (
        spark.readStream.schema("n long")
        .option("maxFilesPerTrigger", 1)
        .json(str(folder))
        .observe("m", F.count(F.lit(1)).alias("rows_in"), F.max("n").alias("max_n"))
    )


def test_a_runs_totals_add_its_batches(
    spark: SparkSession, settings: Settings, unique_name: str, tmp_path: Path
) -> None:
    query = (
        _numbers(spark, tmp_path / "in", 30)
        .writeStream.queryName(unique_name)
        .format("noop")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    reports = progress_after(query, -1)
    assert [r["batchId"] for r in reports] == [0, 1, 2]
    assert progress_after(query, 1) == reports[2:]
    status = _finished(settings, unique_name)
    assert status.state == STOPPED and status.error is None
    assert status.batch == 2
    assert status.totals == {"input_rows": 30, "rows_in": 30}  # max_n is no counter
    assert status.metrics == reports[-1]["observedMetrics"]["m"]  # the last batch's: no sums


def test_a_failed_run_says_why(
    spark: SparkSession, settings: Settings, unique_name: str, tmp_path: Path
) -> None:
    def fail(batch: DataFrame, batch_id: int) -> None:
        raise ValueError(f"batch {batch_id} refused by the test")

    query = (
        _numbers(spark, tmp_path / "in", 3)
        .writeStream.queryName(unique_name)
        .foreachBatch(fail)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    with pytest.raises(Exception, match="refused by the test"):
        query.awaitTermination(120)
    status = _finished(settings, unique_name)
    assert status.state == FAILED
    assert status.error is not None and "\n" not in status.error


BACKLOG, PER_BATCH = 200, 50


def _backlog(settings: Settings, topic: str) -> None:
    """`topic` with two partitions holding BACKLOG records, half in each."""
    admin = AdminClient(settings.kafka.client_config())
    for future in admin.create_topics([NewTopic(topic, 2, 1)]).values():
        future.result()
    producer = Producer(settings.kafka.client_config())
    for i in range(BACKLOG):
        producer.produce(topic, value=b"x", partition=i % 2)
    assert producer.flush(30) == 0


def _lag_of(settings: Settings, name: str) -> tuple[QueryStatus, QueryLag | None] | None:
    found = [(s, lag) for s, lag in statuses_and_lags(settings, True) if s.name == name]
    return found[0] if found else None


@pytest.mark.integration
def test_a_querys_kafka_lag_is_its_backlog_until_it_has_read_it(
    spark: SparkSession, local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    """A query reading a backlog PER_BATCH records a batch, held after its first batch: its lag is
    what it has not committed (status and `statestream status --json` say so); once it has read
    everything, 0."""
    settings, topic = local_services, f"{unique_name}.in"
    _backlog(settings, topic)
    held = threading.Event()

    def hold_after_the_first(batch: DataFrame, batch_id: int) -> None:
        if batch_id > 0:
            held.wait(120)

    query = (
        spark.readStream.format("kafka")
        .options(**settings.kafka.spark_options("admin"))
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", PER_BATCH)
        .option("kafka.isolation.level", "read_committed")
        .load()
        .writeStream.queryName(unique_name)
        .foreachBatch(hold_after_the_first)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    try:
        deadline = time.monotonic() + 60
        while (found := _lag_of(settings, unique_name)) is None or found[1] is None:
            assert time.monotonic() < deadline, "no lag reported after the first batch"
            time.sleep(0.2)
        status, lag = found
        read = sum(status.offsets[topic].values())
        assert 0 < read < BACKLOG
        assert lag.total == BACKLOG - read and set(lag.topics[topic]) == {0, 1}
        listed = run_cli("status", "--json", timeout_s=120)
        assert listed.exit_code == 0, listed.stderr
        records = [json.loads(text) for text in _json_objects(listed.stdout)]
        [mine] = [r for r in records if r["name"] == unique_name]
        assert mine["lag"]["total"] == BACKLOG - read
        assert set(mine["lag"]["topics"][topic]) == {"0", "1"}
        held.set()
        query.processAllAvailable()
        deadline = time.monotonic() + 60
        while (found := _lag_of(settings, unique_name)) is None or found[1] != QueryLag(
            {topic: {0: 0, 1: 0}}
        ):
            assert time.monotonic() < deadline, f"lag after reading everything: {found}"
            time.sleep(0.2)
    finally:
        held.set()
        query.stop()
        AdminClient(settings.kafka.client_config()).delete_topics([topic])


def _json_objects(text: str) -> list[str]:
    """The JSON objects `status --json` prints one after another (each over several lines)."""
    decoder, objects, at = json.JSONDecoder(), [], 0
    while (at := _skip_space(text, at)) < len(text):
        value, at = decoder.raw_decode(text, at)
        objects.append(json.dumps(value))
    return objects


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at
