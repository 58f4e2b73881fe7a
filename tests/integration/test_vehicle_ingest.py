"""Both use cases through one `connect mqtt` on the real Mosquitto and Kafka: simulated vehicles
and machine rows land on their own topics with their own keys, bad vehicle messages in the
dead-letter topic with their kind."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from statestream.config import Settings
from statestream.ingest import SAMPLE_FILE, RawEvent, codec_for, file_lines
from statestream.ingest.connector_process import ConnectorProcess
from statestream.ingest.hfp import TOPIC_FILTER, TOPIC_PREFIX, VehiclePositionProcessor
from statestream.ingest.machine_delivery import publish_to_mqtt
from statestream.ingest.machine_simulator import Pacer
from statestream.ingest.vehicle_delivery import VehicleSimulation, run_vehicle_simulation
from statestream.ingest.vehicle_positions import vehicle_codec_for
from tests.fuzz_inputs import VP_EVENT, assert_each_dead_lettered, bad_values
from tests.integration.ingest_support import (
    cleanup,
    delete_topics,
    expected_records,
    ingest_settings,
    publish,
    read_records,
    wait_for_records,
)
from tests.support import granted

pytestmark = pytest.mark.integration

ROWS = list(file_lines(SAMPLE_FILE))[:200]
SIMULATION = VehicleSimulation(vehicles=12, duration_s=40, seed=5, start_ms=1_795_587_300_000)


@pytest.fixture
def both(local_services: Settings, unique_name: str) -> Iterator[Settings]:
    """This test's topics (protobuf envelope) and processors: its machine topic → machine, its
    HFP root → vehicles."""
    settings = ingest_settings(local_services, unique_name, envelope="protobuf")
    vehicles = f"{unique_name}.vehicles"
    admin = AdminClient(settings.kafka.client_config())
    for future in admin.create_topics([NewTopic(vehicles, 3, 1)]).values():
        future.result()
    processors = {settings.mqtt.topic: "machine", unique_name + TOPIC_FILTER: "vehicles"}
    settings = settings.model_copy(
        update={
            "topics": settings.topics.model_copy(update={"vehicle_positions": vehicles}),
            "ingest": settings.ingest.model_copy(update={"processors": processors}),
        }
    )
    granted(settings)
    yield settings
    cleanup(settings)
    delete_topics(settings, vehicles)


def test_vehicles_and_machines_through_one_connector(both: Settings, tmp_path: Path) -> None:
    simulation = dataclasses.replace(SIMULATION, root=both.ingest.client_id)  # the test's name
    messages = list(simulation.messages())
    bad = _bad_vehicle_messages(simulation.root)
    connector = ConnectorProcess(both, tmp_path / "connector.log", "--report-every", "0")
    connector.start()
    try:
        publish(both, ROWS)
        run_vehicle_simulation(both, simulation, target="mqtt")
        publish_to_mqtt(both, None, iter(bad.values()), 1, Pacer(None), None)
        wait_for_records(both, both.topics.vehicle_positions, len(messages))
        wait_for_records(both, both.topics.dead_letter, len(bad))
        wait_for_records(both, both.topics.machine_data, _count(expected_records(ROWS)))
    finally:
        assert connector.stop() == 0, connector.output()

    positions = _positions_by_key(read_records(both, both.topics.vehicle_positions))
    assert positions == _expected_positions(messages)
    machine = codec_for("protobuf")
    per_key: dict[str, list] = {}
    for key, value in read_records(both, both.topics.machine_data):
        record, _ = machine.decode(value)
        assert key == record.key
        per_key.setdefault(key, []).append((record.phenomenon_time_ms, record.result))
    assert per_key == expected_records(ROWS)

    dead = [json.loads(value) for _, value in read_records(both, both.topics.dead_letter)]
    assert [d["kind"] for d in dead] == list(bad)
    for letter, (topic, payload) in zip(dead, bad.values(), strict=True):
        assert letter["stage"] == "ingest" and letter["reason"]
        assert letter["source_topic"] == topic and letter["raw"].encode() == payload
    assert "dead letters (hfp_bad_json 1" in connector.output()


def test_eleven_kinds_of_bad_vp_payloads_are_dead_lettered_between_good_ones(
    both: Settings, tmp_path: Path
) -> None:
    simulation = dataclasses.replace(SIMULATION, root=both.ingest.client_id, duration_s=10)
    messages = list(simulation.messages())
    topic = messages[0][0]
    kinds = bad_values(VP_EVENT, time_field="tst", number_field="lat", wrap="VP")
    mixed: list[tuple[str, bytes]] = []
    for index, payload in enumerate(kinds.values()):
        mixed += [*messages[index * 10 : (index + 1) * 10], (topic, payload)]
    mixed += messages[len(kinds) * 10 :]
    connector = ConnectorProcess(both, tmp_path / "connector.log", "--report-every", "0")
    connector.start()
    try:
        publish_to_mqtt(both, None, iter(mixed), 1, Pacer(None), None)
        wait_for_records(both, both.topics.dead_letter, len(kinds))
        wait_for_records(both, both.topics.vehicle_positions, len(messages))
    finally:
        assert connector.stop() == 0, connector.output()
    dead = [json.loads(value) for _, value in read_records(both, both.topics.dead_letter)]
    assert assert_each_dead_lettered(dead, kinds, "ingest", extra=("kind",)) == []
    positions = _positions_by_key(read_records(both, both.topics.vehicle_positions))
    assert positions == _expected_positions(messages)


def _bad_vehicle_messages(root: str) -> dict[str, tuple[str, bytes]]:
    topic = f"{root}{TOPIC_PREFIX}/bus/0022/01234/1052/1/Kamppi/08:15/1130446/0/60;24/19/74/11"

    def vp(**change: object) -> bytes:
        return json.dumps({"VP": {**VP_EVENT, **change}}).encode()

    return {
        "hfp_bad_json": (topic, b'{"VP": {"oper": 22, "veh"'),
        "hfp_bad_topic": (f"{root}{TOPIC_PREFIX}/bus/0022", vp()),
        "hfp_bad_time": (topic, vp(tst="not a time")),
        "hfp_bad_position": (topic, vp(lat=95.0)),
        "hfp_not_vp": (topic, json.dumps({"DOO": VP_EVENT}).encode()),
        "hfp_no_vehicle": (topic.replace("/01234/", "/1234a/"), vp()),  # the topic's vehicle
    }


def _positions_by_key(records: list[tuple[str | None, bytes]]) -> dict[str, list]:
    codec, per_key = vehicle_codec_for("protobuf"), {}
    for key, value in records:
        position, ingestion_ms = codec.decode(value)
        assert key == position.key and ingestion_ms
        per_key.setdefault(key, []).append(position)
    return per_key


def _expected_positions(messages: list[tuple[str, bytes]]) -> dict[str, list]:
    processor, per_key = VehiclePositionProcessor(), {}
    for topic, payload in messages:
        [position] = processor.process(RawEvent(payload, topic, 0))
        per_key.setdefault(position.key, []).append(position)
    return per_key


def _count(expected: dict[str, list]) -> int:
    return sum(len(series) for series in expected.values())
