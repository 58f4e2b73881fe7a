"""examples/streaming_kafka.py joins a Kafka topic of its own schema and writes the pairs once."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession

from statestream.config import Settings
from statestream.services import grant_topics
from statestream.testing import join_observations, read_committed

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).parents[2] / "examples" / "streaming_kafka.py"
BASE_MS = 1_700_000_000_000


def example():
    spec = importlib.util.spec_from_file_location("streaming_kafka", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def readings() -> list[tuple[str, str, int, float]]:
    """Two machines' speed and torque, the series out of step, some torque 2 minutes apart."""
    rows = []
    for k in range(40):
        for machine in ("M1", "M2"):
            rows.append((machine, "speed", BASE_MS + 1000 * k, 100.0 + k))
            gap = 120_000 if k % 10 == 9 else 0
            rows.append((machine, "torque", BASE_MS + 1000 * k + 500 + gap, 2.0 + k))
    return rows


def produce(settings: Settings, topic: str, rows: list[tuple]) -> None:
    admin = AdminClient(settings.kafka.client_config())
    for future in admin.create_topics([NewTopic(topic, 3)]).values():
        future.result(timeout=30)
    producer = Producer(settings.kafka.client_config())
    for machine, signal, ts, value in rows:
        record = {"machine": machine, "ts": ts, "signal": signal, "value": value}
        producer.produce(topic, key=f"{machine}.{signal}", value=json.dumps(record))
    assert producer.flush(30) == 0


def test_the_streaming_example_writes_the_pairs_once(
    local_services: Settings,
    spark: SparkSession,
    unique_name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    source, target = f"{unique_name}.readings", f"{unique_name}.pairs"
    rows = readings()
    produce(local_services, source, rows)
    grant_topics(local_services, [source, target])  # as `statestream topics grant` does
    run = example()
    run.main([source, target, str(tmp_path / "checkpoint"), "--available-now"])
    assert f"{len(rows)} records joined, pairs written to {target}" in capsys.readouterr().out
    written = [json.loads(value) for value in read_committed(local_services, target)]
    expected = join_observations([run.POWER], rows, flush=False)
    assert len(expected) > 80

    as_pairs = Counter(
        (
            p["thing"],
            p["quantity"],
            p["phenomenonTime"],
            p["left"]["phenomenonTime"],
            p["right"]["phenomenonTime"],
            round(p["result"], 6),
        )
        for p in written
    )
    assert as_pairs == Counter(
        (
            p["thing"],
            p["quantity"],
            p["phenomenonTime"],
            p["left"]["phenomenonTime"],
            p["right"]["phenomenonTime"],
            round(p["result"], 6),
        )
        for p in expected
    )
    # run again on the same checkpoint: nothing new in, nothing written twice
    run.main([source, target, str(tmp_path / "checkpoint"), "--available-now"])
    assert len(read_committed(local_services, target)) == len(written)
