"""Publishing many messages to one topic at QoS 0, 1 or 2 over one connection, pipelined.

Up to `window` QoS 1/2 messages are unacknowledged at a time; a batch of PUBLISH packets goes out
in one system call. At QoS 2 each PUBREC is answered with PUBREL and the message is done at PUBCOMP.

    publisher = MqttPublisher(connection, "machine/states", qos=1, window=1000)
    publisher.publish([b'{"Thing": …}', …])    # waits while the window is full
    publisher.publish_to([("/hfp/v2/…", b'{"VP": …}'), …])  # each message on its own topic
    publisher.drain()                           # every message acknowledged

A message is the publisher's until the broker acknowledged it: when the connection is lost,
`resume(new_connection)` sends every unacknowledged message again, in order, so a broker that
died before its PUBACK loses nothing (QoS 1 is at least once: one it had taken may come twice).

`on_acknowledged(numbers)` is told which messages the broker acknowledged, by their number in
publishing order (0 for the first): a chaos run keeps when each was acknowledged, to tell a
broker's own loss window (acknowledged, not yet saved) from a loss anywhere else.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from statestream.errors import ServiceError
from statestream.ingest.mqtt import wire
from statestream.ingest.mqtt.client import ConnectionLost, MqttConnection

WAIT_S = 0.05


class MqttPublisher:
    """Sends payloads to `topic`; keeps at most `window` QoS 1/2 messages unacknowledged."""

    def __init__(
        self,
        connection: MqttConnection,
        topic: str,
        *,
        qos: int,
        window: int,
        on_acknowledged: Callable[[list[int]], None] | None = None,
    ) -> None:
        if qos not in (0, 1, 2):
            raise ValueError(f"QoS is 0, 1 or 2, not {qos}")
        self.connection = connection
        self.qos = qos
        self.window = max(1, min(window, 65_535))
        self._topic = wire.encoded_topic(topic)
        # packet id → (topic, payload, number), in sending order: what `resume` sends again
        self._unacknowledged: dict[int, tuple[bytes, bytes, int]] = {}
        self._backlog: list[tuple[bytes, bytes]] = []  # not sent when the connection was lost
        self._next_id = 0
        self._on_acknowledged = on_acknowledged
        self.published = 0

    @property
    def room(self) -> int:
        """How many messages may be published now without waiting."""
        return self.window - len(self._unacknowledged) if self.qos else self.window

    def publish(self, payloads: Sequence[bytes]) -> None:
        """Publish `payloads` in order, waiting for acknowledgements while the window is full."""
        topic = self._topic
        self._publish([(topic, payload) for payload in payloads])

    def publish_to(self, messages: Sequence[tuple[str, bytes]]) -> None:
        """Publish (topic, payload) messages in order, each on its own topic."""
        self._publish([(wire.encoded_topic(topic), payload) for topic, payload in messages])

    def _publish(self, messages: Sequence[tuple[bytes, bytes]]) -> None:
        start = 0
        try:
            while start < len(messages):
                while self.room <= 0:
                    self._handle(self.connection.receive(WAIT_S))
                batch = messages[start : start + self.room]
                packets = self._packets(batch)  # from here on `resume` sends them again
                self.published += len(batch)
                start += len(batch)
                self.connection.send(packets)
                if self.qos:
                    self._handle(self.connection.receive(0.0))
        except ConnectionLost:
            self._backlog = [*messages[start:], *self._backlog]
            raise

    def resume(self, connection: MqttConnection) -> int:
        """Go on over `connection` (a new one after a loss): send every message the broker has
        not acknowledged again, in order and flagged DUP, then those a lost connection kept
        from being sent; returns how many were sent again. Raises `ConnectionLost` as
        `publish` does (resume again with the next connection)."""
        self.connection = connection
        unacknowledged = list(self._unacknowledged.items())
        if unacknowledged:
            connection.send(
                b"".join(
                    wire.publish_packet(topic, payload, qos=self.qos, packet_id=pid, dup=True)
                    for pid, (topic, payload, _number) in unacknowledged
                )
            )
        backlog, self._backlog = self._backlog, []
        self._publish(backlog)
        return len(unacknowledged)

    def poll(self, timeout_s: float) -> None:
        """Handle the acknowledgements that arrive within `timeout_s`."""
        self._handle(self.connection.receive(timeout_s))

    def drain(self, timeout_s: float = 60.0) -> None:
        """Wait until the broker acknowledged every message; `ServiceError` after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while self._unacknowledged:
            if time.monotonic() > deadline:
                raise ServiceError(
                    f"the MQTT broker at {self.connection.address} did not acknowledge "
                    f"{len(self._unacknowledged):,} messages within {timeout_s:.0f} s"
                )
            self._handle(self.connection.receive(WAIT_S))

    def _packets(self, messages: Sequence[tuple[bytes, bytes]]) -> bytes:
        qos = self.qos
        if not qos:
            return b"".join(wire.publish_packet(topic, p, qos=0) for topic, p in messages)
        packets = []
        for number, (topic, payload) in enumerate(messages, self.published):
            packet_id = self._take_id(topic, payload, number)
            packets.append(wire.publish_packet(topic, payload, qos=qos, packet_id=packet_id))
        return b"".join(packets)

    def _take_id(self, topic: bytes, payload: bytes, number: int) -> int:
        packet_id = self._next_id
        while True:
            packet_id = packet_id % 65_535 + 1
            if packet_id not in self._unacknowledged:
                break
        self._next_id = packet_id
        self._unacknowledged[packet_id] = (topic, payload, number)
        return packet_id

    def _handle(self, packets: list[wire.Packet]) -> None:
        releases = bytearray()
        acknowledged = []
        for packet in packets:
            if packet.kind in (wire.PUBACK, wire.PUBCOMP):
                message = self._unacknowledged.pop(packet.packet_id, None)
                if message is not None:
                    acknowledged.append(message[2])
            elif packet.kind == wire.PUBREC:
                releases += wire.ack_packet(wire.PUBREL, packet.packet_id)
        if acknowledged and self._on_acknowledged is not None:
            self._on_acknowledged(acknowledged)
        if releases:
            self.connection.send(bytes(releases))
