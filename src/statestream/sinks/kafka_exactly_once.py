"""Exactly-once output to Kafka for a streaming query's micro-batches.

Spark's Kafka sink and a plain `foreachBatch` are at-least-once: after a crash Spark runs the last
batch again. `TransactionalKafkaWriter` writes each batch inside one Kafka transaction together
with a marker `{query, batch_id}` on a compacted commits topic. A `read_committed` consumer sees a
batch's records all or not at all, and a batch whose id is already committed is recognised and
skipped, so replays add nothing.

    writer = TransactionalKafkaWriter(settings, "join")
    writer.write_batch(batch_id, [(topic, key, value), ...])   # False if already committed

The transactional id is per query: a restarted query fences its previous incarnation (whose open
transaction the broker aborts) before it writes. `query_name` must name one checkpoint lineage
(a Spark query's batch ids start again at 0 with a new checkpoint): the streaming jobs pass their
name plus the id Spark keeps in the checkpoint (`checkpoint_query_id`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from statestream.config import Settings
from statestream.errors import ServiceError

OutputRecord = tuple[str, str | bytes | None, str | bytes]  # (topic, key, value); str as UTF-8


class TransactionalKafkaWriter:
    """Writes one streaming query's batches to Kafka, each batch exactly once."""

    def __init__(
        self,
        settings: Settings,
        query_name: str,
        commits_topic: str | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        self.settings = settings
        self.query_name = query_name
        self.commits_topic = commits_topic or settings.topics.commits
        self.timeout_s = timeout_s
        self._producer: Producer | None = None
        self._last_committed: int | None = None

    @property
    def transactional_id(self) -> str:
        return f"statestream.{self.query_name}"

    def last_committed_batch(self) -> int:
        """The id of the last batch committed by this query (-1 if none)."""
        self._start()
        assert self._last_committed is not None
        return self._last_committed

    def write_batch(self, batch_id: int, records: Iterable[OutputRecord]) -> bool:
        """Write a batch's records in one transaction; False if the batch was committed before."""
        if batch_id <= self.last_committed_batch():
            return False
        producer = self._producer
        assert producer is not None
        producer.begin_transaction()
        produce = producer.produce
        try:
            for topic, key, value in records:
                try:
                    produce(topic, value, key)
                except BufferError:  # the local queue is full
                    _produce(producer, topic, key, value)
            marker = json.dumps({"query": self.query_name, "batch_id": batch_id}).encode()
            _produce(producer, self.commits_topic, self.query_name.encode(), marker)
            producer.commit_transaction(self.timeout_s)
        except KafkaException as exc:
            self._abort(exc)
            raise ServiceError(
                f"Kafka transaction of batch {batch_id} of query {self.query_name} failed: "
                f"{exc.args[0].str()}"
            ) from None
        self._last_committed = batch_id
        return True

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(self.timeout_s)
            self._producer = None

    def _abort(self, exc: KafkaException) -> None:
        error: KafkaError = exc.args[0]
        if self._producer is None:
            return
        if error.txn_requires_abort():
            self._producer.abort_transaction(self.timeout_s)
        else:  # fenced or fatal: a new producer must start over
            self._producer = None
            self._last_committed = None

    def _start(self) -> None:
        if self._producer is not None and self._last_committed is not None:
            return
        ensure_commits_topic(self.settings, self.commits_topic)
        config = {
            **self.settings.kafka.client_config(),
            "transactional.id": self.transactional_id,
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.num.messages": 10_000,
            "queue.buffering.max.messages": 1_000_000,
            "compression.type": "lz4",
        }
        producer = Producer(config)
        try:
            producer.init_transactions(self.timeout_s)  # fences an earlier incarnation
        except KafkaException as exc:
            raise ServiceError(
                f"Kafka transactions unavailable for {self.transactional_id}: {exc.args[0].str()}"
            ) from None
        self._producer = producer
        self._last_committed = read_last_committed(
            self.settings, self.commits_topic, self.query_name
        )


def _produce(producer: Producer, topic: str, key: str | bytes | None, value: str | bytes) -> None:
    while True:
        try:
            producer.produce(topic, value=value, key=key)
            return
        except BufferError:
            producer.poll(0.05)  # the local queue is full: let deliveries drain


def ensure_commits_topic(settings: Settings, topic: str) -> None:
    """Create the compacted, single-partition commits topic if it does not exist."""
    admin = AdminClient(settings.kafka.client_config())
    if topic in admin.list_topics(timeout=30).topics:
        return
    future = admin.create_topics(
        [
            NewTopic(
                topic, num_partitions=1, replication_factor=-1, config={"cleanup.policy": "compact"}
            )
        ]
    )[topic]
    try:
        future.result()
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise ServiceError(f"could not create topic {topic}: {exc.args[0].str()}") from None


def read_last_committed(settings: Settings, topic: str, query_name: str) -> int:
    """The last batch id committed for `query_name` on the commits topic (-1 if none)."""
    consumer = Consumer(
        {
            **settings.kafka.client_config(),
            "group.id": f"statestream.commits-reader.{query_name}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        partition = TopicPartition(topic, 0)
        low, high = consumer.get_watermark_offsets(partition, timeout=30)
        if high <= low:
            return -1
        partition.offset = low
        consumer.assign([partition])
        last = -1
        while True:
            message = consumer.poll(10.0)
            if message is None:
                raise ServiceError(f"timed out reading the commits topic {topic}")
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    return last
                raise ServiceError(f"reading {topic}: {message.error().str()}")
            if message.key() == query_name.encode():
                last = int(json.loads(message.value())["batch_id"])
    finally:
        consumer.close()


def checkpoint_query_id(checkpoint: Path) -> str:
    """The id Spark keeps for a streaming query in its checkpoint (same across restarts)."""
    metadata = Path(checkpoint) / "metadata"
    try:
        return str(json.loads(metadata.read_text().splitlines()[0])["id"])
    except (OSError, ValueError, KeyError, IndexError) as exc:
        raise ServiceError(f"cannot read the query id from {metadata}: {exc}") from None
