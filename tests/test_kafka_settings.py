"""Kafka logins: a SCRAM user per component on the local brokers, the kafka.sasl_* on another."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from statestream.config import KAFKA_ROLES, ensure_local_secrets, load_settings, read_local_secrets
from statestream.errors import ConfigError


@pytest.fixture(autouse=True)
def _own_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in os.environ:
        if key.startswith("STATESTREAM_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("STATESTREAM_PATHS__DATA_DIR", str(tmp_path / "data"))


def test_each_component_logs_in_to_the_local_brokers_as_its_own_scram_user() -> None:
    kafka = ensure_local_secrets(load_settings()).kafka
    stored = read_local_secrets(load_settings().paths.secrets_file)
    for role in KAFKA_ROLES:
        config = kafka.client_config(role)
        assert config["security.protocol"] == "SASL_PLAINTEXT"
        assert config["sasl.mechanism"] == "SCRAM-SHA-512"
        assert config["sasl.username"] == f"statestream-{role}"
        assert config["sasl.password"] == stored[f"kafka.{role}_password"]
    assert len({stored[f"kafka.{role}_password"] for role in KAFKA_ROLES}) == len(KAFKA_ROLES)
    jaas = kafka.spark_options("jobs")["kafka.sasl.jaas.config"]
    assert jaas.startswith("org.apache.kafka.common.security.scram.ScramLoginModule required")
    assert 'username="statestream-jobs"' in jaas


def test_the_generated_passwords_are_masked_like_the_other_secrets() -> None:
    data = ensure_local_secrets(load_settings()).to_json_dict()
    assert data["kafka"]["jobs_password"] == "**********"
    assert data["kafka"]["controller_password"] == "**********"


def test_local_clients_without_generated_passwords_say_how_to_get_them() -> None:
    with pytest.raises(ConfigError, match=r"statestream-dashboard .*services up"):
        load_settings().kafka.client_config("dashboard")


def test_another_cluster_uses_the_sasl_settings_for_every_component(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STATESTREAM_KAFKA__BOOTSTRAP_SERVERS", "kafka.example.com:9096")
    monkeypatch.setenv("STATESTREAM_KAFKA__SECURITY_PROTOCOL", "SASL_SSL")
    monkeypatch.setenv("STATESTREAM_KAFKA__SASL_MECHANISM", "SCRAM-SHA-256")
    monkeypatch.setenv("STATESTREAM_KAFKA__SASL_USERNAME", "fleet")
    monkeypatch.setenv("STATESTREAM_KAFKA__SASL_PASSWORD", "pw")
    kafka = load_settings().kafka
    for role in KAFKA_ROLES:
        config = kafka.client_config(role)
        assert (config["security.protocol"], config["sasl.username"]) == ("SASL_SSL", "fleet")
    jaas = kafka.spark_connection_options("jobs")["kafka.sasl.jaas.config"]
    assert 'username="fleet" password="pw"' in jaas


def test_another_cluster_without_sasl_is_plaintext(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATESTREAM_KAFKA__BOOTSTRAP_SERVERS", "kafka.example.com:9092")
    config = load_settings().kafka.client_config("connector")
    assert config == {
        "bootstrap.servers": "kafka.example.com:9092",
        "security.protocol": "PLAINTEXT",
    }
