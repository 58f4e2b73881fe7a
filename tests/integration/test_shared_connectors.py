"""`connect mqtt --instances 2` on the real Mosquitto and Kafka: two connectors in one MQTT shared
subscription forward each message once between them, both taking part; with one of them killed
with -9 while messages flow, the parent starts it again with its session and every message
reaches Kafka at least once; a smaller group after a larger one is refused."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from statestream.config import Settings, settings_environment
from statestream.ingest import SAMPLE_FILE, SimulationPlan, file_lines, run_simulation
from statestream.ingest.connector_group import member_client_id
from statestream.ingest.connector_process import ConnectorProcess
from statestream.ingest.mqtt import forget_session
from tests.integration.ingest_support import (
    cleanup,
    expected_records,
    ingest_settings,
    publish,
    read_records,
    topic_size,
    wait_for_records,
)
from tests.support import run_cli

pytestmark = pytest.mark.integration

LINES = list(file_lines(SAMPLE_FILE))
INSTANCES = 2


@pytest.fixture
def ingest(local_services: Settings, unique_name: str) -> Iterator[Settings]:
    """This test's topics and client id; the machine rows of its MQTT topic only (no HFP filter:
    the group is not to take vehicle messages others publish)."""
    test_settings = ingest_settings(local_services, unique_name)
    machine_only = {"processors": {test_settings.mqtt.topic: "machine"}}
    test_settings = test_settings.model_copy(
        update={"ingest": test_settings.ingest.model_copy(update=machine_only)}
    )
    yield test_settings
    for index in range(1, INSTANCES + 2):
        forget_session(test_settings.mqtt, member_client_id(test_settings.ingest.client_id, index))
    cleanup(test_settings)


def _group(settings: Settings, log: Path) -> ConnectorProcess:
    """`connect mqtt --instances 2` as its own process; `start` returns once both subscribed."""
    return ConnectorProcess(settings, log, "--instances", str(INSTANCES), "--report-every", "0")


def _records(settings: Settings) -> Counter[tuple[str, float, float]]:
    """(key, time, value) of every record on machine.data, with how often each came."""
    found: Counter[tuple[str, float, float]] = Counter()
    for key, value in read_records(settings, settings.topics.machine_data):
        record = json.loads(value)
        assert key == f"{record['thing']}.{record['quantity']}"
        found[key, record["phenomenonTime"], record["result"]] += 1
    return found


def _expected(lines: list[bytes]) -> Counter[tuple[str, float, float]]:
    return Counter(
        (key, time, value)
        for key, series in expected_records(lines).items()
        for time, value in series
    )


def _events_per_instance(output: str) -> list[int]:
    """Each instance's events, from the group's summary line."""
    found = re.search(r"connector-1 ([\d,]+), connector-2 ([\d,]+)\)", output)
    assert found, output[-3000:]
    return [int(found.group(i).replace(",", "")) for i in (1, 2)]


def _instance_pid(parent: int, client_id: str) -> int:
    """The pid of the group's instance with this client id (a child of `parent`)."""
    children = [
        int(pid)
        for listing in Path(f"/proc/{parent}/task").glob("*/children")
        for pid in listing.read_text().split()
    ]
    for pid in children:
        arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        if client_id.encode() in arguments:
            return pid
    raise AssertionError(f"no instance {client_id} among {children}")


def test_two_connectors_forward_each_message_once_between_them(
    ingest: Settings, tmp_path: Path
) -> None:
    rows = LINES[:2000]
    expected = _expected(rows)
    group = _group(ingest, tmp_path / "group.log")
    group.start()
    try:
        publish(ingest, rows)  # QoS 1
        wait_for_records(ingest, ingest.topics.machine_data, sum(expected.values()))
    finally:
        assert group.stop() == 0
    output = group.output()
    assert (
        f"all {INSTANCES} instances subscribed in share group {ingest.ingest.client_id}" in output
    )
    for index in (1, 2):
        client_id = member_client_id(ingest.ingest.client_id, index)
        assert f"connector-{index}: subscribed to 1 topic filters at " in output
        assert f" as {client_id} in share group {ingest.ingest.client_id} (new session)" in output
    assert _records(ingest) == expected  # every record once: each message by one of them
    events = _events_per_instance(output)
    assert sum(events) == len(rows) and min(events) > 0, events  # both took part
    assert "ended (" not in output  # no restart
    assert topic_size(ingest, ingest.topics.dead_letter) == 0

    # the sessions of both instances stay: one instance under the same client id is refused
    fewer = run_cli(
        "connect", "mqtt", "--group", ingest.ingest.client_id,
        env=settings_environment(ingest), inherit_settings=False, timeout_s=60,
    )  # fmt: skip
    assert fewer.exit_code == 2
    retired = member_client_id(ingest.ingest.client_id, 2)
    assert f"error: the MQTT session {retired} of an earlier group" in fewer.stderr
    assert "connector-1" not in fewer.stderr + fewer.stdout  # refused before any instance ran


def test_a_killed_connector_of_two_is_started_again_and_nothing_is_lost(
    ingest: Settings, tmp_path: Path
) -> None:
    plan = SimulationPlan(lines=LINES)  # 5,000 rows
    expected = _expected(list(plan.payloads()))
    total = sum(expected.values())
    group = _group(ingest, tmp_path / "group.log")
    group.start()
    simulator = threading.Thread(
        target=run_simulation, args=(ingest, plan), kwargs={"rate": 2500.0, "qos": 1}
    )
    simulator.start()
    killed = member_client_id(ingest.ingest.client_id, 2)
    try:
        assert wait_for_records(ingest, ingest.topics.machine_data, total // 4) < total
        assert group.pid is not None
        os.kill(_instance_pid(group.pid, killed), signal.SIGKILL)  # while the simulator publishes
        at_kill = topic_size(ingest, ingest.topics.machine_data)
        simulator.join(60)
        wait_for_records(ingest, ingest.topics.machine_data, total, timeout_s=60)
    finally:
        assert group.stop() == 0
        simulator.join(10)
    assert 0 < at_kill < total
    output = group.output()
    assert "connector-2: ended (killed by SIGKILL) after " in output
    assert "connector-2: started again (restart 1)" in output
    assert f"as {killed} in share group {ingest.ingest.client_id} (session resumed)" in output
    assert "restarts: 1 (connector-2 killed by SIGKILL" in output  # in the summary, not hidden
    records = _records(ingest)
    assert set(records) == set(expected)  # every message at least once (duplicates allowed)
    assert records.total() >= total
    assert min(_events_per_instance(output)) > 0
