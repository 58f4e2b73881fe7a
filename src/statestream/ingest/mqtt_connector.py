"""The MQTT connector: a persistent QoS 1 subscription whose messages go to Kafka, nothing lost.

- The session is persistent (fixed client id, clean session off): while the connector is away
  the broker keeps the subscription and queues the messages.
- A message is acknowledged (PUBACK) only once Kafka has confirmed all its records, or its
  dead-letter record; acknowledgements go out in receipt order. After a crash the broker sends
  again what was not acknowledged: duplicates are possible, loss is not.
- On a lost connection it reconnects with back-off; acknowledgements still due on the old
  connection are dropped (the broker redelivers those messages on the new one).
- With `share_group` it is one member of an MQTT shared subscription: it subscribes to
  `$share/<group>/<filter>`, and the broker hands each message to one member of the group
  (`statestream.ingest.connector_group` runs such a group and says why nothing is lost).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from statestream.codecs.bad_input import now_ms
from statestream.config import Settings
from statestream.errors import ConfigError
from statestream.ingest.base import Connector, RawEvent
from statestream.ingest.mqtt import MqttConnection, receive_reconnecting, wire
from statestream.ingest.mqtt.paho_connection import PahoConnection
from statestream.ingest.pipeline import IngestPipeline

log = logging.getLogger("statestream.connector")

SUBSCRIPTION_QOS = 1
IDLE_WAIT_S = 0.1  # how long to wait for MQTT when nothing is in flight
BUSY_WAIT_S = 0.002  # … and while Kafka still has to confirm records
SHARE_PREFIX = "$share"
NOT_IN_SHARE_GROUP_NAMES = "/+#"  # a share group's name is one level of a topic filter


def shared_subscription(group: str, topic_filter: str) -> str:
    """The topic filter of `topic_filter` shared by `group`'s members (MQTT 5 shared
    subscriptions, which Mosquitto also grants MQTT 3.1.1 clients).

    >>> shared_subscription("ingest", "machine/states")
    '$share/ingest/machine/states'
    """
    return f"{SHARE_PREFIX}/{check_share_group(group)}/{topic_filter}"


def check_share_group(group: str) -> str:
    """`group` if it can name a share group; `ConfigError` if not."""
    if not group or any(char in group for char in NOT_IN_SHARE_GROUP_NAMES):
        raise ConfigError(
            f"{group!r} cannot name a share group: it takes one or more characters, "
            f"none of {' '.join(NOT_IN_SHARE_GROUP_NAMES)}"
        )
    return group


class MqttConnector(Connector):
    """Subscribes to `topics` (topic filters; default: settings.mqtt.topic) and feeds every
    message to a pipeline, whose routes pick the processor by topic.

    `on_subscribed(session_present)` is called after each (re)subscription. With `share_group`
    it subscribes to each filter as a member of that shared subscription.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        topic: str | None = None,
        topics: Sequence[str] = (),
        client_id: str | None = None,
        on_subscribed: Callable[[bool], None] | None = None,
        share_group: str | None = None,
    ) -> None:
        self.settings = settings
        self.topics = list(topics) or [topic or settings.mqtt.topic]
        self.share_group = share_group
        self.subscriptions = (
            [shared_subscription(share_group, topic) for topic in self.topics]
            if share_group is not None
            else self.topics
        )
        self.client_id = client_id or settings.ingest.client_id
        self.on_subscribed = on_subscribed
        self.reconnects = 0
        self._generation = 0

    def run(self, pipeline: IngestPipeline, stop: threading.Event) -> None:
        """Receive until `stop` is set; then flush Kafka, acknowledge and disconnect.

        Raises `ServiceError` when the broker refuses the login or Kafka fails to take a
        record (nothing unconfirmed is acknowledged then).
        """
        receive_reconnecting(
            self._connect,
            lambda connection: self._receive(connection, pipeline, stop),
            stop,
            on_lost=self._count_reconnect,
            on_stopped=pipeline.flush,
            log=log,
        )

    def _count_reconnect(self) -> None:
        self.reconnects += 1

    def _connect(self) -> MqttConnection | PahoConnection:
        self._generation += 1
        client = PahoConnection if self.settings.ingest.mqtt_client == "paho" else MqttConnection
        connection = client(
            self.settings.mqtt,
            self.client_id,
            clean_session=False,
            keepalive_s=self.settings.ingest.keepalive_s,
        )
        session_present = connection.connect()
        for subscription in self.subscriptions:
            connection.subscribe(subscription, SUBSCRIPTION_QOS)
        if self.on_subscribed is not None:
            self.on_subscribed(session_present)
        return connection

    @property
    def topic(self) -> str:
        """The topic filters subscribed to, as one text."""
        return ", ".join(self.topics)

    def _receive(
        self,
        connection: MqttConnection | PahoConnection,
        pipeline: IngestPipeline,
        stop: threading.Event,
    ) -> None:
        generation = self._generation
        while not stop.is_set():
            wait = BUSY_WAIT_S if pipeline.in_flight else IDLE_WAIT_S
            packets = connection.receive(wait)
            received = now_ms()
            for packet in packets:
                if packet.kind == wire.PUBLISH:
                    event = RawEvent(packet.payload, packet.topic, received)
                    # the subscription is QoS 1, so the broker sends QoS 0 or 1 only
                    pipeline.submit(event, (generation, packet.packet_id) if packet.qos else None)
            self._acknowledge(connection, pipeline.poll(), generation)
        self._acknowledge(connection, pipeline.flush(), generation)
        connection.close()

    def _acknowledge(
        self, connection: MqttConnection | PahoConnection, tokens: list[object], generation: int
    ) -> None:
        packet_ids: list[int] = []
        for token in tokens:
            if not isinstance(token, tuple):
                continue  # None: a QoS 0 message, nothing to acknowledge
            token_generation, packet_id = token
            if token_generation != generation:
                continue  # received on a connection that is gone: the broker sends it again
            packet_ids.append(packet_id)
        connection.acknowledge(packet_ids)
