"""`create_topics`: partitions and configuration from the settings; a second call is a no-op."""

from __future__ import annotations

import subprocess

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from statestream.config import Settings, load_settings
from statestream.environment import find_java
from statestream.services.topics import create_topics

pytestmark = pytest.mark.integration


def _topic_names(unique_name: str) -> dict[str, str]:
    """The topic settings, each a topic of this test's own."""
    kinds = ("data", "out", "positions", "deadletter", "late", "stats", "alerts", "cells")
    kinds += ("vehicle-alerts", "quantities", "commits")
    keys = ("machine_data", "machine_out", "vehicle_positions", "dead_letter", "late", "stats")
    keys += ("alerts", "vehicle_cells", "vehicle_alerts", "machine_quantities", "commits")
    return {key: f"{unique_name}.{kind}" for key, kind in zip(keys, kinds, strict=True)}


def test_create_topics_is_idempotent(local_services: Settings, unique_name: str) -> None:
    names = _topic_names(unique_name)
    settings = load_settings(
        paths={"data_dir": local_services.paths.data_dir},
        kafka={"bootstrap_servers": local_services.kafka.bootstrap_servers},
        topics=names,
    )
    first = create_topics(settings)
    assert [(r.name, r.state, r.partitions) for r in first] == [
        (names["machine_data"], "created", 5),
        (names["machine_out"], "created", 3),
        (names["vehicle_positions"], "created", 3),
        *(
            (names[key], "created", 1)
            for key in ("dead_letter", "late", "stats", "alerts", "vehicle_cells", "vehicle_alerts")
        ),
        (names["machine_quantities"], "created", 1),
        (names["commits"], "created", 1),
    ]
    second = create_topics(settings)
    assert {r.state for r in second} == {"exists"}
    assert [r.partitions for r in second] == [5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1]

    admin = AdminClient(settings.kafka.client_config())
    resource = ConfigResource(ConfigResource.Type.TOPIC, names["machine_data"])
    config = admin.describe_configs([resource])[resource].result(timeout=30)
    assert config["cleanup.policy"].value == "delete"  # a time series keeps its history
    assert config["retention.ms"].value == str(2 * 24 * 3600 * 1000)
    assert config["retention.bytes"].value == "-1"
    assert not any(r.warning for r in second)
    admin.delete_topics(list(names.values()), operation_timeout=30)


def _run_kafka_configs(settings: Settings, warning: str) -> None:
    """The `kafka-configs.sh …` of `warning`, run as Kafka's ConfigCommand from the broker's jars:
    it logs in with the admin's properties file that `services up` wrote."""
    arguments = warning.split("kafka-configs.sh ", 1)[1].split()
    assert "--command-config" in arguments
    jars = settings.paths.jars_dir / "kafka-broker"
    command = [find_java(), "-cp", f"{jars}/*", "kafka.admin.ConfigCommand", *arguments]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


def test_an_existing_compacted_time_series_topic_is_warned_about(
    local_services: Settings, unique_name: str
) -> None:
    """A machine topic made with the old cleanup.policy=compact loses all but each series'
    latest record: `topics create` leaves it alone but says so, and how to change it."""
    names = _topic_names(unique_name)
    admin = AdminClient(local_services.kafka.client_config())
    old = NewTopic(names["machine_out"], 3, 1, config={"cleanup.policy": "compact"})
    admin.create_topics([old])[names["machine_out"]].result(30)
    settings = local_services.model_copy(
        update={"topics": local_services.topics.model_copy(update=names)}
    )
    results = {r.name: r for r in create_topics(settings)}
    warning = results[names["machine_out"]].warning
    assert "cleanup.policy=compact" in warning and "cleanup.policy=delete" in warning
    assert results[names["machine_data"]].warning == ""  # created now, with delete
    _run_kafka_configs(settings, warning)  # the command printed, as Kafka's tool runs it
    results = {r.name: r for r in create_topics(settings)}
    assert results[names["machine_out"]].warning == ""
    admin.delete_topics(list(names.values()), operation_timeout=30)
