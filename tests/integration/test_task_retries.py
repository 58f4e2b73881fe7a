"""Tasks write their own output: a task that fails mid-write is retried, and nothing doubles.

The join's tasks write their partition's records in a Kafka transaction each
(`jvm/exactly-once`). These tests make one task fail inside its transaction, once, and check
that Spark's retry leaves every pair exactly once in read_committed output.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer
from pyspark import cloudpickle

from statestream.config import Settings
from statestream.exactly_once.sink import TaskFault
from statestream.join import SpecTemplate
from statestream.queries.join import job as join_job
from statestream.queries.join.job import JoinJobOptions, start_join_query
from statestream.queries.join.processor import ComplementJoinProcessor
from statestream.testing import read_records
from tests.integration.test_join_job import (
    _narrow_lines,
    _offline,
    _pair_key,
    _produce,
    _read_json,
    _topic_settings,
)

pytestmark = pytest.mark.integration

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import tests


def _join(spark, settings: Settings, options: JoinJobOptions) -> None:
    query = start_join_query(spark, settings, options)
    query.awaitTermination()
    assert query.exception() is None, query.exception()


def _assert_exactly_the_offline_join(settings: Settings, lines: list[bytes]) -> list[dict]:
    expected, _ = _offline(lines, SpecTemplate())
    got = _read_json(settings, settings.topics.machine_out)
    keys = [_pair_key(pair) for pair in got]
    assert len(keys) == len(set(keys)), "a pair was written twice"
    assert set(keys) == {_pair_key(pair) for pair in expected}
    return got


@pytest.mark.parametrize("after_commit", [False, True], ids=["inside", "after-commit"])
def test_a_writer_that_fails_once_is_retried_exactly_once(
    spark, local_services: Settings, unique_name: str, tmp_path: Path, after_commit: bool
) -> None:
    """A task fails inside its open transaction (the retry's fencing aborts it, and the retry
    writes), or right after its commit (the retry finds the marker and writes nothing)."""
    settings = _topic_settings(local_services, unique_name, 3)
    lines = _narrow_lines("time", 1500)
    _produce(settings, lines)
    fault = TaskFault(tmp_path / "failed-once", after_commit=after_commit)
    options = JoinJobOptions(
        available_now=True,
        query_name=unique_name,
        checkpoint=tmp_path / "checkpoint",
        task_fault=fault,
    )
    _join(spark, settings, options)
    assert fault.file.exists(), "no task failed: the fault was not injected"
    pairs = _assert_exactly_the_offline_join(settings, lines)
    uncommitted = read_records(settings, settings.topics.machine_out, isolation="read_uncommitted")
    if after_commit:
        assert len(uncommitted) == len(pairs)  # the retry wrote nothing
    else:  # the failed attempt's records reached the broker, in a transaction then aborted
        assert len(uncommitted) > len(pairs)


class _KillsItsWorkerOnce(ComplementJoinProcessor):
    """Kills its own Python worker in the middle of a task's output, the first time only."""

    marker: str = ""

    def handleInputRows(self, key, rows, timerValues):
        yield from super().handleInputRows(key, rows, timerValues)
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return
        os.kill(os.getpid(), signal.SIGKILL)  # after this bucket's output, before the others'


def test_a_python_worker_killed_mid_write_is_retried_exactly_once(
    spark, local_services: Settings, unique_name: str, tmp_path: Path, monkeypatch
) -> None:
    settings = _topic_settings(local_services, unique_name, 3)
    lines = _narrow_lines("time", 1500)
    _produce(settings, lines)
    killed = tmp_path / "killed-once"
    monkeypatch.setattr(_KillsItsWorkerOnce, "marker", str(killed))
    monkeypatch.setattr(join_job, "ComplementJoinProcessor", _KillsItsWorkerOnce)
    options = JoinJobOptions(
        available_now=True, query_name=unique_name, checkpoint=tmp_path / "checkpoint"
    )
    _join(spark, settings, options)
    assert killed.exists(), "no worker was killed"
    _assert_exactly_the_offline_join(settings, lines)


def test_records_land_in_the_partition_the_connector_would_choose(
    spark, local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    """A key's partition is the one the connector's producer (murmur2, Java-compatible) picks,
    so a series keeps one partition whoever wrote it."""
    settings = _topic_settings(local_services, unique_name, 5)
    lines = _narrow_lines("time", 600)
    _produce(settings, lines)
    options = JoinJobOptions(
        available_now=True, query_name=unique_name, checkpoint=tmp_path / "checkpoint"
    )
    _join(spark, settings, options)
    records = read_records(settings, settings.topics.machine_out)
    assert records
    keys = {key for _, key, _ in records}
    chosen = _partitions_chosen_by_the_connector(settings, f"{unique_name}.late", keys)
    for partition, key, value in records:
        pair = json.loads(value)
        assert key == f"{pair['thing']}.{pair['quantity']}".encode()
        assert partition == chosen[key]


def _partitions_chosen_by_the_connector(
    settings: Settings, topic: str, keys: set[bytes]
) -> dict[bytes, int]:
    """Where `ingest.kafka_sink`'s partitioner puts each key on `topic` (5 partitions too)."""
    chosen: dict[bytes, int] = {}
    producer = Producer({**settings.kafka.client_config(), "partitioner": "murmur2_random"})
    for key in keys:
        producer.produce(
            topic,
            key=key,
            value=b"",
            on_delivery=lambda _e, m: chosen.update({m.key(): m.partition()}),
        )
    producer.flush(30)
    assert set(chosen) == keys
    return chosen
