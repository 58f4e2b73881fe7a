"""Simulator → Mosquitto → connector → Kafka on the real services: every record, in order per key;
nothing lost when the connector is killed; every bad message in the dead-letter topic."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from statestream.codecs.bad_input import DEAD_LETTER_FIELDS
from statestream.config import Settings
from statestream.ingest import SAMPLE_FILE, SimulationPlan, file_lines, run_simulation
from statestream.ingest.connector_process import ConnectorProcess
from tests.fuzz_inputs import assert_each_dead_lettered, bad_values
from tests.integration.ingest_support import (
    CuttableProxy,
    cleanup,
    connector_thread,
    expected_records,
    ingest_settings,
    publish,
    read_records,
    topic_size,
    wait_for_records,
)

pytestmark = pytest.mark.integration

LINES = list(file_lines(SAMPLE_FILE))


@pytest.fixture
def ingest(local_services: Settings, unique_name: str) -> Iterator[Settings]:
    test_settings = ingest_settings(
        local_services, unique_name, max_payload_bytes=4096, dead_letter_raw_bytes=1000
    )
    yield test_settings
    cleanup(test_settings)


def _per_key(records: list[tuple[str | None, bytes]]) -> dict[str, list[tuple[float, float]]]:
    per_key: dict[str, list[tuple[float, float]]] = {}
    for key, value in records:
        record = json.loads(value)
        assert key == f"{record['thing']}.{record['quantity']}"
        per_key.setdefault(key, []).append((record["phenomenonTime"], record["result"]))
    return per_key


def _count(per_key: dict[str, list]) -> int:
    return sum(len(series) for series in per_key.values())


def test_every_row_of_the_sample_arrives_as_its_records_in_order_per_key(
    ingest: Settings,
) -> None:
    with connector_thread(ingest) as running:
        publish(ingest, LINES)
        wait_for_records(ingest, ingest.topics.machine_data, 19_825)
    assert running.pipeline.counts.events == 5000
    records = read_records(ingest, ingest.topics.machine_data)
    assert len(records) == 19_825
    assert _per_key(records) == expected_records(LINES)
    assert topic_size(ingest, ingest.topics.dead_letter) == 0


@pytest.mark.parametrize("qos", [0, 2])
def test_the_simulator_publishes_at_qos_0_and_2(ingest: Settings, qos: int) -> None:
    rows = LINES[:300]
    with connector_thread(ingest):
        publish(ingest, rows, qos=qos)
        wait_for_records(ingest, ingest.topics.machine_data, _count(expected_records(rows)))
    assert _per_key(read_records(ingest, ingest.topics.machine_data)) == expected_records(rows)


def test_a_killed_connector_loses_nothing(ingest: Settings, tmp_path: Path) -> None:
    plan = SimulationPlan(lines=LINES, loops=4)  # 20,000 rows, each pass at new times
    expected = expected_records(list(plan.payloads()))
    total = _count(expected)
    connector = ConnectorProcess(ingest, tmp_path / "connector.log", "--report-every", "0")
    connector.start()
    simulator = threading.Thread(
        target=run_simulation, args=(ingest, plan), kwargs={"rate": 4000.0, "qos": 1}
    )
    simulator.start()
    try:
        assert wait_for_records(ingest, ingest.topics.machine_data, total // 4) < total
        connector.kill()  # SIGKILL while the simulator publishes
        at_kill = topic_size(ingest, ingest.topics.machine_data)
        time.sleep(1.0)  # the broker queues the messages of the persistent session meanwhile
        connector.start()
        simulator.join(120)
        wait_for_records(ingest, ingest.topics.machine_data, total, timeout_s=120)
    finally:
        connector.stop()
        simulator.join(10)
    assert 0 < at_kill < total
    assert "session resumed" in connector.output()
    per_key = _per_key(read_records(ingest, ingest.topics.machine_data))
    assert per_key.keys() == expected.keys()
    for key, series in per_key.items():  # duplicates allowed; first arrivals in row order
        assert list(dict.fromkeys(series)) == expected[key], key


def test_the_connector_reconnects_after_a_network_cut_and_loses_nothing(ingest: Settings) -> None:
    plan = SimulationPlan(lines=LINES, loops=2)  # 10,000 rows
    expected = expected_records(list(plan.payloads()))
    total = _count(expected)
    proxy = CuttableProxy(ingest.mqtt.host, ingest.mqtt.client_port)  # TLS passes through
    to_proxy = {"host": "127.0.0.1", "port": proxy.port, "tls_port": proxy.port}
    through_proxy = ingest.model_copy(update={"mqtt": ingest.mqtt.model_copy(update=to_proxy)})
    try:
        with connector_thread(through_proxy) as running:
            simulator = threading.Thread(
                target=run_simulation, args=(ingest, plan), kwargs={"rate": 4000.0}
            )
            simulator.start()
            wait_for_records(ingest, ingest.topics.machine_data, total // 3)
            proxy.cut()
            simulator.join(60)
            wait_for_records(ingest, ingest.topics.machine_data, total)
        assert running.connector.reconnects == 1
    finally:
        proxy.close()
    per_key = _per_key(read_records(ingest, ingest.topics.machine_data))
    for key, series in per_key.items():
        assert list(dict.fromkeys(series)) == expected[key], key
    assert per_key.keys() == expected.keys()


def test_eleven_kinds_of_bad_input_are_dead_lettered_between_good_rows(ingest: Settings) -> None:
    row = {"Thing": "R0815", "Timestamp": 1554096380468, "vaLoad_C11": 1.5}
    kinds = bad_values(row, time_field="Timestamp", number_field="vaLoad_C11")
    good = LINES[:110]
    lines: list[bytes] = []
    for index, payload in enumerate(kinds.values()):
        lines += [*good[index * 10 : (index + 1) * 10], payload]
    with connector_thread(ingest) as running:
        publish(ingest, lines)
        wait_for_records(ingest, ingest.topics.dead_letter, len(kinds))
        wait_for_records(ingest, ingest.topics.machine_data, _count(expected_records(good)))
    assert sum(running.pipeline.counts.rejected.values()) == len(kinds)
    dead = [json.loads(value) for _, value in read_records(ingest, ingest.topics.dead_letter)]
    assert assert_each_dead_lettered(dead, kinds, "ingest", extra=("kind",)) == []
    assert _per_key(read_records(ingest, ingest.topics.machine_data)) == expected_records(good)


def test_each_kind_of_bad_message_goes_to_the_dead_letter_topic(ingest: Settings) -> None:
    row = {"Thing": "R0815", "Timestamp": 1554096380468, "vaLoad_C11": 1.5}
    bad = {
        "bad_json": b'{"Thing": "R0815", "Timestamp": ',
        "missing_thing": json.dumps({**row, "Thing": None}).encode(),
        "missing_timestamp": json.dumps(
            {k: v for k, v in row.items() if k != "Timestamp"}
        ).encode(),
        "bad_value": json.dumps({**row, "vaLoad_C11": "high"}).encode(),
        "impossible_time": json.dumps({**row, "Timestamp": 12}).encode(),
        "oversize": json.dumps({**row, "id": "x" * 5000}).encode(),
    }
    in_seconds = json.dumps({**row, "Timestamp": 1554096390.5, "vaLoad_C11": 2.5}).encode()
    in_micros = json.dumps({**row, "Timestamp": 1554096400468123, "vaLoad_C11": 3.5}).encode()
    good = [*LINES[:60], in_seconds, in_micros]
    lines: list[bytes] = []
    for index, payload in enumerate(bad.values()):
        lines += [*good[index * 10 : (index + 1) * 10], payload]
    lines += good[60:]
    with connector_thread(ingest) as running:
        publish(ingest, lines)
        wait_for_records(ingest, ingest.topics.dead_letter, len(bad))
        wait_for_records(ingest, ingest.topics.machine_data, _count(expected_records(good)))
    assert dict(running.pipeline.counts.rejected) == {kind: 1 for kind in bad}
    dead = [json.loads(value) for _, value in read_records(ingest, ingest.topics.dead_letter)]
    assert [d["kind"] for d in dead] == list(bad)
    for letter, (kind, payload) in zip(dead, bad.items(), strict=True):
        assert letter["source_topic"] == ingest.mqtt.topic
        assert list(letter) == [*DEAD_LETTER_FIELDS, "kind"] and letter["stage"] == "ingest"
        assert letter["reason"], kind
        assert letter["raw_bytes"] == len(payload)
        assert letter["raw"].encode() == payload[:1000]
        assert letter["truncated"] == (kind == "oversize")
    assert "exceeds the limit of 4,096 bytes" in dead[-1]["reason"]
    records = _per_key(read_records(ingest, ingest.topics.machine_data))
    assert records == expected_records(good)
    assert records["R0815.vaLoad_C11"][-2:] == [(1554096390500, 2.5), (1554096400468, 3.5)]
