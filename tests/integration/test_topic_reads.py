"""Reading topics and InfluxDB the way the chaos checks do on long runs: a follower that reads
only what is new, records streamed as they are read, InfluxDB answers in chunks; and the chaos
checks' keys of records, pairs and points read that way."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from statestream.config import Settings
from statestream.exactly_once.read import TopicFollower, iter_records, read_records
from statestream.sinks.influx import INFLUX_CHUNK_ROWS, influx_rows

pytestmark = pytest.mark.integration


@pytest.fixture
def topic(local_services: Settings, unique_name: str) -> Iterator[str]:
    admin = AdminClient(local_services.kafka.client_config())
    for future in admin.create_topics([NewTopic(unique_name, 3, 1)]).values():
        future.result(30)
    yield unique_name
    for future in admin.delete_topics([unique_name]).values():
        future.result(30)


def _produce(settings: Settings, topic: str, values: range) -> None:
    producer = Producer(settings.kafka.client_config())
    for i in values:
        producer.produce(topic, str(i).encode(), partition=i % 3)
    assert producer.flush(30) == 0


def _values(records: list) -> list[int]:
    return sorted(int(value) for _, _, value in records)


def test_a_follower_returns_each_record_once_as_the_topic_grows(
    local_services: Settings, topic: str
) -> None:
    follower = TopicFollower(local_services, topic)
    try:
        seen: list = []
        _produce(local_services, topic, range(0, 500))
        while len(seen) < 500:
            seen += follower.new_records(wait_s=5.0)
        assert _values(seen) == list(range(500))
        _produce(local_services, topic, range(500, 800))
        later: list = []
        while len(later) < 300:
            later += follower.new_records(wait_s=5.0)
        assert _values(later) == list(range(500, 800))
        assert follower.new_records(wait_s=1.0) == []
    finally:
        follower.close()


def test_records_stream_with_their_timestamps_as_read_records_gives_them(
    local_services: Settings, topic: str
) -> None:
    _produce(local_services, topic, range(100))
    stamps: list[int] = []
    listed = read_records(local_services, topic, timestamps=stamps)
    streamed = list(iter_records(local_services, topic))
    assert len(listed) == 100 and all(stamp > 0 for stamp in stamps)
    assert sorted(streamed) == sorted(zip(listed, stamps, strict=True))  # partitions interleave


def test_an_empty_topic_reads_at_once(local_services: Settings, topic: str) -> None:
    assert read_records(local_services, topic, timeout_s=10.0) == []


def test_influx_rows_reads_an_answer_of_many_chunks(
    local_services: Settings, unique_name: str
) -> None:
    influx = local_services.influx
    influx_rows(influx, f'CREATE DATABASE "{unique_name}"', database=None)
    try:
        count = 2 * INFLUX_CHUNK_ROWS + 7
        body = "\n".join(f"m,thing=t{i % 5} v={i}i {i}" for i in range(count))
        _write(local_services, unique_name, body)
        rows = influx_rows(influx, "SELECT v, thing FROM m", database=unique_name)
        assert sorted(row["v"] for row in rows) == list(range(count))
        assert {row["thing"] for row in rows} == {f"t{i}" for i in range(5)}
    finally:
        influx_rows(influx, f'DROP DATABASE "{unique_name}"', database=None)


def _write(settings: Settings, database: str, body: str) -> None:
    import requests

    influx = settings.influx
    assert influx.password is not None
    response = requests.post(
        f"{influx.url}/write",
        params={"db": database, "precision": "u"},
        data=body.encode(),
        auth=(influx.username, influx.password.get_secret_value()),
        timeout=60,
    )
    assert response.status_code == 204, response.text
