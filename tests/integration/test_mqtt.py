"""The local Mosquitto: publish and subscribe with statestream's credentials; anonymous refused."""

from __future__ import annotations

import threading

import paho.mqtt.client as mqtt
import pytest
from pydantic import SecretStr

from statestream.config import Settings
from statestream.services.mosquitto import mqtt_login

pytestmark = pytest.mark.integration


def _client(settings: Settings) -> mqtt.Client:
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    assert settings.mqtt.password is not None
    client.username_pw_set(settings.mqtt.username, settings.mqtt.password.get_secret_value())
    return client


def test_publish_then_subscribe_with_credentials(
    local_services: Settings, unique_name: str
) -> None:
    topic = f"statestream/test/{unique_name}"
    received: list[bytes] = []
    subscribed, all_in = threading.Event(), threading.Event()

    subscriber = _client(local_services)
    subscriber.on_subscribe = lambda *_args: subscribed.set()

    def on_message(_client, _userdata, message: mqtt.MQTTMessage) -> None:
        received.append(message.payload)
        if len(received) == 10:
            all_in.set()

    subscriber.on_message = on_message
    subscriber.connect(local_services.mqtt.host, local_services.mqtt.port)
    subscriber.subscribe(topic, qos=1)
    subscriber.loop_start()
    try:
        assert subscribed.wait(10)
        publisher = _client(local_services)
        publisher.connect(local_services.mqtt.host, local_services.mqtt.port)
        publisher.loop_start()
        infos = [publisher.publish(topic, f"message {i}", qos=1) for i in range(10)]
        for info in infos:
            info.wait_for_publish(10)
        publisher.disconnect()
        publisher.loop_stop()
        assert all_in.wait(10)
    finally:
        subscriber.disconnect()
        subscriber.loop_stop()
    assert sorted(received) == sorted(f"message {i}".encode() for i in range(10))


def test_anonymous_and_wrong_password_are_refused(local_services: Settings) -> None:
    assert mqtt_login(local_services.mqtt) == "Success"
    assert mqtt_login(local_services.mqtt, anonymous=True) == "Not authorized"
    wrong = local_services.mqtt.model_copy(update={"password": SecretStr("wrong")})
    assert mqtt_login(wrong) == "Not authorized"
