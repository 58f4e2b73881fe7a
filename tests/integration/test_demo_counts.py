"""The demo: the sample goes to Kafka one record per quantity, the query counts it per thing."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from statestream.config import Settings
from statestream.ingest import SAMPLE_FILE, produce_machine_file, read_observations
from statestream.jobs.demo_counts import run_demo_counts

pytestmark = pytest.mark.integration


def test_sample_counts_per_thing(
    local_services: Settings, spark: SparkSession, unique_name: str, tmp_path: Path
) -> None:
    produced = produce_machine_file(local_services, SAMPLE_FILE, unique_name)
    assert (produced.rows, produced.records) == (5000, 19825)
    expected = Counter(o.thing for o in read_observations(SAMPLE_FILE))

    checkpoint = tmp_path / "checkpoint"
    first = run_demo_counts(spark, local_services, topic=unique_name, checkpoint=checkpoint)
    assert first.records_read == 19825
    assert first.counts == dict(expected)

    nothing_new = run_demo_counts(spark, local_services, topic=unique_name, checkpoint=checkpoint)
    assert (nothing_new.records_read, nothing_new.counts) == (0, {})

    produce_machine_file(local_services, SAMPLE_FILE, unique_name)
    second = run_demo_counts(spark, local_services, topic=unique_name, checkpoint=checkpoint)
    assert second.records_read == 19825
    assert second.counts == {thing: 2 * count for thing, count in expected.items()}
