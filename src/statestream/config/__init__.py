"""The one settings object of statestream.

Settings are read once, when `load_settings` builds them, from (highest priority first): keyword
overrides, environment variables `STATESTREAM_<SECTION>__<NAME>` (e.g.
`STATESTREAM_KAFKA__BOOTSTRAP_SERVERS`), an optional TOML file (`statestream --config FILE`), the
local secrets file generated on first start (`<data_dir>/secrets.json`), and the defaults, which
point at the services statestream runs itself on this machine.

    >>> settings = load_settings(kafka={"bootstrap_servers": "kafka-1:9092"})
    >>> settings.kafka.client_config("connector")["bootstrap.servers"]
    'kafka-1:9092'
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from statestream.config.cluster import ServicesSettings, local_cluster
from statestream.config.geo import GeoSettings
from statestream.config.kafka import KAFKA_ROLES, KafkaRole, KafkaSettings, local_user
from statestream.config.sections import (
    LOCAL_HOSTS,
    SECRETS_FILE_NAME,
    DashboardSettings,
    InfluxSettings,
    InfluxSinkSettings,
    IngestSettings,
    JoinSettings,
    JoinSpecSettings,
    MqttSettings,
    PathsSettings,
    QuantityStatsSettings,
    SparkSettings,
    StatsSettings,
    TopicsSettings,
    project_root,
)
from statestream.errors import ConfigError

ENV_PREFIX = "STATESTREAM_"
ENV_NESTED_DELIMITER = "__"


class Settings(BaseSettings):
    """Every setting of statestream, nested by concern; frozen once built."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter=ENV_NESTED_DELIMITER,
        frozen=True,
        extra="forbid",
    )

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    mqtt: MqttSettings = Field(default_factory=MqttSettings)
    influx: InfluxSettings = Field(default_factory=InfluxSettings)
    influx_sink: InfluxSinkSettings = Field(default_factory=InfluxSinkSettings)
    spark: SparkSettings = Field(default_factory=SparkSettings)
    topics: TopicsSettings = Field(default_factory=TopicsSettings)
    join: JoinSettings = Field(default_factory=JoinSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    stats: StatsSettings = Field(default_factory=StatsSettings)
    quantity_stats: QuantityStatsSettings = Field(default_factory=QuantityStatsSettings)
    geo: GeoSettings = Field(default_factory=GeoSettings)
    dashboard: DashboardSettings = Field(default_factory=DashboardSettings)
    services: ServicesSettings = Field(default_factory=ServicesSettings)
    paths: PathsSettings = Field(default_factory=PathsSettings)

    @property
    def checkpoint_root(self) -> Path:
        return self.spark.checkpoint_root or self.paths.data_dir / "checkpoints"

    def to_json_dict(self, reveal: bool = False) -> dict[str, Any]:
        """The effective settings as plain JSON data; secrets masked unless `reveal`."""
        data = self.model_dump(mode="json")
        if reveal:
            for section, name in _SECRET_FIELDS:
                value = getattr(getattr(self, section), name)
                data[section][name] = value.get_secret_value() if value else None
        data["spark"]["checkpoint_root"] = str(self.checkpoint_root)
        return data


_KAFKA_SECRETS = (
    *(("kafka", f"{role}_password") for role in KAFKA_ROLES),
    ("kafka", "controller_password"),
)
_SECRET_FIELDS = (
    ("mqtt", "password"),
    ("influx", "password"),
    ("kafka", "sasl_password"),
    *_KAFKA_SECRETS,
    ("dashboard", "token"),
)
_GENERATED_SECRETS = (("mqtt", "password"), ("influx", "password"), *_KAFKA_SECRETS)


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Build the settings from overrides, environment, TOML file, local secrets and defaults.

    Raises `ConfigError` with one line naming the bad setting and the reason.
    """
    if config_file is not None and not Path(config_file).is_file():
        raise ConfigError(f"config file {config_file} does not exist")
    settings = _build(config_file, overrides)
    return _with_local_secrets(settings)


def _build(config_file: Path | None, overrides: dict[str, Any]) -> Settings:
    class _Loaded(Settings):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            sources = [init_settings, env_settings]
            if config_file is not None:
                sources.append(TomlConfigSettingsSource(settings_cls, toml_file=config_file))
            return tuple(sources)

    try:
        loaded = _Loaded(**overrides)
    except ValidationError as exc:
        raise ConfigError(_one_line(exc)) from None
    except ValueError as exc:  # an unreadable TOML file
        raise ConfigError(f"config file {config_file}: {exc}") from None
    settings = Settings.model_construct(
        **{name: getattr(loaded, name) for name in Settings.model_fields}
    )
    settings = local_cluster(settings, master_set="master" in loaded.spark.model_fields_set)
    return _with_local_mqtt_ca(settings)


def _with_local_mqtt_ca(settings: Settings) -> Settings:
    """The local broker's generated CA as `mqtt.ca_file` when TLS is on and none was set."""
    mqtt = settings.mqtt
    if mqtt.ca_file is not None or not (mqtt.use_tls and mqtt.is_local):
        return settings
    ca_file = local_mqtt_tls_folder(settings) / "ca.crt"
    return settings.model_copy(update={"mqtt": mqtt.model_copy(update={"ca_file": ca_file})})


def local_mqtt_tls_folder(settings: Settings) -> Path:
    """Where `services up` keeps the local broker's CA and server certificate."""
    return settings.paths.data_dir / "mosquitto" / "tls"


def _one_line(exc: ValidationError) -> str:
    error = exc.errors()[0]
    path = ".".join(str(part) for part in error["loc"])
    # a setting is a section's field: an error inside a dict or list value is still that one's
    env_name = ENV_PREFIX + ENV_NESTED_DELIMITER.join(str(p) for p in error["loc"][:2]).upper()
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"invalid setting {path} (env {env_name}): {error['msg']}{more}"


def _with_local_secrets(settings: Settings) -> Settings:
    """Fill passwords that were not set from the secrets file generated on first start."""
    stored = read_local_secrets(settings.paths.secrets_file)
    updates: dict[str, Any] = {}
    for section, name in _GENERATED_SECRETS:
        key = f"{section}.{name}"
        if getattr(getattr(settings, section), name) is None and key in stored:
            part = updates.get(section, getattr(settings, section))
            updates[section] = part.model_copy(update={name: SecretStr(stored[key])})
    return settings.model_copy(update=updates) if updates else settings


def read_local_secrets(path: Path) -> dict[str, str]:
    """The generated local secrets, or {} when none were generated yet."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"the secrets file {path} is unreadable ({exc}); delete it to generate new secrets "
            "(and the data folder's service data, whose users were created with the old ones)"
        ) from None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ConfigError(f"the secrets file {path} is corrupt; delete it to generate new ones")
    return data


def ensure_local_secrets(settings: Settings) -> Settings:
    """Generate the local service passwords on first start and return settings that carry them.

    Passwords already set (environment, TOML) are kept and not written to the file.
    """
    path = settings.paths.secrets_file
    stored = read_local_secrets(path)
    changed = False
    for section, name in _GENERATED_SECRETS:
        key = f"{section}.{name}"
        if getattr(getattr(settings, section), name) is None and key not in stored:
            stored[key] = secrets.token_urlsafe(18)
            changed = True
    if changed:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(stored, handle, indent=2)
        tmp.replace(path)
    return _with_local_secrets(settings)


def settings_environment(settings: Settings) -> dict[str, str]:
    """The settings as `STATESTREAM_*` environment variables, secrets included: what a child
    process (a connector, a job) needs to run with exactly these settings."""
    environment = {}
    for section, values in settings.to_json_dict(reveal=True).items():
        for name, value in values.items():
            if value is None:
                continue
            variable = f"{ENV_PREFIX}{section}{ENV_NESTED_DELIMITER}{name}".upper()
            environment[variable] = value if isinstance(value, str) else json.dumps(value)
    return environment


__all__ = [
    "KAFKA_ROLES",
    "LOCAL_HOSTS",
    "SECRETS_FILE_NAME",
    "DashboardSettings",
    "GeoSettings",
    "InfluxSettings",
    "InfluxSinkSettings",
    "IngestSettings",
    "JoinSettings",
    "JoinSpecSettings",
    "KafkaRole",
    "KafkaSettings",
    "MqttSettings",
    "PathsSettings",
    "QuantityStatsSettings",
    "ServicesSettings",
    "Settings",
    "SparkSettings",
    "StatsSettings",
    "TopicsSettings",
    "ensure_local_secrets",
    "load_settings",
    "local_mqtt_tls_folder",
    "local_user",
    "project_root",
    "read_local_secrets",
    "settings_environment",
]
