"""Put observations on Kafka: the producer the sample loader (and later the connectors) use."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaError, Message, Producer

from statestream.config import Settings
from statestream.errors import ServiceError
from statestream.ingest.observations import (
    SAMPLE_FILE,
    Observation,
    observations_from_row,
    read_machine_rows,
)


@dataclass(frozen=True)
class ProducedFile:
    """What `produce_machine_file` sent: how many rows it read and records it wrote, and where."""

    path: Path
    topic: str
    rows: int
    records: int


def produce_observations(
    settings: Settings, observations: Iterable[Observation], topic: str | None = None
) -> int:
    """Write each observation to `topic` (default: machine.data) and wait until Kafka has them all.

    Returns the number written; raises `ServiceError` when Kafka refuses or loses any.
    """
    topic = topic or settings.topics.machine_data
    producer = Producer(
        {
            **settings.kafka.client_config(),
            "enable.idempotence": True,
            "linger.ms": 20,
            "log_level": 3,  # errors only: no warnings about retries librdkafka handles itself
            "error_cb": lambda _err: None,  # delivery errors are counted below
        }
    )
    failures: list[KafkaError] = []

    def on_delivery(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            failures.append(error)

    sent = 0
    for observation in observations:
        _produce(producer, topic, observation, on_delivery)
        sent += 1
    remaining = producer.flush(60)
    if failures or remaining:
        reason = failures[0].str() if failures else f"{remaining} records not confirmed in 60 s"
        raise ServiceError(
            f"writing to Kafka topic {topic} at {settings.kafka.bootstrap_servers} failed "
            f"({len(failures) + remaining} of {sent} records): {reason}"
        )
    return sent


def produce_machine_file(
    settings: Settings, path: Path = SAMPLE_FILE, topic: str | None = None
) -> ProducedFile:
    """Write every quantity of every row of a JSON-lines machine file to Kafka, one record each."""
    topic = topic or settings.topics.machine_data
    rows = 0

    def observations() -> Iterable[Observation]:
        nonlocal rows
        for row in read_machine_rows(path):
            rows += 1
            yield from observations_from_row(row)

    records = produce_observations(settings, observations(), topic)
    return ProducedFile(path, topic, rows, records)


def _produce(producer: Producer, topic: str, observation: Observation, on_delivery) -> None:
    while True:
        try:
            producer.produce(
                topic, key=observation.key, value=observation.to_json(), on_delivery=on_delivery
            )
        except BufferError:  # the local queue is full: let deliveries drain it
            producer.poll(0.5)
            continue
        producer.poll(0)
        return
