"""`statestream simulate vehicles` as a user runs it: straight to Kafka through the vehicle
processor, and one clear line for a bad option."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from statestream.config import Settings, settings_environment
from statestream.ingest import vehicle_codec_for, vehicle_events
from tests.integration.ingest_support import cleanup, delete_topics, ingest_settings, read_records
from tests.support import granted, run_cli

pytestmark = pytest.mark.integration


@pytest.fixture
def vehicles(local_services: Settings, unique_name: str) -> Iterator[Settings]:
    settings = ingest_settings(local_services, unique_name, envelope="json")
    topic = f"{unique_name}.vehicles"
    admin = AdminClient(settings.kafka.client_config())
    for future in admin.create_topics([NewTopic(topic, 3, 1)]).values():
        future.result()
    topics = settings.topics.model_copy(update={"vehicle_positions": topic})
    yield granted(settings.model_copy(update={"topics": topics}))
    cleanup(settings)
    delete_topics(settings, topic)


def test_simulate_vehicles_to_kafka_writes_one_position_per_message(vehicles: Settings) -> None:
    args = ("--vehicles", "5", "--duration", "20", "--seed", "3", "--rate", "max")
    result = run_cli(
        "simulate", "vehicles", "--to", "kafka", *args,
        env=settings_environment(vehicles), inherit_settings=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    expected = len(list(vehicle_events(5, 3, 0, 20)))  # the count does not depend on the start
    assert f"sent {expected:,} positions of 5 vehicles" in result.stdout
    assert f"{expected:,} records, 0 dead letters" in result.stdout
    records = read_records(vehicles, vehicles.topics.vehicle_positions)
    assert len(records) == expected
    codec = vehicle_codec_for("json")
    decoded = [(key, codec.decode(value)) for key, value in records]
    assert all(key == position.key and ingested for key, (position, ingested) in decoded)
    assert len({key for key, _ in decoded}) == 5


def test_a_bad_rate_is_one_line(local_services: Settings) -> None:
    result = run_cli("simulate", "vehicles", "--rate", "fast")
    assert result.exit_code == 2
    assert "--rate takes messages per second, live or max, not 'fast'" in result.stderr
    assert "Traceback" not in result.stderr
