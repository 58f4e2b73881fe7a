"""The commit markers: what a marker says, and the commits topic they go to.

Each task writes its partition's records of a batch and one marker in the same Kafka
transaction (`CommitMarkers.java` writes it and reads the last one back after fencing):

    key   statestream.<query>.<checkpoint's query id>.<partition>   (also the transactional id)
    value {"query": "<query>.<checkpoint's query id>", "partition": 0, "batch_id": 7}

The value's keys may come in any order (the JVM writes them from a hash map). The commits topic
has one partition and is compacted: only a partition's last marker matters. Why the marker makes
a replay write nothing: `statestream.exactly_once`.

    >>> read_marker(b'{"partition":1,"query":"join.0f3c","batch_id":7}')
    CommitMarker(query='join', query_id='0f3c', partition=1, batch_id=7)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import orjson
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from statestream.config import Settings
from statestream.errors import ServiceError

TRANSACTIONAL_ID_PREFIX = "statestream."  # of every marker key and transactional id

COMMITS_TOPIC_CONFIG = {
    "cleanup.policy": "compact",
    # compaction only cleans closed segments: roll one every hour so the topic stays small
    "segment.ms": str(3_600_000),
}


@dataclass(frozen=True)
class CommitMarker:
    """One marker: partition `partition` of query `query` (checkpoint `query_id`) committed
    batch `batch_id`."""

    query: str
    query_id: str
    partition: int
    batch_id: int

    @property
    def key(self) -> str:
        """The marker's key, the partition's transactional id."""
        return f"{TRANSACTIONAL_ID_PREFIX}{self.query}.{self.query_id}.{self.partition}"


def read_marker(value: bytes) -> CommitMarker:
    """The marker a commits-topic record's value holds."""
    marker = orjson.loads(value)
    query, _, query_id = marker["query"].rpartition(".")
    return CommitMarker(query, query_id, int(marker["partition"]), int(marker["batch_id"]))


def last_committed(values: Iterable[bytes], query: str) -> dict[int, int]:
    """The last batch committed by each partition of query `query` (all its lineages), from the
    values of the commits topic's records (as a `read_committed` consumer reads them)."""
    last: dict[int, int] = {}
    for value in values:
        marker = read_marker(value)
        if marker.query == query:
            last[marker.partition] = max(last.get(marker.partition, -1), marker.batch_id)
    return last


def ensure_commits_topic(settings: Settings, topic: str) -> None:
    """Create the compacted, single-partition commits topic if it does not exist."""
    admin = AdminClient(settings.kafka.client_config("jobs"))
    if topic in admin.list_topics(timeout=30).topics:
        return
    new = NewTopic(topic, num_partitions=1, replication_factor=-1, config=COMMITS_TOPIC_CONFIG)
    try:
        admin.create_topics([new])[topic].result()
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise ServiceError(f"could not create topic {topic}: {exc.args[0].str()}") from None
