"""paho-mqtt behind the interface of `MqttConnection`, for the connector's `ingest.mqtt_client`.

statestream's own client exists for speed (see `client.py`); this adapter lets the connector run
on paho instead, with the same persistent session, QoS 1, TLS and acknowledgement only after
Kafka confirmed, so `statestream bench ingest --client paho|statestream` compares the two
clients on the same path. paho's network thread queues each message (manual acknowledgement);
`receive` hands them over as `wire.Packet`s.
"""

from __future__ import annotations

import ssl
import threading
from collections import deque

import paho.mqtt.client as paho

from statestream.config import MqttSettings
from statestream.errors import ServiceError
from statestream.ingest.mqtt import wire
from statestream.ingest.mqtt.client import ConnectionLost, tls_context


class PahoConnection:
    """A paho client with a client id; `clean_session=False` keeps the session across connects."""

    def __init__(
        self,
        settings: MqttSettings,
        client_id: str,
        *,
        clean_session: bool,
        keepalive_s: int = 30,
    ) -> None:
        self.settings = settings
        self.client_id = client_id
        self.keepalive_s = keepalive_s
        self.session_present = False
        self._client = paho.Client(
            paho.CallbackAPIVersion.VERSION2,
            client_id=client_id,
            clean_session=clean_session,
            protocol=paho.MQTTv311,
            manual_ack=True,
            reconnect_on_failure=False,  # the connector reconnects, as with its own client
        )
        self._client.max_queued_messages_set(0)
        self._arrived: deque[wire.Packet] = deque()
        self._signal = threading.Condition()
        self._connack: list[tuple[bool, str]] = []
        self._subacks: list[list[int]] = []
        self._lost: str | None = None
        self._client.on_connect = self._on_connect
        self._client.on_subscribe = self._on_subscribe
        self._client.on_message = self._on_message
        self._client.on_disconnect = self._on_disconnect

    @property
    def address(self) -> str:
        return self.settings.client_address

    def connect(self, timeout_s: float = 10.0) -> bool:
        """Log in; True when the broker still had this client's session (as `MqttConnection`)."""
        settings = self.settings
        if settings.password is not None:
            self._client.username_pw_set(settings.username, settings.password.get_secret_value())
        try:
            if settings.use_tls:
                self._client.tls_set_context(tls_context(settings))
            self._client.connect(settings.host, settings.client_port, self.keepalive_s)
        except ssl.SSLCertVerificationError as exc:
            raise ServiceError(
                f"the MQTT broker at {self.address} failed TLS verification: {exc.verify_message}"
            ) from None
        except OSError as exc:
            raise ServiceError(f"cannot reach the MQTT broker at {self.address}: {exc}") from None
        self._client.loop_start()
        if not self._wait(lambda: bool(self._connack), timeout_s):
            self.close(graceful=False)
            raise ServiceError(f"the MQTT broker at {self.address} did not answer")
        session_present, reason = self._connack[-1]
        if reason != "Success":
            self.close(graceful=False)
            raise ServiceError(f"the MQTT broker at {self.address} refused the login: {reason}")
        self.session_present = session_present
        return session_present

    def subscribe(self, topic: str, qos: int, timeout_s: float = 10.0) -> None:
        """Subscribe to `topic` at `qos`."""
        self._client.subscribe(topic, qos)
        if not self._wait(lambda: bool(self._subacks), timeout_s):
            raise ServiceError(f"the MQTT broker at {self.address} did not answer the subscription")
        if any(code >= 0x80 for code in self._subacks.pop()):
            raise ServiceError(
                f"the MQTT broker at {self.address} refused the subscription {topic}"
            )

    def receive(self, timeout_s: float) -> list[wire.Packet]:
        """The messages that arrived, waiting up to `timeout_s` for the first."""
        with self._signal:
            if not self._arrived and self._lost is None:
                self._signal.wait(timeout_s)
            if self._lost is not None and not self._arrived:
                raise ConnectionLost(f"lost the MQTT broker at {self.address}: {self._lost}")
            packets = list(self._arrived)
            self._arrived.clear()
        return packets

    def acknowledge(self, packet_ids: list[int]) -> None:
        """PUBACK these QoS 1 messages, in this order."""
        for packet_id in packet_ids:
            self._client.ack(packet_id, 1)

    def close(self, *, graceful: bool = True) -> None:
        """Disconnect (a persistent session stays on the broker) and stop paho's thread."""
        if graceful:
            self._client.disconnect()
        self._client.loop_stop()

    def _wait(self, ready, timeout_s: float) -> bool:
        with self._signal:
            return self._signal.wait_for(ready, timeout_s)

    def _on_connect(self, _client, _userdata, flags, reason_code, _properties) -> None:
        with self._signal:
            self._connack.append((bool(flags.session_present), str(reason_code)))
            self._signal.notify_all()

    def _on_subscribe(self, _client, _userdata, _mid, reason_codes, _properties) -> None:
        with self._signal:
            self._subacks.append([code.value for code in reason_codes])
            self._signal.notify_all()

    def _on_message(self, _client, _userdata, message: paho.MQTTMessage) -> None:
        flags = (message.qos << 1) | (8 if message.dup else 0)
        packet = wire.Packet(
            wire.PUBLISH, flags, message.mid, message.topic, bytes(message.payload)
        )
        with self._signal:
            self._arrived.append(packet)
            self._signal.notify_all()

    def _on_disconnect(self, _client, _userdata, _flags, reason_code, _properties) -> None:
        with self._signal:
            self._lost = str(reason_code)
            self._signal.notify_all()
