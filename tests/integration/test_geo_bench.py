"""`statestream bench geo` on a small input, on the real Kafka and Spark: every part runs, every
position is counted, and its topics are gone at the end."""

from __future__ import annotations

import pytest
from benchmarks.geo_bench import GeoBenchOptions, run
from confluent_kafka.admin import AdminClient

from statestream.config import Settings

pytestmark = pytest.mark.integration


def test_a_small_run_counts_every_position_and_leaves_no_topic(
    spark, local_services: Settings
) -> None:
    options = GeoBenchOptions(
        positions=3_000,
        vehicles=30,
        max_offsets_per_trigger=1_000,
        rate=200,
        latency_seconds=2,
        baseline=False,
        warmup_positions=500,
    )
    figures = run(spark, local_services, options, lambda _text: None)
    assert (figures["warmup_positions"], figures["positions"]) == (500, 3_000)
    assert figures["batches"] >= 3 and figures["sustained_positions_per_s"] > 0
    assert figures["positions_per_s"] > 0 and figures["cell_results"] > 0
    assert figures["latency_positions"] > 0
    assert 0 < figures["latency_p50_s"] <= figures["latency_p99_s"]
    topics = AdminClient(local_services.kafka.client_config()).list_topics(timeout=10).topics
    assert not [name for name in topics if name.startswith("bench_geo_")]
