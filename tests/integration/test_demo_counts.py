"""The demo: the sample goes to Kafka one record per quantity, the query counts it per thing."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession

from statestream.codecs.formats import RecordColumns, parse_line
from statestream.config import Settings
from statestream.ingest import SAMPLE_FILE, SimulationPlan, file_lines, run_simulation
from statestream.jobs.demo_counts import run_demo_counts
from statestream.services import grant_topics

pytestmark = pytest.mark.integration


def _produce_sample(settings: Settings, topic: str) -> tuple[int, int]:
    admin = AdminClient(settings.kafka.client_config())
    if topic not in admin.list_topics(timeout=10).topics:
        admin.create_topics([NewTopic(topic, 3, 1)])[topic].result()
    grant_topics(settings, [topic], "connector")  # the simulator writes it
    grant_topics(settings, [topic], "jobs")  # the query reads it
    plan = SimulationPlan(lines=list(file_lines(SAMPLE_FILE)))
    result = run_simulation(settings, plan, target="kafka", topic=topic)
    assert result.counts is not None
    return result.rows, result.counts.records


def _records_per_thing() -> Counter:
    columns = RecordColumns()
    for number, line in enumerate(file_lines(SAMPLE_FILE), 1):
        parse_line(line, number, columns)
    return Counter(columns.things)


def test_sample_counts_per_thing(
    local_services: Settings, spark: SparkSession, unique_name: str, tmp_path: Path
) -> None:
    assert _produce_sample(local_services, unique_name) == (5000, 19825)
    expected = _records_per_thing()

    checkpoint = tmp_path / "checkpoint"
    first = run_demo_counts(spark, local_services, topic=unique_name, checkpoint=checkpoint)
    assert first.records_read == 19825
    assert first.counts == dict(expected)

    nothing_new = run_demo_counts(spark, local_services, topic=unique_name, checkpoint=checkpoint)
    assert (nothing_new.records_read, nothing_new.counts) == (0, {})

    _produce_sample(local_services, unique_name)
    second = run_demo_counts(spark, local_services, topic=unique_name, checkpoint=checkpoint)
    assert second.records_read == 19825
    assert second.counts == {thing: 2 * count for thing, count in expected.items()}
