"""Exactly-once output to Kafka: the commits topic, and what a commit marker says.

Spark's Kafka sink and a plain `foreachBatch` are at-least-once: after a crash Spark runs the last
batch again. statestream's queries write through `jvm/exactly-once` instead (started by
`jobs.kafka_output`): each task writes its partition of a batch in one Kafka transaction, with a
marker on the commits topic in the same transaction:

    key   statestream.<query>.<checkpoint's query id>.<partition>   (also the transactional id)
    value {"query": "<query>.<checkpoint's query id>", "partition": 0, "batch_id": 7}

A `read_committed` consumer sees a partition's batch all or not at all; a retried task or a
replayed batch fences the earlier attempt (same transactional id), finds the marker and writes
nothing again. The commits topic has one partition and is compacted: only a partition's last
marker matters.
"""

from __future__ import annotations

import json

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from statestream.config import Settings
from statestream.errors import ServiceError

COMMITS_TOPIC_CONFIG = {
    "cleanup.policy": "compact",
    # compaction only cleans closed segments: roll one every hour so the topic stays small
    "segment.ms": str(3_600_000),
}


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


def commit_markers(settings: Settings, query: str) -> dict[int, int]:
    """The last batch committed by each partition of query `query` (all its lineages)."""
    from statestream.testing import read_records

    last: dict[int, int] = {}
    for _, _, value in read_records(settings, settings.topics.commits):
        marker = json.loads(value)
        if marker["query"].rsplit(".", 1)[0] == query:
            last[marker["partition"]] = max(last.get(marker["partition"], -1), marker["batch_id"])
    return last
