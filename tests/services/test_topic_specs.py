"""The topics' configuration: time series deleted after their retention, never compacted."""

from __future__ import annotations

from statestream.config import load_settings
from statestream.services.topics import topic_specs


def test_time_series_topics_keep_their_history_for_the_retention() -> None:
    settings = load_settings(topics={"retention_ms": 3_600_000, "retention_bytes": 10**9})
    specs = {spec.name: spec.config for spec in topic_specs(settings)}
    for name in ("machine.data", "machine.out"):
        assert specs[name] == {
            "cleanup.policy": "delete",
            "retention.ms": "3600000",
            "retention.bytes": "1000000000",
        }
    for name in ("machine.deadletter", "machine.late"):
        assert "cleanup.policy" not in specs[name]  # the broker's default: delete
        assert specs[name]["retention.bytes"] == "1000000000"


def test_only_the_commits_topic_is_compacted() -> None:
    specs = topic_specs(load_settings())
    compacted = [s.name for s in specs if "compact" in s.config.get("cleanup.policy", "")]
    assert compacted == ["statestream.commits"]


def test_topics_on_three_local_brokers_have_three_replicas_two_in_sync() -> None:
    specs = topic_specs(load_settings(services={"kafka_brokers": 3}))
    assert {(s.replication_factor, s.config["min.insync.replicas"]) for s in specs} == {(3, "2")}


def test_one_local_broker_means_one_replica_and_other_machines_their_defaults() -> None:
    assert {s.replication_factor for s in topic_specs(load_settings())} == {1}
    elsewhere = load_settings(kafka={"bootstrap_servers": "kafka.plant:9092"})
    assert {s.replication_factor for s in topic_specs(elsewhere)} == {-1}
