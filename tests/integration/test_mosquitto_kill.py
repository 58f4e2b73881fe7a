"""A Mosquitto killed with -9 keeps what it acknowledged: the messages queued for a persistent
session (the connector's, while it is away) are there after the restart, when the local
Mosquitto saves its persistence after every change (`mqtt.save_after_changes = 1`, as
`statestream chaos` runs it).

Mosquitto runs from its own data folder on free ports (Kafka and InfluxDB point elsewhere, so
`services up` starts only it), never the developer's or the suite's.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from statestream.ingest.machine_delivery import publish_to_mqtt
from statestream.ingest.machine_simulator import Pacer
from statestream.ingest.mqtt import MqttConnection, wire
from tests.integration.cluster_support import (
    cluster_settings,
    free_range,
    kill_service,
    our_processes,
    services_up,
)
from tests.support import run_cli

pytestmark = pytest.mark.integration

TOPIC = "statestream-test/persistence"
MESSAGES = 200


def _environment(data_dir: Path) -> dict[str, str]:
    port = free_range(2)
    return {
        "STATESTREAM_PATHS__DATA_DIR": str(data_dir),
        "STATESTREAM_MQTT__PORT": str(port),
        "STATESTREAM_MQTT__TLS_PORT": str(port + 1),
        "STATESTREAM_KAFKA__BOOTSTRAP_SERVERS": "kafka.invalid:9092",
        "STATESTREAM_INFLUX__URL": "http://influx.invalid:8086",
        "STATESTREAM_MQTT__SAVE_AFTER_CHANGES": "1",  # as `statestream chaos` runs it
    }


def _session(settings, client_id: str) -> MqttConnection:
    connection = MqttConnection(settings.mqtt, client_id, clean_session=False)
    connection.connect()
    connection.subscribe(TOPIC, 1)
    return connection


def _receive(connection: MqttConnection, count: int, timeout_s: float = 30.0) -> list[bytes]:
    payloads: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(payloads) < count and time.monotonic() < deadline:
        packets = [p for p in connection.receive(0.5) if p.kind == wire.PUBLISH]
        payloads += [p.payload for p in packets]
        connection.acknowledge([p.packet_id for p in packets if p.qos])
    return payloads


def test_messages_queued_for_a_persistent_session_survive_kill_minus_nine(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    env = _environment(data_dir)
    try:
        services_up(env)
        settings = cluster_settings(env)
        _session(settings, "persistence-test").close()  # subscribed, then away
        sent = [f"m{i}".encode() for i in range(MESSAGES)]
        publish_to_mqtt(settings, TOPIC, iter(sent), 1, Pacer(None), None)  # all acknowledged
        kill_service(settings, "mosquitto")
        services_up(env)
        connection = _session(settings, "persistence-test")
        assert connection.session_present
        assert _receive(connection, MESSAGES) == sent
        connection.close()
    finally:
        run_cli("services", "down", env=env, inherit_settings=False, timeout_s=120)
    assert our_processes(data_dir) == []
