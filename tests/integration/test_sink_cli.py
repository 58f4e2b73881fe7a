"""`statestream run sink-influx` as a user runs it: a line per batch, the points in InfluxDB."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from statestream.config import Settings
from statestream.services import grant_topics
from tests.support import run_cli

pytestmark = pytest.mark.integration


def _env(name: str, checkpoint_root: Path) -> dict[str, str]:
    return {
        "STATESTREAM_TOPICS__MACHINE_DATA": f"{name}.data",
        "STATESTREAM_TOPICS__MACHINE_OUT": f"{name}.out",
        "STATESTREAM_TOPICS__STATS": f"{name}.stats",
        "STATESTREAM_TOPICS__ALERTS": f"{name}.alerts",
        "STATESTREAM_TOPICS__DEAD_LETTER": f"{name}.dlq",
        "STATESTREAM_TOPICS__VEHICLE_CELLS": f"{name}.cells",
        "STATESTREAM_TOPICS__MACHINE_QUANTITIES": f"{name}.quantities",
        "STATESTREAM_INFLUX__DATABASE": name,
        "STATESTREAM_SPARK__CHECKPOINT_ROOT": str(checkpoint_root),
    }


def test_missing_topics_are_one_line_before_spark_starts(
    local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    result = run_cli("run", "sink-influx", "--available-now", env=_env(unique_name, tmp_path))
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert f"{unique_name}.data" in result.stderr and "statestream topics create" in result.stderr


def test_run_sink_influx_available_now(
    local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    env = _env(unique_name, tmp_path)
    topics = [env[f"STATESTREAM_TOPICS__{t}"] for t in ("MACHINE_DATA", "MACHINE_OUT", "STATS")]
    topics += [env["STATESTREAM_TOPICS__ALERTS"], env["STATESTREAM_TOPICS__DEAD_LETTER"]]
    topics += [env[f"STATESTREAM_TOPICS__{t}"] for t in ("VEHICLE_CELLS", "MACHINE_QUANTITIES")]
    admin = AdminClient(local_services.kafka.client_config())
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        future.result()
    grant_topics(local_services, topics)
    producer = Producer(local_services.kafka.client_config())
    for i in range(20):
        record = {"thing": "R1", "quantity": "vaTorque_C11", "phenomenonTime": i, "result": i / 2}
        producer.produce(topics[0], value=json.dumps(record))
    producer.produce(topics[0], value=b"{oops")
    producer.flush(30)
    influx = local_services.influx
    assert influx.password is not None
    try:
        result = run_cli("run", "sink-influx", "--available-now", env=env)
        assert result.exit_code == 0, result.stderr
        assert "batch 0: 21 records → 20 points, dead-lettered 1 bad records + 0" in result.stdout
        assert "20 points written, 1 dead-lettered" in result.stdout
        response = requests.get(
            f"{influx.url}/query",
            params={"db": unique_name, "q": "SELECT sum(result), count(result) FROM machine_data"},
            auth=(influx.username, influx.password.get_secret_value()),
            timeout=30,
        )
        [[_, total, count]] = response.json()["results"][0]["series"][0]["values"]
        assert (total, count) == (sum(i / 2 for i in range(20)), 20)
    finally:
        requests.post(
            f"{influx.url}/query",
            params={"q": f'DROP DATABASE "{unique_name}"'},
            auth=(influx.username, influx.password.get_secret_value()),
            timeout=30,
        )
        for future in admin.delete_topics(topics).values():
            future.result(30)
