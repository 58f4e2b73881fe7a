"""The recorder against a stand-in broker connection: every message becomes its line, each
acknowledged only once its line is on disk, in receipt order; acknowledgements due on a lost
connection are dropped (the broker sends those again); a topic no line holds is counted."""

from __future__ import annotations

import threading
from pathlib import Path

from statestream.config import Settings
from statestream.ingest.mqtt import ConnectionLost, wire
from statestream.ingest.recording import (
    MqttRecorder,
    RecordingReader,
    RecordingWriter,
    Rotation,
    recorder_client_id,
)


class _Broker:
    """Hands out batches of PUBLISH packets, one batch per `receive` (then sets `stop`);
    keeps what the recorder acknowledged and whether each line was in the file by then."""

    address = "test"

    def __init__(self, batches: list[list[wire.Packet] | Exception], recording: Path) -> None:
        self.batches = batches
        self.recording = recording
        self.acknowledged: list[int] = []
        self.acknowledged_before_on_disk: list[int] = []
        self.stop = threading.Event()
        self.subscribed: list[tuple[str, int]] = []
        self.closed = False

    def connect(self) -> bool:
        return bool(self.subscribed)

    def subscribe(self, topic: str, qos: int) -> None:
        self.subscribed.append((topic, qos))

    def receive(self, _timeout_s: float) -> list[wire.Packet]:
        if not self.batches:
            self.stop.set()
            return []
        batch = self.batches.pop(0)
        if isinstance(batch, Exception):
            raise batch
        return batch

    def acknowledge(self, packet_ids: list[int]) -> None:
        on_disk = b"".join(p.read_bytes() for p in self.recording.parent.glob("*.log"))
        for packet_id in packet_ids:
            if b'{"n": %d}\n' % packet_id not in on_disk:
                self.acknowledged_before_on_disk.append(packet_id)
        self.acknowledged += packet_ids

    def close(self) -> None:
        self.closed = True


def _publish(packet_id: int, topic: str = "a b/ä", payload: bytes | None = None) -> wire.Packet:
    qos = 1 if packet_id else 0
    body = payload if payload is not None else b'{"n": %d}' % packet_id
    return wire.Packet(wire.PUBLISH, qos << 1, packet_id, topic, body)


def _recorder(settings: Settings, path: Path, brokers: list[_Broker]) -> MqttRecorder:
    recorder = MqttRecorder(
        settings, ["#", "a/+"], RecordingWriter(path, Rotation(compress=False)), client_id="test"
    )
    connections = iter(brokers)
    recorder._new_connection = lambda: next(connections)  # type: ignore[method-assign]
    return recorder


def test_each_message_is_acknowledged_in_order_only_once_its_line_is_on_disk(
    tmp_path: Path,
) -> None:
    path = tmp_path / "feed.log"
    batches: list = [[_publish(1), _publish(2)], [], [_publish(0), _publish(3)], [_publish(4)]]
    broker = _Broker(batches, path)
    recorder = _recorder(Settings(), path, [broker])
    recorder.run(broker.stop)
    recorder.writer.close()
    assert broker.subscribed == [("#", 1), ("a/+", 1)]
    assert broker.acknowledged == [1, 2, 3, 4] and broker.closed
    assert broker.acknowledged_before_on_disk == []
    messages = list(RecordingReader([path]).messages())
    assert [m.payload for m in messages] == [b'{"n": %d}' % n for n in (1, 2, 0, 3, 4)]
    assert {m.topic for m in messages} == {"a b/ä"}
    assert recorder.counts.messages == 5 and recorder.counts.payload_bytes == 5 * 8


def test_acknowledgements_due_on_a_lost_connection_are_dropped(tmp_path: Path) -> None:
    path = tmp_path / "feed.log"
    stop = threading.Event()
    lost = _Broker([[_publish(1)], ConnectionLost("cut")], path)
    again = _Broker([[_publish(1), _publish(2)]], path)  # the broker sends 1 again
    again.stop = stop
    recorder = _recorder(Settings(), path, [lost, again])
    recorder.run(stop)
    recorder.writer.close()
    assert again.acknowledged == [1, 2]
    assert recorder.counts.reconnects == 1
    payloads = [m.payload for m in RecordingReader([path]).messages()]
    assert payloads == [b'{"n": 1}', b'{"n": 1}', b'{"n": 2}']  # at least once


def test_a_topic_no_line_can_hold_is_counted_and_acknowledged(tmp_path: Path) -> None:
    path = tmp_path / "feed.log"
    broker = _Broker([[_publish(1, topic="bad\ntopic"), _publish(2)]], path)
    recorder = _recorder(Settings(), path, [broker])
    recorder.run(broker.stop)
    recorder.writer.close()
    assert broker.acknowledged == [1, 2]
    assert recorder.counts.unrecordable == 1 and recorder.counts.messages == 1


def test_the_default_client_id_is_one_per_recording(tmp_path: Path) -> None:
    one = recorder_client_id(tmp_path / "feed.log")
    assert one == recorder_client_id(tmp_path / "." / "feed.log")
    assert one != recorder_client_id(tmp_path / "other.log")
    assert one.startswith("statestream-record-")
