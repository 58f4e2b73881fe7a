"""The `kafka` section: where Kafka is, and who each statestream component is there.

Every Kafka client renders its options from `KafkaSettings.client_config(role)` (confluent-kafka)
or `spark_connection_options(role)` (Spark, the exactly-once writer). On the local brokers each
role logs in with SASL/SCRAM-SHA-512 as its own user, whose password is generated on first start
into the secrets file; on another cluster every role logs in as `sasl_username`, if set.

    >>> KafkaSettings(jobs_password="s3cret").client_config("jobs")["sasl.username"]
    'statestream-jobs'
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field, SecretStr, field_validator

from statestream.config.sections import LOCAL_HOSTS, _Section
from statestream.errors import ConfigError

KafkaRole = Literal["admin", "connector", "jobs", "dashboard"]
"""Who a Kafka client is: the admin (topics, ACLs, tests, the brokers themselves), the MQTT
connector, the Spark jobs or the dashboard; `statestream.services.kafka_security` says what each
may do."""

KAFKA_ROLES: tuple[KafkaRole, ...] = get_args(KafkaRole)
LocalUser = KafkaRole | Literal["controller"]
"""A user of the local brokers: a client's role, or the brokers' own controller listener."""

ClientConfig = dict[str, str | int | float | bool]
"""A confluent-kafka client's configuration, the type its `AdminClient` is declared to take."""

LOCAL_MECHANISM = "SCRAM-SHA-512"
CONTROLLER_USER = "statestream-controller"
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


def local_user(role: LocalUser) -> str:
    """The SCRAM user of `role` on the local brokers, e.g. `statestream-jobs`."""
    return f"statestream-{role}"


def _split_host_port(server: str) -> tuple[str, int]:
    host, _, port = server.strip().rpartition(":")
    return host, int(port)


def _password(description: str) -> Any:
    return Field(None, description=f"{description}; generated on first start if unset")


class KafkaSettings(_Section):
    """Where Kafka is and how to talk to it."""

    bootstrap_servers: str = "localhost:9092"
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] | None = Field(
        None,
        description="default: SASL_PLAINTEXT on the local brokers (SCRAM-SHA-512 users), "
        "PLAINTEXT on another cluster",
    )
    sasl_mechanism: str | None = Field(None, description="default: SCRAM-SHA-512 locally")
    sasl_username: str | None = Field(
        None, description="one user for every component (another cluster); unset: the local users"
    )
    sasl_password: SecretStr | None = None
    admin_password: SecretStr | None = _password("local user statestream-admin (super user)")
    connector_password: SecretStr | None = _password("local user statestream-connector")
    jobs_password: SecretStr | None = _password("local user statestream-jobs")
    dashboard_password: SecretStr | None = _password("local user statestream-dashboard")
    controller_password: SecretStr | None = _password(
        "the local brokers' controller listener (SASL/PLAIN)"
    )
    controller_port: int = Field(9093, ge=1, le=65535, description="KRaft controller port")
    broker_heap: str = Field("1g", description="-Xmx of the local broker")
    source_fetch_wait_ms: int = Field(
        10, ge=0, description="fetch.max.wait.ms of Spark's Kafka source (latency per batch)"
    )
    source_max_poll_records: int = Field(
        10_000, ge=1, description="max.poll.records of Spark's Kafka source (Kafka's: 500)"
    )
    source_max_partition_fetch_bytes: int = Field(
        8 * 1024 * 1024,
        ge=1024,
        description="max.partition.fetch.bytes of Spark's Kafka source (Kafka's: 1 MiB)",
    )

    @field_validator("bootstrap_servers")
    @classmethod
    def _host_port_list(cls, value: str) -> str:
        for server in value.split(","):
            host, sep, port = server.strip().rpartition(":")
            if not sep or not host or not port.isdigit():
                raise ValueError(f"expected host:port[,host:port…], got {value!r}")
        return value

    @property
    def is_local(self) -> bool:
        """True when every bootstrap server is on this machine (statestream runs the broker)."""
        return all(_split_host_port(s)[0] in LOCAL_HOSTS for s in self.bootstrap_servers.split(","))

    @property
    def port(self) -> int:
        """The listener port of the local broker: the port of the first bootstrap server."""
        return _split_host_port(self.bootstrap_servers.split(",")[0])[1]

    @property
    def local_users(self) -> bool:
        """True when the components log in as the local brokers' SCRAM users (one per role)."""
        return self.is_local and self.sasl_username is None

    @property
    def protocol(self) -> str:
        """The effective security.protocol: `security_protocol`, else by where Kafka is."""
        if self.security_protocol is not None:
            return self.security_protocol
        return "SASL_PLAINTEXT" if self.local_users else "PLAINTEXT"

    @property
    def mechanism(self) -> str | None:
        """The effective sasl.mechanism: `sasl_mechanism`, else SCRAM-SHA-512 locally."""
        return self.sasl_mechanism or (LOCAL_MECHANISM if self.local_users else None)

    def local_password(self, role: LocalUser) -> str:
        """The password of `role`'s local user; a clear error when none was generated yet."""
        secret: SecretStr | None = getattr(self, f"{role}_password")
        if secret is None:
            raise ConfigError(
                f"no password for Kafka user {local_user(role)} (kafka.{role}_password): "
                "`statestream services up` generates the local users' passwords"
            )
        return secret.get_secret_value()

    def credentials(self, role: KafkaRole = "admin") -> tuple[str, str] | None:
        """(user, password) that `role` logs in with, or None without SASL."""
        if self.local_users:
            return local_user(role), self.local_password(role)
        if self.sasl_username and self.sasl_password:
            return self.sasl_username, self.sasl_password.get_secret_value()
        return None

    def client_config(self, role: KafkaRole = "admin") -> ClientConfig:
        """Options for a confluent-kafka producer, consumer or admin client of `role`.

        The default role is the admin: what operators, tests and benchmarks use; every
        statestream component names its own.
        """
        config: ClientConfig = {
            "bootstrap.servers": self.bootstrap_servers,
            "security.protocol": self.protocol,
        }
        if self.mechanism:
            config["sasl.mechanism"] = self.mechanism
        login = self.credentials(role)
        if login is not None:
            config["sasl.username"], config["sasl.password"] = login
        return config

    def spark_options(self, role: KafkaRole = "jobs") -> dict[str, str]:
        """Options for Spark's Kafka source and sink (`kafka.`-prefixed Java client options)."""
        return {
            **self.spark_connection_options(role),
            # a micro-batch reads to the end of each partition; the broker's default wait there
            # (500 ms for more data) would be added to every batch
            "kafka.fetch.max.wait.ms": str(self.source_fetch_wait_ms),
            # Spark's reader asks the broker for the partition's first and last offsets after
            # every poll (two round trips): with Kafka's 500 records a poll, those round trips were
            # a large part of the time a micro-batch spent reading Kafka
            "kafka.max.poll.records": str(self.source_max_poll_records),
            "kafka.max.partition.fetch.bytes": str(self.source_max_partition_fetch_bytes),
        }

    def spark_connection_options(self, role: KafkaRole = "jobs") -> dict[str, str]:
        """Where the brokers are and how `role` logs in, as `kafka.`-prefixed Java options."""
        options = {
            "kafka.bootstrap.servers": self.bootstrap_servers,
            "kafka.security.protocol": self.protocol,
        }
        if self.mechanism:
            options["kafka.sasl.mechanism"] = self.mechanism
        login = self.credentials(role)
        if login is not None:
            options["kafka.sasl.jaas.config"] = jaas_login(self.mechanism, *login)
        return options


def jaas_login(mechanism: str | None, user: str, password: str) -> str:
    """The `sasl.jaas.config` of a Java client (or broker) logging in as `user`."""
    scram = bool(mechanism and mechanism.startswith("SCRAM"))
    module = _SCRAM_MODULE if scram else _PLAIN_MODULE
    return f'{module} required username="{user}" password="{password}";'
