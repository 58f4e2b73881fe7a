"""`MqttPublisher` keeps what the broker has not acknowledged and sends it again after a lost
connection, in order, before anything new (the broker side is in tests/integration/test_chaos.py,
where Mosquitto is killed with -9 under load)."""

from __future__ import annotations

import pytest

from statestream.ingest.mqtt import ConnectionLost, wire
from statestream.ingest.mqtt.publisher import MqttPublisher


class _Broker:
    """A connection that keeps what is sent, acknowledges on request and is cut after
    `fail_after_sends` sends."""

    address = "test"

    def __init__(self, fail_after_sends: int | None = None, acknowledges: bool = False) -> None:
        self.sent: list[wire.Packet] = []
        self._acknowledged = 0
        self._acknowledges = acknowledges
        self._sends_left = fail_after_sends

    def send(self, data: bytes) -> None:
        self._cut_if_due()
        if self._sends_left is not None:
            self._sends_left -= 1
        self.sent += _publishes(data)

    def receive(self, _timeout_s: float) -> list[wire.Packet]:
        """PUBACKs for all that came since the last call, if it `acknowledges`."""
        self._cut_if_due()
        if not self._acknowledges:
            return []
        new, self._acknowledged = self.sent[self._acknowledged :], len(self.sent)
        return [wire.Packet(wire.PUBACK, 0, p.packet_id) for p in new]

    def _cut_if_due(self) -> None:
        if self._sends_left == 0:
            raise ConnectionLost("cut")


def _publishes(data: bytes) -> list[wire.Packet]:
    """Parse our own PUBLISH packets as a broker would (the reader reads the same format)."""
    return wire.PacketReader().feed(data)


def test_a_lost_connection_sends_the_unacknowledged_again_in_order_then_the_rest() -> None:
    first = _Broker(fail_after_sends=1)
    publisher = MqttPublisher(first, "t", qos=1, window=3)  # type: ignore[arg-type]
    payloads = [f"m{i}".encode() for i in range(5)]
    with pytest.raises(ConnectionLost):
        publisher.publish(payloads)
    assert [p.payload for p in first.sent] == payloads[:3]  # the window; none acknowledged

    second = _Broker(acknowledges=True)
    assert publisher.resume(second) == 3  # type: ignore[arg-type]
    publisher.drain(timeout_s=1.0)
    assert [p.payload for p in second.sent] == payloads  # again, then the two held back
    assert [bool(p.flags & 0x08) for p in second.sent] == [True] * 3 + [False] * 2  # DUP
    assert publisher.room == 3


def test_acknowledged_messages_are_not_sent_again() -> None:
    broker = _Broker(acknowledges=True)
    publisher = MqttPublisher(broker, "t", qos=1, window=10)  # type: ignore[arg-type]
    publisher.publish([b"a", b"b"])
    publisher.drain(timeout_s=1.0)
    again = _Broker()
    assert publisher.resume(again) == 0  # type: ignore[arg-type]
    assert again.sent == []


def test_acknowledgements_name_each_message_by_its_publishing_number_across_a_resume() -> None:
    numbers: list[int] = []
    first = _Broker(fail_after_sends=1)
    publisher = MqttPublisher(
        first,  # type: ignore[arg-type]
        "t",
        qos=1,
        window=3,
        on_acknowledged=numbers.extend,
    )
    with pytest.raises(ConnectionLost):
        publisher.publish([f"m{i}".encode() for i in range(5)])
    assert numbers == []  # nothing was acknowledged on the lost connection

    second = _Broker(acknowledges=True)
    publisher.resume(second)  # type: ignore[arg-type]
    publisher.publish([b"m5"])
    publisher.drain(timeout_s=1.0)
    assert sorted(numbers) == [0, 1, 2, 3, 4, 5]  # each once: 0-2 sent twice, acknowledged once
    assert [p.payload for p in second.sent] == [f"m{i}".encode() for i in range(6)]
