"""Running a simulation: the plan's payloads to MQTT (as machines would) or straight to Kafka.

To MQTT, one persistent connection publishes every row as one message on `settings.mqtt.topic`.
To Kafka, the rows go through the same machine-data processor and pipeline as the MQTT
connector's (a `ReplayConnector`), so the records are the ones the connector would write.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Literal

from statestream.config import Settings
from statestream.errors import ServiceError
from statestream.ingest.machine_simulator import Pacer, SimulationPlan
from statestream.ingest.mqtt import ConnectionLost, MqttConnection
from statestream.ingest.mqtt.publisher import MqttPublisher
from statestream.ingest.pipeline import IngestCounts, machine_data_pipeline
from statestream.ingest.replay import ReplayConnector

Target = Literal["mqtt", "kafka"]
BATCH = 500  # rows taken from the plan per socket write
RECONNECT_GIVE_UP_S = 300.0  # how long the simulator waits for a broker that went away
log = logging.getLogger("statestream.simulator")


@dataclass(frozen=True)
class SimulationResult:
    """What a simulation sent: rows (messages), bytes, seconds; for Kafka also the records."""

    target: Target
    destination: str
    rows: int
    payload_bytes: int
    seconds: float
    counts: IngestCounts | None = None  # Kafka only

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0


def run_simulation(
    settings: Settings,
    plan: SimulationPlan,
    *,
    target: Target = "mqtt",
    rate: float | None = None,
    qos: int = 1,
    topic: str | None = None,
    on_progress: Callable[[int], None] | None = None,
    stop: threading.Event | None = None,
) -> SimulationResult:
    """Send the plan's rows to `target` at `rate` rows/s (None: as fast as possible).

    `topic` is the MQTT topic or the Kafka topic (defaults: settings.mqtt.topic and
    settings.topics.machine_data). `on_progress(rows)` is called after each batch.
    """
    stop = stop or threading.Event()
    pacer = Pacer(rate)
    started = time.monotonic()
    if target == "kafka":
        payloads = _CountingIterator(pacer.paced(plan.payloads()), stop)
        pipeline = machine_data_pipeline(settings, records_topic=topic)
        ReplayConnector(payloads, "simulator", on_progress).run(pipeline, stop)
        destination, counts = pipeline.record_topics[0], pipeline.counts
    else:
        payloads = _CountingIterator(plan.payloads(), stop)
        destination, counts = topic or settings.mqtt.topic, None
        publish_to_mqtt(settings, destination, payloads, qos, pacer, on_progress)
    return SimulationResult(
        target,
        destination,
        payloads.rows,
        payloads.payload_bytes,
        time.monotonic() - started,
        counts,
    )


def publish_to_mqtt(
    settings: Settings,
    topic: str | None,
    payloads: Iterator[bytes] | Iterator[tuple[str, bytes]],
    qos: int,
    pacer: Pacer,
    on_progress: Callable[[int], None] | None,
    on_acknowledged: Callable[[list[int]], None] | None = None,
) -> None:
    """Publish `payloads` on `topic`, or, when `topic` is None, (topic, payload) messages.

    When the broker goes away (restarted, killed), it connects again and sends once more what
    the broker had not acknowledged (`MqttPublisher.resume`); it gives up with a `ServiceError`
    after `RECONNECT_GIVE_UP_S` without a broker. `on_acknowledged` as `MqttPublisher` has it.
    """
    client_id = f"statestream-simulator-{uuid.uuid4().hex[:8]}"
    publisher = MqttPublisher(
        _connected(settings, client_id),
        topic or "",
        qos=qos,
        window=settings.ingest.publish_window,
        on_acknowledged=on_acknowledged,
    )
    send = publisher.publish if topic is not None else publisher.publish_to
    try:
        while True:
            try:
                _publish_all(publisher, send, payloads, pacer, on_progress)
                publisher.drain()
                return
            except ConnectionLost as exc:
                _reconnect(settings, client_id, publisher, str(exc))
    finally:
        publisher.connection.close()


def _connected(settings: Settings, client_id: str) -> MqttConnection:
    connection = MqttConnection(
        settings.mqtt, client_id, clean_session=True, keepalive_s=settings.ingest.keepalive_s
    )
    connection.connect()
    return connection


def _publish_all(
    publisher: MqttPublisher,
    send: Callable[[list], None],
    payloads: Iterator[bytes] | Iterator[tuple[str, bytes]],
    pacer: Pacer,
    on_progress: Callable[[int], None] | None,
) -> None:
    while True:
        take = min(BATCH, publisher.room, pacer.allowed(publisher.published))
        if take <= 0:
            wait = pacer.wait_s(publisher.published) if publisher.room > 0 else 0.05
            publisher.poll(min(wait, 0.05))
            continue
        batch = list(islice(payloads, take))
        if not batch:
            return
        send(batch)
        if on_progress is not None:
            on_progress(publisher.published)


def _reconnect(settings: Settings, client_id: str, publisher: MqttPublisher, why: str) -> None:
    """Connect again (back-off up to 5 s) and resume the publisher; `ServiceError` after
    `RECONNECT_GIVE_UP_S` without a broker."""
    log.warning("%s; connecting again", why)
    deadline, backoff = time.monotonic() + RECONNECT_GIVE_UP_S, 0.5
    while True:
        try:
            resent = publisher.resume(_connected(settings, client_id))
            log.warning("connected again; sent %d unacknowledged messages again", resent)
            return
        except ServiceError as exc:  # ConnectionLost included
            if time.monotonic() + backoff > deadline:
                raise ServiceError(
                    f"{exc}; gave up after {RECONNECT_GIVE_UP_S:.0f} s without the broker"
                ) from None
            time.sleep(backoff)
            backoff = min(backoff * 2, 5.0)


class _CountingIterator(Iterator[bytes]):
    """Counts the payloads that pass through; ends early once `stop` is set."""

    def __init__(self, payloads: Iterator[bytes], stop: threading.Event) -> None:
        self._payloads = payloads
        self._stop = stop
        self.rows = 0
        self.payload_bytes = 0

    def __next__(self) -> bytes:
        if self._stop.is_set():
            raise StopIteration
        payload = next(self._payloads)
        self.rows += 1
        self.payload_bytes += len(payload)
        return payload
