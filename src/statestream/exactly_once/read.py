"""Reading a topic as a `read_committed` consumer sees it: what exactly-once output looks like to
its readers (records of open and aborted transactions left out), from the start to the end.

The chaos run's checks and the tests read the topics this way (`statestream.testing` re-exports
both functions).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from confluent_kafka import Message

    from statestream.config import Settings


def read_committed(settings: Settings, topic: str, timeout_s: float = 60.0) -> list[bytes]:
    """Every value a `read_committed` consumer finds on `topic`, from the start to its end."""
    return [value for _, _, value in read_records(settings, topic, timeout_s=timeout_s)]


def read_records(
    settings: Settings,
    topic: str,
    *,
    isolation: str = "read_committed",
    timeout_s: float = 60.0,
    timestamps: list[int] | None = None,
) -> list[tuple[int, bytes | None, bytes]]:
    """Every record (partition, key, value) on `topic`, from the start to its end.

    `isolation="read_uncommitted"` also returns the records of open and aborted transactions.
    `timestamps`, when given, gets each record's Kafka timestamp (epoch ms), in the same order.
    """
    from confluent_kafka import Consumer, KafkaError

    consumer = Consumer(
        {
            **settings.kafka.client_config(),
            "group.id": f"reader-{topic}-{time.monotonic_ns()}",
            "isolation.level": isolation,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
            # the broker answers a fetch at a partition's end at once, not after 500 ms: a
            # reader of a few topics' ends would otherwise wait that long at each of them
            "fetch.wait.max.ms": 10,
        }
    )
    try:
        partitions = len(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        consumer.subscribe([topic])
        records: list[tuple[int, bytes | None, bytes]] = []
        at_end: set[int | None] = set()  # partitions read to their end (confluent: int | None)
        deadline = time.monotonic() + timeout_s
        while len(at_end) < partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic}: no end after {timeout_s} s")
            for message in consumer.consume(10_000, timeout=0.05):
                error = message.error()
                if error is None:
                    records.append(_record(topic, message))
                    if timestamps is not None:
                        timestamps.append(message.timestamp()[1])
                elif error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition())
                else:
                    raise RuntimeError(f"reading {topic}: {error.str()}")
        return records
    finally:
        consumer.close()


def _record(topic: str, message: Message) -> tuple[int, bytes | None, bytes]:
    """(partition, key, value) of a consumed record; statestream writes none without a value."""
    partition, value = message.partition(), message.value()
    if partition is None or value is None:
        raise RuntimeError(f"reading {topic}: a record without a value (a tombstone)")
    return partition, message.key(), value
