"""`statestream simulate`, `connect file`, `report log-size` and `bench ingest` as a user runs
them, on the real services."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from pydantic import SecretStr

from statestream.config import Settings, settings_environment
from statestream.ingest import SAMPLE_FILE, file_lines
from tests.integration.ingest_support import (
    cleanup,
    expected_records,
    ingest_settings,
    read_records,
)
from tests.support import run_cli

pytestmark = pytest.mark.integration


@pytest.fixture
def ingest(local_services: Settings, unique_name: str) -> Iterator[Settings]:
    test_settings = ingest_settings(local_services, unique_name)
    yield test_settings
    cleanup(test_settings)


def _run(settings: Settings, *args: str):
    return run_cli(*args, env=settings_environment(settings), inherit_settings=False)


def test_simulate_to_kafka_writes_the_records_and_reports_them(ingest: Settings) -> None:
    result = _run(ingest, "simulate", "--to", "kafka", "--things", "6", "--retime")
    assert result.exit_code == 0, result.stderr
    assert "sent 10,000 rows" in result.stdout and "39,650 records" in result.stdout
    records = read_records(ingest, ingest.topics.machine_data)
    assert len(records) == 39_650
    assert len({json.loads(value)["thing"] for _, value in records}) == 6


def test_connect_file_sends_bad_lines_to_the_dead_letter_topic(
    ingest: Settings, tmp_path: Path
) -> None:
    source = tmp_path / "rows.jsonl"
    source.write_text(
        '{"Thing": "R1", "Timestamp": 1554096380468, "a": 1.0, "b": 2}\n'
        "\n"
        '{"Thing": "R1", "Timestamp": "now", "a": 1.0}\n'
    )
    result = _run(ingest, "connect", "file", str(source))
    assert result.exit_code == 0, result.stderr
    assert "2 events (0.0 MB) → 2 records, 1 dead letters (bad_timestamp 1)" in result.stdout
    [(_, dead)] = read_records(ingest, ingest.topics.dead_letter)
    assert json.loads(dead)["source_topic"] == "rows.jsonl"


def test_simulate_refuses_a_bad_rate_in_one_line(local_services: Settings) -> None:
    result = run_cli("simulate", "--rate", "fast")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "error: --rate takes rows per second or max, not 'fast'"
    ]


def test_report_log_size_compares_the_encodings(local_services: Settings) -> None:
    result = run_cli("report", "log-size", "--json")
    assert result.exit_code == 0, result.stderr
    sizes = {e["envelope"]: e for e in json.loads(result.stdout)["encodings"]}
    assert {e["records"] for e in sizes.values()} == {19_825}
    plain, envelope, protobuf = sizes["none"], sizes["json"], sizes["protobuf"]
    assert protobuf["value_bytes_per_record"] < plain["value_bytes_per_record"]
    assert plain["value_bytes_per_record"] < envelope["value_bytes_per_record"]
    for encoding in sizes.values():
        log = encoding["log_bytes_per_record"]
        assert log["none"] > encoding["value_bytes_per_record"] + encoding["key_bytes_per_record"]
        assert log["zstd"] < log["none"]


def test_bench_ingest_prints_its_figures(local_services: Settings) -> None:
    result = run_cli("bench", "ingest", "--rows", "2000", "--json")
    assert result.exit_code == 0, result.stderr
    figures = json.loads(result.stdout)
    first_rows = list(file_lines(SAMPLE_FILE))[:2000]
    records = sum(len(series) for series in expected_records(first_rows).values())
    assert (figures["rows"], figures["records"]) == (2000, records)
    assert figures["rows_per_s"] > 0 and figures["records_per_s"] > figures["rows_per_s"]
    # --client both (the default): the same rows through a connector on paho-mqtt, all in Kafka
    paho = figures["paho"]
    assert (figures["client"], paho["client"]) == ("statestream", "paho")
    assert (paho["rows"], paho["records"]) == (2000, records)
    assert figures["tls"] and paho["tls"]
    assert figures["ratio_to_paho"] == round(figures["rows_per_s"] / paho["rows_per_s"], 2)


def test_connect_mqtt_refused_login_is_one_line(ingest: Settings) -> None:
    wrong = ingest.model_copy(
        update={"mqtt": ingest.mqtt.model_copy(update={"password": SecretStr("wrong")})}
    )
    result = _run(wrong, "connect", "mqtt")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"error: the MQTT broker at {ingest.mqtt.client_address} refused the login: not authorized"
    ]


def test_a_missing_topic_is_named_not_created(local_services: Settings, unique_name: str) -> None:
    result = run_cli("simulate", "--to", "kafka", "--topic", unique_name, env={"COLUMNS": "300"})
    assert result.exit_code == 2
    assert f"Kafka topic {unique_name} does not exist" in result.stderr
    assert "statestream topics create" in result.stderr
    admin = AdminClient(local_services.kafka.client_config())
    assert unique_name not in admin.list_topics(timeout=10).topics
