"""The recorder: a persistent QoS 1 subscription whose every message becomes a line on disk.

- The session is persistent (a fixed client id, clean session off), as the connector's: while
  the recorder is away the broker keeps the subscription and queues the messages.
- A message is acknowledged (PUBACK) only once its line is on disk (`fsync`ed by the writer's
  background thread), in receipt order: after a crash the broker sends again what was not
  acknowledged. Duplicates are possible (a line written, its acknowledgement lost), loss is not.
- The receive time is taken when the message comes off the socket, before anything is written,
  so the disk's pauses do not show in the recording's spacing.
- On a lost connection it reconnects with back-off; acknowledgements still due on the old
  connection are dropped (the broker sends those messages again on the new one).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from statestream.config import Settings
from statestream.ingest.mqtt import MqttConnection, receive_reconnecting, wire
from statestream.ingest.mqtt.paho_connection import PahoConnection
from statestream.ingest.recording.lines import RecordedMessage, RecordingFormatError
from statestream.ingest.recording.writer import RecordingWriter

log = logging.getLogger("statestream.recorder")

SUBSCRIPTION_QOS = 1
IDLE_WAIT_S = 0.1  # how long to wait for MQTT when nothing waits for the disk
BUSY_WAIT_S = 0.002  # … and while lines still have to reach it


def recorder_client_id(path: Path) -> str:
    """The default client id of a recording: one per recording path, so that a recorder
    started again on the same recording resumes its session."""
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:8]
    return f"statestream-record-{digest}"


@dataclass
class RecorderCounts:
    """What a recorder has done so far."""

    messages: int = 0
    payload_bytes: int = 0
    unrecordable: int = 0  # topics with a line break: no line holds them (acknowledged, logged)
    reconnects: int = 0


class MqttRecorder:
    """Subscribes to `topic_filters` at QoS 1 and writes every message to `writer`.

    `on_subscribed(session_present)` is called after each (re)subscription.
    """

    def __init__(
        self,
        settings: Settings,
        topic_filters: Sequence[str],
        writer: RecordingWriter,
        *,
        client_id: str,
        on_subscribed: Callable[[bool], None] | None = None,
    ) -> None:
        if not topic_filters:
            raise ValueError("a recorder needs at least one topic filter")
        self.settings = settings
        self.topic_filters = list(topic_filters)
        self.writer = writer
        self.client_id = client_id
        self.on_subscribed = on_subscribed
        self.counts = RecorderCounts()
        self._generation = 0
        self._in_flight = 0  # commits the disk has not confirmed yet

    def run(self, stop: threading.Event) -> None:
        """Record until `stop` is set; then wait for the disk, acknowledge and disconnect.

        Raises `ServiceError` when the broker refuses the login or a subscription, and
        `InputError` when the recording cannot be written (nothing unwritten is acknowledged).
        """
        receive_reconnecting(
            self._connect,
            lambda connection: self._receive(connection, stop),
            stop,
            on_lost=self._count_reconnect,
            on_stopped=self.writer.wait_synced,
            log=log,
        )

    def _count_reconnect(self) -> None:
        self.counts.reconnects += 1

    def _connect(self) -> MqttConnection | PahoConnection:
        self._generation += 1
        connection = self._new_connection()
        session_present = connection.connect()
        for topic_filter in self.topic_filters:
            connection.subscribe(topic_filter, SUBSCRIPTION_QOS)
        if self.on_subscribed is not None:
            self.on_subscribed(session_present)
        return connection

    def _new_connection(self) -> MqttConnection | PahoConnection:
        """A connection as the connector makes it (`ingest.mqtt_client`, keep-alive)."""
        ingest = self.settings.ingest
        client = PahoConnection if ingest.mqtt_client == "paho" else MqttConnection
        return client(
            self.settings.mqtt, self.client_id, clean_session=False, keepalive_s=ingest.keepalive_s
        )

    def _receive(self, connection: MqttConnection | PahoConnection, stop: threading.Event) -> None:
        generation, writer = self._generation, self.writer
        while not stop.is_set():
            packets = connection.receive(BUSY_WAIT_S if self._in_flight else IDLE_WAIT_S)
            received_us = time.time_ns() // 1000
            packet_ids = [self._write(received_us, p) for p in packets if p.kind == wire.PUBLISH]
            if packet_ids:
                writer.commit((generation, [pid for pid in packet_ids if pid]))
                self._in_flight += 1
            self._acknowledge(connection, writer.synced(), generation)
            writer.rotate_if_due()
        self._acknowledge(connection, writer.wait_synced(), generation)
        connection.close()

    def _write(self, received_us: int, packet: wire.Packet) -> int:
        """Write one message's line; its packet id to acknowledge (0: QoS 0, none)."""
        counts = self.counts
        try:
            self.writer.write(RecordedMessage(received_us, packet.topic, packet.payload))
        except RecordingFormatError as exc:
            counts.unrecordable += 1
            log.warning("a message that cannot be recorded is dropped: %s", exc)
        else:
            counts.messages += 1
            counts.payload_bytes += len(packet.payload)
        return packet.packet_id if packet.qos else 0

    def _acknowledge(
        self,
        connection: MqttConnection | PahoConnection,
        tokens: list[object],
        generation: int,
    ) -> None:
        packet_ids: list[int] = []
        for token in tokens:
            self._in_flight -= 1
            assert isinstance(token, tuple)
            token_generation, ids = token
            if token_generation == generation:  # else: the broker sends those again
                packet_ids += ids
        connection.acknowledge(packet_ids)
