"""The Kafka side of ingestion: an idempotent producer that says when records are safe.

acks=all with idempotence: Kafka keeps each partition's records in the order they were produced,
without duplicates from the producer's own retries, and confirms a record only once every in-sync
replica has it. Keys are partitioned with murmur2, as Java clients (and Spark) do.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import KafkaError, Message, Producer

from statestream.config import Settings
from statestream.errors import ServiceError

DeliveryCallback = Callable[[KafkaError | None, Message], None]


class KafkaRecordSink:
    """Produces records and dead-letter records; delivery callbacks run inside `poll`/`flush`."""

    def __init__(self, settings: Settings, *, linger_ms: float, compression: str) -> None:
        self.settings = settings
        self._producer = Producer(
            {
                **settings.kafka.client_config("connector"),
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": linger_ms,
                "compression.type": compression,
                "partitioner": "murmur2_random",
                # topics come from `statestream topics create`, with their partitions and
                # retention; never made up by the broker's defaults on first use
                "allow.auto.create.topics": False,
                "queue.buffering.max.messages": 500_000,
                "log_level": 3,  # errors only: librdkafka retries on its own
                "error_cb": self._on_error,
            }
        )
        self.fatal_error: str | None = None

    def produce(
        self, topic: str, key: bytes | None, value: bytes, on_delivery: DeliveryCallback
    ) -> None:
        """Queue one record; waits for deliveries when librdkafka's queue is full."""
        self.produce_all(topic, [(key, value)], on_delivery)

    def produce_all(
        self,
        topic: str,
        records: list[tuple[bytes | None, bytes]],
        on_delivery: DeliveryCallback,
    ) -> None:
        """Queue records (key, value) in order; waits for deliveries when the queue is full."""
        produce = self._producer.produce
        index = 0
        while index < len(records):
            try:
                for key, value in records[index:] if index else records:
                    produce(topic, value, key, on_delivery=on_delivery)
                    index += 1
            except BufferError:
                self._producer.poll(0.05)

    def poll(self, timeout_s: float = 0.0) -> None:
        """Serve delivery callbacks (for at most `timeout_s` when none is due)."""
        self._producer.poll(timeout_s)
        if self.fatal_error:
            raise ServiceError(f"Kafka producer failed: {self.fatal_error}")

    def flush(self, timeout_s: float) -> int:
        """Wait until every queued record is delivered or failed; the number still queued."""
        return self._producer.flush(timeout_s)

    def partitions(self, topic: str, wait_s: float = 5.0) -> int:
        """How many partitions `topic` has; `ServiceError` when it does not exist.

        A topic created a moment ago may take a little while to show in the metadata, so it is
        asked for again for up to `wait_s`.
        """
        deadline = time.monotonic() + wait_s
        while True:
            try:
                metadata = self._producer.list_topics(topic, timeout=10)
            except Exception as exc:  # confluent_kafka.KafkaException
                raise ServiceError(
                    f"cannot read the metadata of Kafka topic {topic}: {exc}"
                ) from None
            found = metadata.topics.get(topic)
            if found is not None and found.error is None and found.partitions:
                return len(found.partitions)
            if time.monotonic() > deadline:
                raise ServiceError(_missing(self.settings, topic, found))
            time.sleep(0.2)

    def _on_error(self, error: KafkaError) -> None:
        if error.fatal():
            self.fatal_error = error.str()


def _missing(settings: Settings, topic: str, found: object) -> str:
    """Why `topic` cannot be written: missing, or (Kafka says the same for both) not granted."""
    where = f"Kafka topic {topic} does not exist at {settings.kafka.bootstrap_servers}"
    error = getattr(found, "error", None)
    if error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
        return (
            f"{where}, or the connector's user may not write it; create (and grant) it with "
            f"`statestream topics create`, or grant a topic of your own with `statestream topics "
            f"grant {topic} --role connector`"
        )
    return f"{where}; create it with `statestream topics create`"
