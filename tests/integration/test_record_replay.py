"""`statestream record mqtt` and `statestream replay` on the real Mosquitto and Kafka.

- Traffic a test publisher sends (spaces and non-ASCII in topics, binary and multi-line
  payloads) is recorded byte for byte; replayed at speed 1 under another root and recorded
  again, it keeps the original spacing within 50 ms at p99 and every byte.
- Copies replayed side by side are other machines, the original's bytes unchanged.
- A small HFP dump in HSL's format replays through `connect mqtt` into the positions topic, and
  straight to Kafka as two copies (other operators).

A recording replayed through `connect mqtt`, `run join` and `run geo`: test_replay_same_results.py.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from statestream.config import Settings, settings_environment
from statestream.ingest import SAMPLE_FILE, RawEvent, file_lines
from statestream.ingest.connector_process import ConnectorProcess
from statestream.ingest.hfp import VehiclePositionProcessor
from statestream.ingest.mqtt import forget_session
from statestream.ingest.vehicle_positions import vehicle_codec_for
from tests.integration.geo_support import vehicle_connector_settings
from tests.integration.ingest_support import read_records, wait_for_records
from tests.integration.recording_support import (
    RecorderProcess,
    RecorderThread,
    iso,
    messages_of,
    publish_timed,
    spacing_p99_s,
    timed_traffic,
    wait_for_messages,
)
from tests.support import run_cli

pytestmark = pytest.mark.integration

SPACING_P99_S = 0.05  # the bar: the replay keeps the recording's spacing within this

# A small dump in HSL's format, written by hand: a headsign with spaces and non-ASCII, a
# subcontracted trip (topic operator 0018, payload oper 6), a tram without a GPS fix, a bus at the
# end of its line (next stop EOL)
HFP_DUMP_FILE = Path(__file__).parent / "data" / "hfp-dump.txt"
HFP_DUMP = HFP_DUMP_FILE.read_text(encoding="utf-8")


@pytest.fixture
def sessions(local_services: Settings, unique_name: str) -> Iterator[list[str]]:
    """Client ids of this test's persistent sessions, removed from the broker at the end."""
    client_ids: list[str] = []
    yield client_ids
    for client_id in client_ids:
        forget_session(local_services.mqtt, client_id)


def test_recorded_traffic_replays_with_its_spacing_and_its_bytes(
    local_services: Settings, unique_name: str, sessions: list[str], tmp_path: Path
) -> None:
    settings, root = local_services, f"statestream/test/{unique_name}"
    first, second = tmp_path / "in.log", tmp_path / "out.log"
    sessions += [f"{unique_name}-in", f"{unique_name}-out"]
    traffic = timed_traffic(root)
    recorder = RecorderProcess(
        settings, tmp_path / "record.log", "--topic", f"{root}/in/#", "--to", str(first),
        "--client-id", sessions[0], "--report-every", "0",
    )  # fmt: skip
    try:
        sent = publish_timed(settings, f"{unique_name}-publisher", traffic)
        wait_for_messages(first, len(traffic))
    finally:
        assert recorder.stop() == 0, recorder.output()
    assert "recorded 120 messages" in recorder.output()
    assert [path.name for path in tmp_path.glob("in.*")] == ["in.00001.log.gz"]
    recorded = messages_of(first)
    assert [(m.topic, m.payload) for m in recorded] == [(t, p) for _, t, p in traffic]
    assert spacing_p99_s(sent, [m.received_us / 1e6 for m in recorded]) <= SPACING_P99_S

    again = RecorderThread(settings, f"{unique_name}-out/#", second, sessions[1])
    try:
        replay = run_cli(
            "replay", str(first), "--topic-root", f"{unique_name}-out", "--max-lag", "0.05",
            env=settings_environment(settings), timeout_s=120,
        )  # fmt: skip
        assert replay.exit_code == 0, replay.stderr
        again.wait_for(len(traffic))
    finally:
        again.close()
    assert "replayed 120 messages" in replay.stdout and "held" in replay.stdout
    replayed = messages_of(second)
    assert [(m.topic, m.payload) for m in replayed] == [
        (f"{unique_name}-out/{m.topic}", m.payload) for m in recorded
    ]
    spacing = spacing_p99_s(
        [m.received_us / 1e6 for m in recorded], [m.received_us / 1e6 for m in replayed]
    )
    assert spacing <= SPACING_P99_S, f"p99 spacing error {spacing * 1000:.1f} ms"


def test_copies_replay_side_by_side_as_other_machines(
    local_services: Settings, unique_name: str, sessions: list[str], tmp_path: Path
) -> None:
    rows = list(file_lines(SAMPLE_FILE))[:5]
    recording = tmp_path / "machines.log"
    start = 1_795_587_330_000_000
    recording.write_bytes(
        b"".join(
            f"{iso(start + i * 10_000)} machine/states ".encode() + row + b"\n"
            for i, row in enumerate(rows)
        )
    )
    sessions.append(f"{unique_name}-copies")
    recorder = RecorderThread(
        local_services, f"{unique_name}/#", tmp_path / "copies.log", sessions[0]
    )
    try:
        replay = run_cli(
            "replay", str(recording), "--copies", "2", "--topic-root", unique_name,
            env=settings_environment(local_services), timeout_s=120,
        )  # fmt: skip
        assert replay.exit_code == 0, replay.stderr
        recorder.wait_for(10)
    finally:
        recorder.close()
    assert "replayed 10 messages" in replay.stdout
    messages = messages_of(tmp_path / "copies.log")
    things = Counter(json.loads(m.payload)["Thing"] for m in messages)
    assert things == {"R0815": 5, "R0815-copy1": 5}
    originals = [m.payload for m in messages if b'"R0815"' in m.payload]
    assert originals == rows  # copy 0: the recorded bytes
    assert {m.topic for m in messages} == {f"{unique_name}/machine/states"}


@pytest.fixture
def vehicles(local_services: Settings, unique_name: str) -> Iterator[Settings]:
    """This test's vehicle topics, and a connector whose only processor takes its HFP root."""
    yield from vehicle_connector_settings(local_services, unique_name)


def _dump_messages(text: str, root: str) -> list[tuple[str, bytes]]:
    """(topic under `root`, payload) of each line of a dump, cut where the payload starts."""
    out = []
    for line in text.splitlines():
        _, rest = line.split(" ", 1)
        topic, payload = rest.split(" {", 1)
        out.append((root + topic, b"{" + payload.encode()))
    return out


def _positions(settings: Settings) -> dict[str, list]:
    codec, per_key = vehicle_codec_for(settings.ingest.envelope), {}
    for key, value in read_records(settings, settings.topics.vehicle_positions):
        position, _ = codec.decode(value)
        assert key == position.key
        per_key.setdefault(key, []).append(position)
    return per_key


def _expected(messages: list[tuple[str, bytes]]) -> dict[str, list]:
    processor, per_key = VehiclePositionProcessor(), {}
    for topic, payload in messages:
        [position] = processor.process(RawEvent(payload, topic, 0))
        per_key.setdefault(position.key, []).append(position)
    return per_key


def test_an_hfp_dump_replays_through_connect_mqtt_into_the_positions_topic(
    vehicles: Settings, tmp_path: Path
) -> None:
    dump, root = HFP_DUMP_FILE, vehicles.ingest.client_id
    connector = ConnectorProcess(vehicles, tmp_path / "connector.log", "--report-every", "0")
    connector.start()
    try:
        replay = run_cli(
            "replay", str(dump), "--topic-root", root,
            env=settings_environment(vehicles), timeout_s=120,
        )  # fmt: skip
        assert replay.exit_code == 0, replay.stderr
        landed = wait_for_records(vehicles, vehicles.topics.vehicle_positions, 8)
    finally:
        assert connector.stop() == 0, connector.output()
    assert landed == 8
    expected = _expected(_dump_messages(HFP_DUMP, root))
    assert set(expected) == {"18/423", "40/406", "22/1234"}
    assert _positions(vehicles) == expected
    assert "1 vehicle positions without a GPS fix" in connector.output()


def test_an_hfp_dump_replays_straight_to_kafka_as_two_copies(
    vehicles: Settings, tmp_path: Path
) -> None:
    dump, root = HFP_DUMP_FILE, vehicles.ingest.client_id
    replay = run_cli(
        "replay", str(dump), "--to", "kafka", "--copies", "2", "--speed", "0",
        "--topic-root", root, env=settings_environment(vehicles), timeout_s=120,
    )  # fmt: skip
    assert replay.exit_code == 0, replay.stderr
    assert "16 records, 0 dead letters" in replay.stdout
    positions = _positions(vehicles)
    expected = _expected(_dump_messages(HFP_DUMP, root))
    assert {k: v for k, v in positions.items() if k in expected} == expected
    copies = {k: v for k, v in positions.items() if k not in expected}
    assert set(copies) == {"10018/423", "10040/406", "10022/1234"}
    for key, series in copies.items():
        oper, veh = key.split("/")
        original = expected[f"{int(oper) - 10_000}/{veh}"]
        assert [p._replace(oper=p.oper - 10_000) for p in series] == original
