"""Reading a topic as a `read_committed` consumer sees it: what exactly-once output looks like to
its readers (records of open and aborted transactions left out), from the start to the end.

The chaos run's checks and the tests read the topics this way (`statestream.testing` re-exports
both functions). A read fails only when it stops moving: `timeout_s` is the longest wait with no
record and no partition's end, so a topic of millions of records takes what it takes.

`iter_records` gives the records as they are read, for checks of topics of millions of records;
`TopicFollower` reads one topic as it grows, each poll only the records new since the last one.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from confluent_kafka import Consumer, Message

    from statestream.config import Settings

Record = tuple[int, bytes | None, bytes]  # partition, key, value


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
) -> list[Record]:
    """Every record (partition, key, value) on `topic`, from the start to its end.

    `isolation="read_uncommitted"` also returns the records of open and aborted transactions.
    `timestamps`, when given, gets each record's Kafka timestamp (epoch ms), in the same order.
    """
    records: list[Record] = []
    for record, stamp in iter_records(settings, topic, isolation=isolation, timeout_s=timeout_s):
        records.append(record)
        if timestamps is not None:
            timestamps.append(stamp)
    return records


def iter_records(
    settings: Settings, topic: str, *, isolation: str = "read_committed", timeout_s: float = 60.0
) -> Iterator[tuple[Record, int]]:
    """Each record of `topic` with its Kafka timestamp (epoch ms), from the start to its end, as
    it is read: a check of millions of records keeps what it needs of each, not the records."""
    consumer, partitions = _consumer(settings, topic, isolation)
    try:
        yield from _read_to_end(consumer, topic, partitions, timeout_s)
    finally:
        consumer.close()


class TopicFollower:
    """One consumer of `topic` from its start, kept between polls: `new_records` returns only
    what was added since the previous call."""

    def __init__(self, settings: Settings, topic: str, *, isolation: str = "read_committed"):
        self.topic = topic
        self.consumer, self.partitions = _consumer(settings, topic, isolation)

    def new_records(self, wait_s: float = 1.0) -> list[Record]:
        """The records that came since the last call: consumed until none is waiting, or for at
        most `wait_s` on a topic that grows faster than it is read."""
        records: list[Record] = []
        until = time.monotonic() + wait_s
        while time.monotonic() < until:
            messages = self.consumer.consume(10_000, timeout=0.2)
            records += [_record(self.topic, m) for m in messages if _is_record(self.topic, m)]
            if not messages:
                break
        return records

    def close(self) -> None:
        self.consumer.close()


def _consumer(settings: Settings, topic: str, isolation: str) -> tuple[Consumer, int]:
    """A consumer subscribed to `topic` from its start, and the topic's partition count."""
    from confluent_kafka import Consumer

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
    partitions = len(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
    consumer.subscribe([topic])
    return consumer, partitions


def _read_to_end(
    consumer: Consumer, topic: str, partitions: int, timeout_s: float
) -> Iterator[tuple[Record, int]]:
    """Every record of a new `consumer`, with its timestamp, until each partition reports its
    end; fails after `timeout_s` with neither a record nor a partition's end."""
    at_end: set[int | None] = set()  # partitions read to their end (confluent: int | None)
    moved, read = time.monotonic(), 0
    while len(at_end) < partitions:
        if time.monotonic() - moved > timeout_s:
            raise TimeoutError(
                f"reading {topic}: nothing new and no end for {timeout_s} s ({read:,} records read)"
            )
        for message in consumer.consume(10_000, timeout=0.05):
            moved = time.monotonic()
            if _is_record(topic, message):
                read += 1
                yield _record(topic, message), message.timestamp()[1]
            else:
                at_end.add(message.partition())


def _is_record(topic: str, message: Message) -> bool:
    """True for a record, False for a partition's end; raises on any other error."""
    error = message.error()
    if error is None:
        return True
    from confluent_kafka import KafkaError  # only for the rare message that is not a record

    if error.code() == KafkaError._PARTITION_EOF:
        return False
    raise RuntimeError(f"reading {topic}: {error.str()}")


def _record(topic: str, message: Message) -> Record:
    """(partition, key, value) of a consumed record; statestream writes none without a value."""
    partition, value = message.partition(), message.value()
    if partition is None or value is None:
        raise RuntimeError(f"reading {topic}: a record without a value (a tombstone)")
    return partition, message.key(), value
