"""The transactional writer on the real broker: replays skipped, crashes lose and repeat nothing."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from statestream.config import Settings
from statestream.sinks.kafka_exactly_once import TransactionalKafkaWriter
from tests.support import read_committed

pytestmark = pytest.mark.integration


def _topic(settings: Settings, name: str) -> str:
    admin = AdminClient(settings.kafka.client_config())
    admin.create_topics([NewTopic(name, num_partitions=2, replication_factor=1)])[name].result()
    return name


def _batch(batch_id: int, topic: str, n: int = 50) -> list[tuple[str, bytes, bytes]]:
    return [(topic, f"k{i % 7}".encode(), f"{batch_id}:{i}".encode()) for i in range(n)]


def test_replayed_batches_are_skipped(local_services: Settings, unique_name: str) -> None:
    topic = _topic(local_services, unique_name)
    writer = TransactionalKafkaWriter(local_services, unique_name)
    assert writer.last_committed_batch() == -1
    assert writer.write_batch(0, _batch(0, topic))
    assert writer.write_batch(1, _batch(1, topic))
    assert not writer.write_batch(1, _batch(1, topic))  # Spark replays batch 1
    writer.close()
    restarted = TransactionalKafkaWriter(local_services, unique_name)
    assert restarted.last_committed_batch() == 1
    assert not restarted.write_batch(1, _batch(1, topic))
    assert restarted.write_batch(2, _batch(2, topic))
    restarted.close()
    got = sorted(read_committed(local_services, topic))
    assert got == sorted(v for b in range(3) for _, _, v in _batch(b, topic))


CRASHING_WRITER = textwrap.dedent(
    """
    import sys, time
    from statestream.config import ensure_local_secrets, load_settings
    from statestream.sinks import kafka_exactly_once as k

    settings = ensure_local_secrets(load_settings())
    writer = k.TransactionalKafkaWriter(settings, sys.argv[1])
    writer.last_committed_batch()
    producer = writer._producer
    producer.begin_transaction()
    for i in range(50):
        producer.produce(sys.argv[2], value=f"3:{i}".encode())
    producer.flush(30)  # on the broker, inside the open transaction
    print("in transaction", flush=True)
    time.sleep(600)
    """
)


def test_a_crash_inside_a_transaction_loses_and_repeats_nothing(
    local_services: Settings, unique_name: str
) -> None:
    topic = _topic(local_services, unique_name)
    writer = TransactionalKafkaWriter(local_services, unique_name)
    writer.write_batch(2, _batch(2, topic))
    writer.close()
    crashing = subprocess.Popen(
        [sys.executable, "-c", CRASHING_WRITER, unique_name, topic],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert crashing.stdout is not None
        assert crashing.stdout.readline().strip() == "in transaction"
    finally:
        crashing.send_signal(signal.SIGKILL)
        crashing.wait()
    restarted = TransactionalKafkaWriter(local_services, unique_name)
    assert restarted.last_committed_batch() == 2
    assert restarted.write_batch(3, _batch(3, topic))
    restarted.close()
    got = sorted(read_committed(local_services, topic))
    assert got == sorted(v for b in (2, 3) for _, _, v in _batch(b, topic))
