"""`statestream bench ingest`: simulator → Mosquitto → connector → Kafka, at full speed.

The real sample, repeated (each pass shifted in time) to `rows` rows, is published at QoS 1, one
row per message, by the simulator's publisher in this process, while `statestream connect mqtt`
runs as its own process, with the MQTT client of `client` (statestream's own or paho-mqtt; the
publisher is statestream's in both cases, so the two runs differ in the connector only). With
`instances` > 1 it is `connect mqtt --instances N`: N connector processes in one MQTT shared
subscription, their CPU added up. The clock runs from the first publish until Kafka's high
watermarks hold every record the rows stand for; rows/s and records/s are over that span. Fresh
topics and fresh MQTT sessions are used and removed at the end.
"""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from statestream.codecs.formats import MalformedRow, read_wide_row
from statestream.config import Settings
from statestream.errors import ServiceError
from statestream.ingest import SAMPLE_FILE, SimulationPlan, file_lines
from statestream.ingest.connector_group import member_client_id
from statestream.ingest.connector_process import ConnectorProcess
from statestream.ingest.mqtt import MqttConnection, forget_session
from statestream.ingest.mqtt.publisher import MqttPublisher
from statestream.services import grant_access

PARTITIONS = 5
BATCH = 500


@dataclass(frozen=True)
class IngestBenchOptions:
    rows: int = 200_000
    qos: int = 1
    envelope: str | None = None  # None: as the settings say
    client: str = "statestream"  # the connector's MQTT client: statestream or paho
    instances: int = 1  # connector processes in one shared subscription (1: one, no sharing)
    timeout_s: float = 600.0


def run(settings: Settings, options: IngestBenchOptions, say: Callable[[str], None]) -> dict:
    """Run the benchmark; the figures as a dict (rows, rows_per_s, records_per_s, …)."""
    name = f"bench_ingest_{uuid.uuid4().hex[:8]}"
    bench = _bench_settings(settings, name, options)
    say(f"preparing {options.rows:,} rows of {SAMPLE_FILE.name}")
    payloads = _payloads(options.rows)
    expected = sum(_records_of(payload) for payload in payloads)
    admin = AdminClient(settings.kafka.client_config())
    _create_topics(admin, bench)
    log_file = Path(tempfile.gettempdir()) / f"{name}.log"
    connector = ConnectorProcess(bench, log_file, *_connector_args(options.instances))
    try:
        say(f"starting {_connector_text(options.instances)}")
        connector.start()
        load_before = os.getloadavg()
        cpu_before = _tree_cpu_seconds(connector.pid)
        say(f"publishing at QoS {options.qos}, one row per message, as fast as possible")
        watcher = _RecordWatcher(bench, bench.topics.machine_data, expected)
        watcher.start()
        started = time.monotonic()
        _publish(bench, payloads, options.qos)
        published = time.monotonic() - started
        if not watcher.done.wait(options.timeout_s):
            raise ServiceError(
                f"only {watcher.seen:,} of {expected:,} records reached Kafka in "
                f"{options.timeout_s:.0f} s; connector log: {log_file}"
            )
        seconds = watcher.finished_at - started
        cpu = _tree_cpu_seconds(connector.pid) - cpu_before
        load_after = os.getloadavg()
    finally:
        connector.stop()
        for client_id in _client_ids(name, options.instances):
            forget_session(bench.mqtt, client_id)
        for future in admin.delete_topics(
            [bench.topics.machine_data, bench.topics.dead_letter]
        ).values():
            with contextlib.suppress(Exception):
                future.result(30)
    log_file.unlink(missing_ok=True)
    return {
        "rows": options.rows,
        "records": expected,
        "seconds": round(seconds, 3),
        "rows_per_s": round(options.rows / seconds),
        "records_per_s": round(expected / seconds),
        "publish_rows_per_s": round(options.rows / published),
        "connector_cpu_s": round(cpu, 2),
        "connector_cpu_us_per_row": round(cpu / options.rows * 1e6, 1),
        "qos": options.qos,
        "envelope": bench.ingest.envelope,
        "client": bench.ingest.mqtt_client,
        "instances": options.instances,
        "tls": bench.mqtt.use_tls,
        "cpus": os.cpu_count(),
        "load_average_before": round(load_before[0], 2),
        "load_average_after": round(load_after[0], 2),
    }


def _connector_args(instances: int) -> list[str]:
    """`connect mqtt`'s options: no figure lines; N instances in a shared subscription."""
    return ["--report-every", "0", *(["--instances", str(instances)] if instances > 1 else [])]


def _connector_text(instances: int) -> str:
    if instances == 1:
        return "`statestream connect mqtt` as its own process"
    return f"`statestream connect mqtt --instances {instances}`: processes in a shared subscription"


def _client_ids(name: str, instances: int) -> list[str]:
    """The MQTT sessions a run leaves: the connector's, or each instance's."""
    if instances == 1:
        return [name]
    return [member_client_id(name, index) for index in range(1, instances + 1)]


def _bench_settings(settings: Settings, name: str, options: IngestBenchOptions) -> Settings:
    topics = settings.topics.model_copy(
        update={"machine_data": f"{name}.data", "dead_letter": f"{name}.dlq"}
    )
    ingest_update: dict = {"client_id": name, "mqtt_client": options.client}
    if options.envelope is not None:
        ingest_update["envelope"] = options.envelope
    bench = settings.model_copy(
        update={
            "topics": topics,
            "mqtt": settings.mqtt.model_copy(update={"topic": f"statestream/bench/{name}"}),
            "ingest": settings.ingest.model_copy(update=ingest_update),
        }
    )
    grant_access(bench)  # the connector's user may write the bench's topics
    return bench


def _payloads(rows: int) -> list[bytes]:
    lines = list(file_lines(SAMPLE_FILE))
    plan = SimulationPlan(lines=lines, loops=math.ceil(rows / len(lines)))
    return list(islice(plan.payloads(), rows))


def _records_of(payload: bytes) -> int:
    import json

    try:
        return len(read_wide_row(json.loads(payload)).values)
    except (ValueError, MalformedRow):
        return 0


def _create_topics(admin: AdminClient, settings: Settings) -> None:
    topics = [
        NewTopic(settings.topics.machine_data, PARTITIONS, 1),
        NewTopic(settings.topics.dead_letter, 1, 1),
    ]
    for future in admin.create_topics(topics).values():
        future.result()


def _publish(settings: Settings, payloads: list[bytes], qos: int) -> None:
    connection = MqttConnection(
        settings.mqtt, f"{settings.ingest.client_id}-pub", clean_session=True
    )
    connection.connect()
    try:
        publisher = MqttPublisher(
            connection, settings.mqtt.topic, qos=qos, window=settings.ingest.publish_window
        )
        for start in range(0, len(payloads), BATCH):
            publisher.publish(payloads[start : start + BATCH])
        publisher.drain()
    finally:
        connection.close()


class _RecordWatcher(threading.Thread):
    """Polls the topic's high watermarks until they add up to `expected` records."""

    def __init__(self, settings: Settings, topic: str, expected: int) -> None:
        super().__init__(daemon=True)
        self.settings, self.topic, self.expected = settings, topic, expected
        self.seen = 0
        self.finished_at = 0.0
        self.done = threading.Event()

    def run(self) -> None:
        consumer = Consumer(
            {**self.settings.kafka.client_config(), "group.id": f"{self.topic}-watcher"}
        )
        partitions = [TopicPartition(self.topic, p) for p in range(PARTITIONS)]
        try:
            while self.seen < self.expected:
                time.sleep(0.02)
                self.seen = sum(
                    consumer.get_watermark_offsets(p, timeout=10, cached=False)[1]
                    for p in partitions
                )
            self.finished_at = time.monotonic()
            self.done.set()
        finally:
            consumer.close()


def _tree_cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of a process and its children so far (a group's instances)."""
    if pid is None:
        return 0.0
    children: list[int] = []
    for listing in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            children += [int(child) for child in listing.read_text().split()]
    return _cpu_seconds(pid) + sum(_cpu_seconds(child) for child in children)


def _cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of a process so far (0 when unknown)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
