"""MQTT 3.1.1 packets: what statestream sends is byte-exact, what it reads is cut correctly."""

from __future__ import annotations

import tracemalloc

import pytest

from statestream.ingest.mqtt import wire


def test_connect_packet_is_the_mqtt_3_1_1_layout() -> None:
    packet = wire.connect_packet(
        "c1", username="u", password="p", clean_session=False, keepalive_s=30
    )
    body = b"\x00\x04MQTT" + b"\x04" + b"\xc0" + b"\x00\x1e" + b"\x00\x02c1\x00\x01u\x00\x01p"
    assert packet == b"\x10" + bytes([len(body)]) + body
    clean = wire.connect_packet(
        "c1", username=None, password=None, clean_session=True, keepalive_s=5
    )
    assert clean[9] == 0x02  # connect flags: clean session only


@pytest.mark.parametrize("size", [0, 1, 100, 127, 128, 16_383, 16_384, 2_097_152])
def test_publish_round_trips_whatever_the_remaining_length(size: int) -> None:
    payload = bytes(range(256)) * (size // 256) + bytes(size % 256)
    packet = wire.publish_packet("machine/states", payload, qos=1, packet_id=513, dup=True)
    [read] = wire.PacketReader().feed(packet)
    assert (read.kind, read.qos, read.dup, read.packet_id) == (wire.PUBLISH, 1, True, 513)
    assert (read.topic, read.payload) == ("machine/states", payload)


def test_packets_split_anywhere_come_out_whole_and_in_order() -> None:
    stream = b"".join(
        wire.publish_packet("t", f"row {i}".encode() * (i * 40), qos=i % 2, packet_id=i + 1)
        for i in range(20)
    ) + wire.ack_packet(wire.PUBACK, 7)
    reader, packets = wire.PacketReader(), []
    for start in range(0, len(stream), 3):  # three bytes at a time
        packets += reader.feed(stream[start : start + 3])
    assert [p.payload for p in packets[:-1]] == [f"row {i}".encode() * (i * 40) for i in range(20)]
    assert [p.qos for p in packets[:-1]] == [i % 2 for i in range(20)]
    assert [p.packet_id for p in packets[:-1] if p.qos] == [i + 1 for i in range(20) if i % 2]
    assert (packets[-1].kind, packets[-1].packet_id) == (wire.PUBACK, 7)


def test_acknowledgements_and_subscribe() -> None:
    assert wire.puback_packets([1, 258]) == b"\x40\x02\x00\x01\x40\x02\x01\x02"
    assert wire.ack_packet(wire.PUBREL, 5) == b"\x62\x02\x00\x05"  # PUBREL has flags 0010
    assert wire.subscribe_packet(1, "a/b", 1) == b"\x82\x08\x00\x01\x00\x03a/b\x01"
    [suback, connack] = wire.PacketReader().feed(b"\x90\x03\x00\x01\x01" + b"\x20\x02\x01\x00")
    assert (suback.kind, suback.packet_id, suback.body[2]) == (wire.SUBACK, 1, 1)
    assert (connack.kind, connack.body) == (wire.CONNACK, b"\x01\x00")


def test_what_is_not_mqtt_from_a_broker_is_a_protocol_error() -> None:
    with pytest.raises(wire.ProtocolError):
        wire.PacketReader().feed(b"\x10\x00")  # CONNECT comes from clients, not brokers
    with pytest.raises(wire.ProtocolError):
        wire.PacketReader().feed(b"\x30\xff\xff\xff\xff\x01")  # remaining length of 5 bytes


def test_a_fleet_of_ever_new_topics_keeps_the_reader_small() -> None:
    """HFP topics name the next stop and the cell: a fleet's never repeat for long. The reader
    decodes each right and keeps its memory bounded (the soak's connector grew without end)."""
    reader = wire.PacketReader()
    hfp = "/hfp/v2/journey/ongoing/vp/bus/0018/{:05}/2550/2/Itäkeskus/7:20/1454125/4/60;24/19/7/3"

    def feed(first: int, count: int) -> None:
        for n in range(first, first + count):
            packet = wire.publish_packet(hfp.format(n), b"{}", qos=1, packet_id=n % 65_535 + 1)
            [read] = reader.feed(packet)
            assert read.topic == hfp.format(n)

    feed(0, wire.TOPIC_CACHE)
    tracemalloc.start()
    feed(wire.TOPIC_CACHE, 10 * wire.TOPIC_CACHE)
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert held < wire.TOPIC_CACHE * 1_000  # ten times as many topics kept would be ~4x this
