"""Settings: environment variables, TOML files, keyword overrides, errors and local secrets."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from statestream.config import ensure_local_secrets, load_settings, read_local_secrets
from statestream.errors import ConfigError


@pytest.fixture(autouse=True)
def _own_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No STATESTREAM_* variables of the developer's shell; a data folder of the test's own."""
    for key in os.environ:
        if key.startswith("STATESTREAM_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("STATESTREAM_PATHS__DATA_DIR", str(tmp_path / "data"))


def test_defaults_point_at_the_local_services() -> None:
    settings = load_settings()
    assert settings.kafka.bootstrap_servers == "localhost:9092"
    assert (settings.kafka.is_local, settings.mqtt.is_local, settings.influx.is_local) == (
        True,
        True,
        True,
    )
    assert (settings.kafka.port, settings.mqtt.port, settings.influx.port) == (9092, 1883, 8086)


def test_environment_overrides_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATESTREAM_KAFKA__BOOTSTRAP_SERVERS", "kafka-1:9092,kafka-2:9092")
    monkeypatch.setenv("STATESTREAM_SPARK__SHUFFLE_PARTITIONS", "16")
    monkeypatch.setenv("STATESTREAM_INFLUX__URL", "https://influx.example.com:8443/")
    settings = load_settings()
    assert settings.kafka.bootstrap_servers == "kafka-1:9092,kafka-2:9092"
    assert not settings.kafka.is_local
    assert settings.spark.shuffle_partitions == 16
    assert settings.influx.url == "https://influx.example.com:8443"
    assert (settings.influx.host, settings.influx.port) == ("influx.example.com", 8443)
    assert not settings.influx.is_local


def test_spark_kafka_source_polls_in_big_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    options = ensure_local_secrets(load_settings()).kafka.spark_options()
    assert options["kafka.max.poll.records"] == "10000"
    assert options["kafka.max.partition.fetch.bytes"] == str(8 * 1024 * 1024)
    monkeypatch.setenv("STATESTREAM_KAFKA__SOURCE_MAX_POLL_RECORDS", "500")
    options = ensure_local_secrets(load_settings()).kafka.spark_options()
    assert options["kafka.max.poll.records"] == "500"


def test_keyword_overrides_beat_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATESTREAM_MQTT__PORT", "2883")
    assert load_settings(mqtt={"port": 3883}).mqtt.port == 3883


def test_invalid_value_is_one_line_naming_setting_and_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STATESTREAM_SPARK__SHUFFLE_PARTITIONS", "0")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("invalid setting spark.shuffle_partitions")
    assert "STATESTREAM_SPARK__SHUFFLE_PARTITIONS" in message


def test_malformed_bootstrap_servers_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATESTREAM_KAFKA__BOOTSTRAP_SERVERS", "localhost")
    with pytest.raises(ConfigError, match=r"kafka\.bootstrap_servers .*host:port"):
        load_settings()


def test_toml_file_below_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "statestream.toml"
    config.write_text(
        '[kafka]\nbootstrap_servers = "toml-broker:9092"\n\n[mqtt]\nport = 11883\n'
        '\n[topics]\nmachine_data = "plant.data"\n'
    )
    monkeypatch.setenv("STATESTREAM_MQTT__PORT", "2883")
    settings = load_settings(config)
    assert settings.kafka.bootstrap_servers == "toml-broker:9092"
    assert settings.topics.machine_data == "plant.data"
    assert settings.mqtt.port == 2883


def test_missing_or_broken_toml_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "nope.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[kafka\n")
    with pytest.raises(ConfigError, match=r"broken\.toml"):
        load_settings(broken)


def test_local_secrets_are_generated_once_and_private(tmp_path: Path) -> None:
    settings = ensure_local_secrets(load_settings())
    path = settings.paths.secrets_file
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert settings.mqtt.password is not None and settings.influx.password is not None
    again = ensure_local_secrets(load_settings())
    assert again.mqtt.password == settings.mqtt.password
    assert load_settings().influx.password == settings.influx.password


def test_passwords_from_the_environment_are_not_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATESTREAM_MQTT__PASSWORD", "from-env")
    settings = ensure_local_secrets(load_settings())
    assert settings.mqtt.password is not None
    assert settings.mqtt.password.get_secret_value() == "from-env"
    assert "mqtt.password" not in read_local_secrets(settings.paths.secrets_file)


def test_corrupt_secrets_file_says_what_to_delete() -> None:
    settings = load_settings()
    settings.paths.secrets_file.parent.mkdir(parents=True)
    settings.paths.secrets_file.write_text("{not json")
    with pytest.raises(ConfigError, match="delete it"):
        load_settings()


def test_secrets_are_masked_unless_revealed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATESTREAM_INFLUX__PASSWORD", "s3cret")
    settings = load_settings()
    assert settings.to_json_dict()["influx"]["password"] == "**********"
    assert settings.to_json_dict(reveal=True)["influx"]["password"] == "s3cret"


def test_no_local_cluster_by_default() -> None:
    settings = load_settings()
    assert (settings.services.spark_workers, settings.services.kafka_brokers) == (0, 1)
    assert settings.spark.master == "local[*,4]"
    assert settings.kafka.bootstrap_servers == "localhost:9092"
    assert "services" in settings.to_json_dict()


def test_spark_workers_move_the_jobs_to_the_local_master(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATESTREAM_SERVICES__SPARK_WORKERS", "2")
    monkeypatch.setenv("STATESTREAM_SERVICES__SPARK_MASTER_PORT", "17077")
    assert load_settings().spark.master == "spark://localhost:17077"
    monkeypatch.setenv("STATESTREAM_SPARK__MASTER", "local[2]")
    assert load_settings().spark.master == "local[2]"


def test_three_brokers_are_all_bootstrap_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATESTREAM_SERVICES__KAFKA_BROKERS", "3")
    monkeypatch.setenv("STATESTREAM_KAFKA__BOOTSTRAP_SERVERS", "localhost:19092")
    settings = load_settings()
    assert settings.kafka.bootstrap_servers == "localhost:19092,localhost:19094,localhost:19096"
    assert (settings.kafka.port, settings.kafka.is_local) == (19092, True)
    assert settings.services.kafka_ports(19092, 19093, 3) == (19096, 19097)
    assert (settings.services.replication_factor, settings.services.min_insync_replicas) == (3, 2)


def test_brokers_are_one_or_three(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATESTREAM_SERVICES__KAFKA_BROKERS", "2")
    with pytest.raises(ConfigError, match=r"STATESTREAM_SERVICES__KAFKA_BROKERS.*1 or 3"):
        load_settings()


def test_an_invalid_entry_of_a_mapping_setting_names_the_real_environment_variable() -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(ingest={"processors": {"a/b": "nope"}})
    assert str(caught.value).startswith(
        "invalid setting ingest.processors.a/b (env STATESTREAM_INGEST__PROCESSORS): "
    )


def test_every_topic_name_is_in_the_topic_lists() -> None:
    topics = load_settings().topics
    names = {
        getattr(topics, name)
        for name, field in type(topics).model_fields.items()
        if field.annotation is str and name != "cleanup_policy"
    }
    assert set(topics.every) == names
    assert len(topics.every) == len(names)  # each name once
    assert not set(topics.series) & set(topics.others)


@pytest.mark.parametrize("memory", ["2 g", "2x", "g", ""])
def test_a_driver_memory_that_is_not_a_size_is_refused(memory: str) -> None:
    with pytest.raises(ConfigError, match=r"spark\.driver_memory .*a size such as 512m or 2g"):
        load_settings(spark={"driver_memory": memory})
