"""The exactly-once Kafka sink on the real broker: its markers, and the errors a user sees."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from confluent_kafka import Producer
from pyspark.errors import StreamingQueryException

from statestream.cli._queries import failure_reason
from statestream.config import Settings
from statestream.exactly_once.markers import last_committed
from statestream.exactly_once.sink import QueryRun, exactly_once_sink
from statestream.queries.join.job import JoinJobOptions, joined, start_join_query
from statestream.testing import read_committed, read_records
from tests.integration.test_join_job import _narrow_lines, _produce, _topic_settings
from tests.support import granted

pytestmark = pytest.mark.integration


def test_each_partition_commits_its_own_marker(
    spark, local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    settings = _topic_settings(local_services, unique_name, 3)
    _produce(settings, _narrow_lines("time"))  # the three machines of the sample
    options = JoinJobOptions(
        available_now=True,
        query_name=unique_name,
        checkpoint=tmp_path / "checkpoint",
        max_offsets_per_trigger=3000,
    )
    query = start_join_query(spark, settings, options)
    query.awaitTermination()
    last_batch = query.lastProgress["batchId"]
    markers = last_committed(read_committed(settings, settings.topics.commits), unique_name)
    assert set(markers) == {0, 1}  # the tests' two shuffle partitions, both with output
    assert max(markers.values()) <= last_batch
    assert all(batch >= 0 for batch in markers.values())


def _failed_join(spark, settings: Settings, name: str, checkpoint: Path, **client) -> str:
    """Run the join with extra Kafka client options for its writers; its failure, one line."""
    run = QueryRun(name, checkpoint, interval_s=0.5, available_now=True)
    stream = (
        joined(spark, settings, JoinJobOptions())
        .writeStream.queryName(name)
        .option("checkpointLocation", str(checkpoint))
    )
    stream = exactly_once_sink(stream, settings, run)
    for key, value in client.items():
        stream = stream.option(f"kafka.{key}", value)
    query = stream.trigger(availableNow=True).start()
    with contextlib.suppress(StreamingQueryException):
        query.awaitTermination(300)
    failure = query.exception()
    assert failure is not None, "the query should have failed"
    return failure_reason(str(failure))


def test_a_broker_that_refuses_the_transaction_fails_the_batch_with_one_clear_line(
    spark, local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    settings = _topic_settings(local_services, unique_name, 2)
    _produce(settings, _narrow_lines("time", 200))
    reason = _failed_join(
        spark, settings, unique_name, tmp_path, **{"transaction.timeout.ms": "2000000000"}
    )
    assert "\n" not in reason
    assert f"of query {unique_name}." in reason and "partition " in reason
    assert "transaction timeout" in reason.lower()
    uncommitted = read_records(settings, settings.topics.machine_out, isolation="read_uncommitted")
    assert uncommitted == []  # nothing half-written


def test_a_topic_kafka_refuses_fails_the_batch_with_one_clear_line(
    spark, local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    settings = _topic_settings(local_services, unique_name, 2)
    _produce(settings, _narrow_lines("time", 200))
    topics = settings.topics.model_copy(update={"machine_out": "no such topic!"})
    settings = settings.model_copy(update={"topics": topics})
    reason = _failed_join(spark, settings, unique_name, tmp_path)
    assert "\n" not in reason
    assert f"of query {unique_name}." in reason and "partition " in reason
    assert "no such topic!" in reason


def test_a_replay_finds_its_marker_behind_many_other_markers(
    spark, local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    """The writer reads the commits topic backwards a window (20,000 records) at a time: a
    marker farther back than one window must still be found, or the replay writes again."""
    settings = _topic_settings(local_services, unique_name, 2)
    topics = settings.topics.model_copy(update={"commits": f"{unique_name}.commits"})
    settings = granted(settings.model_copy(update={"topics": topics}))
    lines = _narrow_lines("time")
    _produce(settings, lines)
    checkpoint = tmp_path / "checkpoint"
    options = JoinJobOptions(available_now=True, query_name=unique_name, checkpoint=checkpoint)
    first = start_join_query(spark, settings, options)
    first.awaitTermination()
    pairs = len(read_records(settings, settings.topics.machine_out))
    producer = Producer(settings.kafka.client_config())
    for i in range(45_000):  # other queries' markers, after ours
        producer.produce(topics.commits, key=f"other.{i % 50}", value=b'{"batch_id": 0}')
    producer.flush(30)
    last = first.lastProgress["batchId"]
    (checkpoint / "commits" / str(last)).unlink()  # as if killed before Spark's commit
    spark._jvm.io.statestream.kafka.ExactlyOnceKafkaSink.closeProducers()  # as a new JVM
    replay = start_join_query(spark, settings, options)
    replay.awaitTermination()
    assert replay.exception() is None
    assert replay.recentProgress[0]["batchId"] == last  # the batch did run again
    assert len(read_records(settings, settings.topics.machine_out)) == pairs
