"""MQTT 3.1.1 packets as bytes: the few statestream sends and the ones it reads back.

Only what a publisher and a subscriber of one topic need: CONNECT/CONNACK, PUBLISH with its QoS 1
and 2 acknowledgements, SUBSCRIBE/SUBACK, PINGREQ/PINGRESP and DISCONNECT. Pure functions on
bytes, so whole batches of packets are built into one buffer and sent with one system call, and a
received buffer is cut into packets without a read per byte.

    >>> packet = publish_packet("machine/states", b'{"Thing": "R1"}', qos=1, packet_id=7)
    >>> reader = PacketReader()
    >>> [(p.kind, p.topic, p.packet_id, p.payload) for p in reader.feed(packet)]
    [(3, 'machine/states', 7, b'{"Thing": "R1"}')]
"""

from __future__ import annotations

import struct
from typing import NamedTuple

CONNECT, CONNACK, PUBLISH, PUBACK, PUBREC, PUBREL, PUBCOMP = 1, 2, 3, 4, 5, 6, 7
SUBSCRIBE, SUBACK, PINGREQ, PINGRESP, DISCONNECT = 8, 9, 12, 13, 14

CONNACK_REASONS = {
    0: "accepted",
    1: "unacceptable protocol version",
    2: "client identifier rejected",
    3: "server unavailable",
    4: "bad user name or password",
    5: "not authorized",
}
MAX_REMAINING_LENGTH = 268_435_455
TOPIC_CACHE = 4_096  # decoded topic names kept; HFP's change with every stop and cell passed
PINGREQ_PACKET = b"\xc0\x00"
DISCONNECT_PACKET = b"\xe0\x00"

_U16 = struct.Struct(">H")


class ProtocolError(Exception):
    """The broker sent something that is not MQTT 3.1.1."""


class Packet(NamedTuple):
    """One packet from the broker. `topic` and `payload` are set for PUBLISH only."""

    kind: int
    flags: int
    packet_id: int = 0
    topic: str = ""
    payload: bytes = b""
    body: bytes = b""

    @property
    def qos(self) -> int:
        return (self.flags >> 1) & 3

    @property
    def dup(self) -> bool:
        return bool(self.flags & 8)


def _remaining_length(length: int) -> bytes:
    if length > MAX_REMAINING_LENGTH:
        raise ValueError(f"an MQTT packet holds at most {MAX_REMAINING_LENGTH} bytes, not {length}")
    out = bytearray()
    while True:
        digit, length = length & 0x7F, length >> 7
        out.append(digit | 0x80 if length else digit)
        if not length:
            return bytes(out)


def _string(text: str) -> bytes:
    data = text.encode()
    return _U16.pack(len(data)) + data


def connect_packet(
    client_id: str,
    *,
    username: str | None,
    password: str | None,
    clean_session: bool,
    keepalive_s: int,
) -> bytes:
    """CONNECT with protocol level 4 (MQTT 3.1.1); a persistent session when not clean."""
    flags = (0x80 if username is not None else 0) | (0x40 if password is not None else 0)
    flags |= 0x02 if clean_session else 0
    body = _string("MQTT") + bytes([4, flags]) + _U16.pack(keepalive_s) + _string(client_id)
    if username is not None:
        body += _string(username)
    if password is not None:
        body += _string(password)
    return bytes([CONNECT << 4]) + _remaining_length(len(body)) + body


def publish_packet(
    topic: str | bytes, payload: bytes, *, qos: int, packet_id: int = 0, dup: bool = False
) -> bytes:
    """PUBLISH of one payload; `topic` may be given already encoded as its length-prefixed bytes."""
    head = topic if isinstance(topic, bytes) else _string(topic)
    if qos:
        head += _U16.pack(packet_id)
    first = (PUBLISH << 4) | (qos << 1) | (0x08 if dup else 0)
    return bytes([first]) + _remaining_length(len(head) + len(payload)) + head + payload


def encoded_topic(topic: str) -> bytes:
    """A topic as the length-prefixed bytes `publish_packet` takes, to encode it once per run."""
    return _string(topic)


def ack_packet(kind: int, packet_id: int) -> bytes:
    """PUBACK, PUBREC, PUBREL or PUBCOMP of one packet id."""
    first = (kind << 4) | (0x02 if kind == PUBREL else 0)
    return bytes([first, 2]) + _U16.pack(packet_id)


def puback_packets(packet_ids: list[int]) -> bytes:
    """The PUBACKs of many messages, in the given order, as one buffer."""
    return b"".join(b"\x40\x02" + _U16.pack(packet_id) for packet_id in packet_ids)


def subscribe_packet(packet_id: int, topic: str, qos: int) -> bytes:
    body = _U16.pack(packet_id) + _string(topic) + bytes([qos])
    return bytes([(SUBSCRIBE << 4) | 0x02]) + _remaining_length(len(body)) + body


class PacketReader:
    """Cuts the bytes received from the broker into packets; keeps an incomplete tail for later.

    The topic names of the last messages are kept decoded (a machine's come again and again),
    at most `TOPIC_CACHE` of them: a vehicle's HFP topic names its next stop and its cell, so a
    fleet's distinct topics never stop growing, and an unbounded cache is a leak."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._topics: dict[bytes, str] = {}

    def feed(self, data: bytes) -> list[Packet]:
        """Add received bytes; return every packet now complete, in order."""
        buffer = self._buffer
        buffer += data
        packets: list[Packet] = []
        position, end = 0, len(buffer)
        while end - position >= 2:
            length, shift, cursor, header_done = 0, 0, position + 1, False
            while cursor < end:
                byte = buffer[cursor]
                cursor += 1
                length |= (byte & 0x7F) << shift
                if not byte & 0x80:
                    header_done = True
                    break
                shift += 7
                if shift >= 28:
                    raise ProtocolError("remaining length longer than four bytes")
            if not header_done or cursor + length > end:
                break
            packets.append(self._decode(buffer[position], buffer, cursor, cursor + length))
            position = cursor + length
        del buffer[:position]
        return packets

    def _decode(self, first: int, buffer: bytearray, start: int, stop: int) -> Packet:
        kind, flags = first >> 4, first & 0x0F
        if kind == PUBLISH:
            topic_end = start + 2 + ((buffer[start] << 8) | buffer[start + 1])
            topic = self._topics.get(bytes(buffer[start + 2 : topic_end]))
            if topic is None:
                if len(self._topics) >= TOPIC_CACHE:
                    self._topics.clear()
                raw_topic = bytes(buffer[start + 2 : topic_end])
                topic = self._topics[raw_topic] = raw_topic.decode("utf-8", "replace")
            packet_id = 0
            if (flags >> 1) & 3:
                packet_id = (buffer[topic_end] << 8) | buffer[topic_end + 1]
                topic_end += 2
            return Packet(kind, flags, packet_id, topic, bytes(buffer[topic_end:stop]))
        body = bytes(buffer[start:stop])
        if kind in (PUBACK, PUBREC, PUBREL, PUBCOMP, SUBACK):
            if len(body) < 2:
                raise ProtocolError(f"packet type {kind} without a packet id")
            return Packet(kind, flags, _U16.unpack_from(body)[0], body=body)
        if kind in (CONNACK, PINGRESP):
            return Packet(kind, flags, body=body)
        raise ProtocolError(f"unexpected packet type {kind} from the broker")
