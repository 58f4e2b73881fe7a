"""The local Mosquitto's TLS listener: verified clients talk, unverified ones are refused."""

from __future__ import annotations

import socket
import ssl
import threading

import paho.mqtt.client as mqtt
import pytest

from statestream.config import Settings
from statestream.errors import ServiceError
from statestream.ingest.mqtt import MqttConnection, wire
from statestream.ingest.mqtt.client import tls_context
from statestream.services.tls import ensure_server_certificate

pytestmark = pytest.mark.integration


def test_the_local_broker_is_reached_over_tls_by_default(local_services: Settings) -> None:
    mqtt_settings = local_services.mqtt
    assert mqtt_settings.use_tls and mqtt_settings.client_port == mqtt_settings.tls_port
    with socket.create_connection((mqtt_settings.host, mqtt_settings.client_port), 5) as raw:
        context = tls_context(mqtt_settings)
        with context.wrap_socket(raw, server_hostname=mqtt_settings.host) as tls:
            assert tls.version() in ("TLSv1.2", "TLSv1.3")
            assert tls.getpeercert()["subjectAltName"]


def test_statestream_client_publishes_and_receives_over_tls(
    local_services: Settings, unique_name: str
) -> None:
    topic = f"statestream/test/{unique_name}"
    subscriber = MqttConnection(local_services.mqtt, f"{unique_name}-sub", clean_session=True)
    subscriber.connect()
    subscriber.subscribe(topic, 1)
    publisher = MqttConnection(local_services.mqtt, f"{unique_name}-pub", clean_session=True)
    publisher.connect()
    payloads = [f"message {i}".encode() * 100 for i in range(2000)]  # many TLS records
    publisher.send(b"".join(wire.publish_packet(topic, payload, qos=0) for payload in payloads))
    received: list[bytes] = []
    for _ in range(100):
        received += [p.payload for p in subscriber.receive(0.2) if p.kind == wire.PUBLISH]
        if len(received) >= len(payloads):
            break
    publisher.close()
    subscriber.close()
    assert received == payloads


def test_paho_talks_to_the_tls_listener_with_the_generated_ca(
    local_services: Settings, unique_name: str
) -> None:
    mqtt_settings = local_services.mqtt
    assert mqtt_settings.password is not None
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    client.username_pw_set(mqtt_settings.username, mqtt_settings.password.get_secret_value())
    client.tls_set_context(tls_context(mqtt_settings))
    got = threading.Event()
    client.on_message = lambda *_args: got.set()
    client.connect(mqtt_settings.host, mqtt_settings.client_port)
    client.loop_start()
    try:
        topic = f"statestream/test/{unique_name}"
        client.subscribe(topic, qos=1)
        client.publish(topic, b"over tls", qos=1).wait_for_publish(10)
        assert got.wait(10)
    finally:
        client.disconnect()
        client.loop_stop()


def test_a_client_trusting_another_ca_is_refused_with_a_clear_error(
    local_services: Settings, tmp_path
) -> None:
    other_ca = ensure_server_certificate(tmp_path).ca
    stranger = local_services.mqtt.model_copy(update={"ca_file": other_ca})
    with pytest.raises(ServiceError, match=r"failed TLS verification against .*ca\.crt"):
        MqttConnection(stranger, "stranger", clean_session=True).connect()


def test_a_plain_client_cannot_talk_mqtt_on_the_tls_listener(local_services: Settings) -> None:
    plain = local_services.mqtt.model_copy(
        update={"tls": False, "port": local_services.mqtt.tls_port}
    )
    connection = MqttConnection(plain, "plain-on-tls", clean_session=True)
    with pytest.raises(ServiceError):
        connection.connect(timeout_s=3)
    with pytest.raises(ssl.SSLError):
        ssl.create_default_context().wrap_socket(
            socket.create_connection((plain.host, plain.port), 5), server_hostname=plain.host
        ).do_handshake()
