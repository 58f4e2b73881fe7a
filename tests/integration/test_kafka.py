"""The local Kafka broker: records produced to a topic are consumed back, in order per key."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Message, Producer

from statestream.config import Settings

pytestmark = pytest.mark.integration


def consume(settings: Settings, topic: str, expected: int, timeout_s: float = 60) -> list[Message]:
    """Read `expected` messages of `topic` from the beginning (fewer if `timeout_s` passes)."""
    consumer = Consumer(
        {
            **settings.kafka.client_config(),
            "group.id": f"{topic}-reader",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    messages = []
    try:
        deadline = time.monotonic() + timeout_s
        while len(messages) < expected and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                continue
            assert message.error() is None, message.error()
            messages.append(message)
    finally:
        consumer.close()
    return messages


def test_produce_then_consume(local_services: Settings, unique_name: str) -> None:
    producer = Producer({**local_services.kafka.client_config(), "enable.idempotence": True})
    sent = [(f"key-{i % 3}", f"value-{i}") for i in range(100)]
    for key, value in sent:
        producer.produce(unique_name, key=key, value=value)
    assert producer.flush(30) == 0

    received = consume(local_services, unique_name, len(sent))
    pairs = [(m.key().decode(), m.value().decode()) for m in received]
    assert sorted(pairs) == sorted(sent)
    for key in ("key-0", "key-1", "key-2"):
        assert [v for k, v in pairs if k == key] == [v for k, v in sent if k == key]
