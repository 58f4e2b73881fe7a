"""What the ingestion tests share: fresh topics and MQTT topic per test, a connector in a thread,
and reading Kafka back with keys."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from statestream import testing
from statestream.config import Settings
from statestream.ingest import (
    IngestPipeline,
    MachineRowProcessor,
    MqttConnector,
    RawEvent,
    SimulationPlan,
    machine_data_pipeline,
    run_simulation,
)
from statestream.ingest.mqtt import forget_session
from tests.support import granted


def ingest_settings(settings: Settings, name: str, **ingest: object) -> Settings:
    """Settings whose MQTT topic, client id and Kafka topics are this test's own (topics made)."""
    topics = settings.topics.model_copy(
        update={"machine_data": f"{name}.data", "dead_letter": f"{name}.dlq"}
    )
    admin = AdminClient(settings.kafka.client_config())
    new = [NewTopic(topics.machine_data, 5, 1), NewTopic(topics.dead_letter, 1, 1)]
    for future in admin.create_topics(new).values():
        future.result()
    return granted(
        settings.model_copy(
            update={
                "topics": topics,
                "mqtt": settings.mqtt.model_copy(update={"topic": f"statestream/test/{name}"}),
                "ingest": settings.ingest.model_copy(update={"client_id": name, **ingest}),
            }
        )
    )


def cleanup(settings: Settings) -> None:
    """Remove the test's MQTT session (its own client id) and its Kafka topics."""
    forget_session(settings.mqtt, settings.ingest.client_id)
    delete_topics(settings, settings.topics.machine_data, settings.topics.dead_letter)


def delete_topics(settings: Settings, *topics: str) -> None:
    """Delete Kafka topics and wait until they are gone."""
    admin = AdminClient(settings.kafka.client_config())
    for future in admin.delete_topics(list(topics)).values():
        future.result(30)


@dataclass
class ThreadConnector:
    connector: MqttConnector
    pipeline: IngestPipeline
    errors: list[BaseException]


@contextmanager
def connector_thread(settings: Settings) -> Iterator[ThreadConnector]:
    """`connect mqtt` in a thread of the test: subscribed on entry, flushed and stopped on exit."""
    subscribed, stop = threading.Event(), threading.Event()
    pipeline = machine_data_pipeline(settings)
    connector = MqttConnector(settings, on_subscribed=lambda _present: subscribed.set())
    running = ThreadConnector(connector, pipeline, [])

    def run() -> None:
        try:
            connector.run(pipeline, stop)
        except BaseException as exc:  # reported by the test
            running.errors.append(exc)
            subscribed.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert subscribed.wait(30), "the connector did not subscribe"
    try:
        yield running
    finally:
        stop.set()
        thread.join(60)
    assert not running.errors, running.errors


def publish(settings: Settings, lines: list[bytes], **options: object) -> None:
    """The simulator sends `lines` as they are, one per MQTT message (QoS 1 unless given)."""
    run_simulation(settings, SimulationPlan(lines=lines), target="mqtt", **options)  # type: ignore[arg-type]


def expected_records(lines: list[bytes]) -> dict[str, list[tuple[float, float]]]:
    """Per key, the (time, value) of the records the rows stand for, in row order."""
    processor, expected = MachineRowProcessor(), {}
    for line in lines:
        for record in processor.process(RawEvent(line, "test", 0)):
            expected.setdefault(record.key, []).append((record.phenomenon_time_ms, record.result))
    return expected


def topic_size(settings: Settings, topic: str) -> int:
    """Records on `topic` now (the sum of its partitions' high watermarks)."""
    from confluent_kafka import TopicPartition

    consumer = Consumer({**settings.kafka.client_config(), "group.id": f"size-{topic}"})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        return sum(
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in partitions
        )
    finally:
        consumer.close()


def wait_for_records(settings: Settings, topic: str, count: int, timeout_s: float = 60) -> int:
    """Wait until `topic` holds at least `count` records; how many it holds."""
    deadline = time.monotonic() + timeout_s
    while (size := topic_size(settings, topic)) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    return size


def read_records(settings: Settings, topic: str) -> list[tuple[str | None, bytes]]:
    """Every (key, value) on `topic` (transactions' records too), each partition in log order."""
    records = testing.read_records(settings, topic, isolation="read_uncommitted")
    return [(key.decode() if key is not None else None, value) for _, key, value in records]


class CuttableProxy:
    """A TCP proxy to the MQTT broker whose connections a test can cut, as a network fault would."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self) -> None:
        """Close every connection through the proxy; new ones are accepted as before."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for sock in pair:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()

    def close(self) -> None:
        self.cut()
        self._server.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._pairs.append((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_forward, args=(source, sink), daemon=True).start()


def _forward(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
