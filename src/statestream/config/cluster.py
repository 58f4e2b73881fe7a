"""The `services` section: how many Spark workers and Kafka brokers `services up` runs here.

With `spark_workers` > 0, `statestream services up` also starts a Spark standalone master and that
many workers; with `kafka_brokers` = 3, three KRaft brokers form one cluster. `local_cluster`
turns these into the effective settings every command sees: the jobs' master and the clients'
bootstrap servers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, field_validator

from statestream.config.sections import memory_size

if TYPE_CHECKING:
    from statestream.config import Settings


class ServicesSettings(BaseModel):
    """The local cluster: Spark standalone workers and Kafka brokers on this machine."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    spark_workers: int = Field(
        0, ge=0, le=16, description="0: jobs run in their own local master; N: master + N workers"
    )
    spark_worker_cores: int = Field(1, ge=1, description="cores each worker offers")
    spark_worker_memory: str = Field("2g", description="memory each worker offers (executors)")
    spark_master_port: int = Field(7077, ge=1, le=65535)
    spark_master_ui_port: int = Field(8080, ge=1, le=65535, description="master's web UI")
    spark_worker_port: int = Field(
        7078, ge=1, le=65535, description="worker n listens on this port + n - 1"
    )
    spark_worker_ui_port: int = Field(
        8081, ge=1, le=65535, description="worker n's web UI on this port + n - 1"
    )
    kafka_brokers: int = Field(
        1, description="1, or 3: three KRaft brokers, replication factor 3, min.insync.replicas 2"
    )
    kafka_port_step: int = Field(
        2,
        ge=1,
        description="broker n listens on kafka's port + step * (n - 1), its controller on "
        "kafka.controller_port + step * (n - 1)",
    )

    @field_validator("kafka_brokers")
    @classmethod
    def _one_or_three(cls, value: int) -> int:
        if value not in (1, 3):
            raise ValueError(f"expected 1 or 3 brokers (a quorum of 3 controllers), got {value}")
        return value

    @field_validator("spark_worker_memory")
    @classmethod
    def _memory_size(cls, value: str) -> str:
        return memory_size(value)

    @property
    def spark_master_url(self) -> str:
        """The URL of the local standalone master."""
        return f"spark://localhost:{self.spark_master_port}"

    @property
    def replication_factor(self) -> int:
        """Replicas of each topic on the local brokers."""
        return min(3, self.kafka_brokers)

    @property
    def min_insync_replicas(self) -> int:
        """Replicas that must have a record before an acks=all producer hears it is written."""
        return 2 if self.kafka_brokers >= 3 else 1

    def kafka_ports(self, port: int, controller_port: int, node: int) -> tuple[int, int]:
        """(listener, controller) ports of broker `node` (1-based), from the first broker's."""
        offset = self.kafka_port_step * (node - 1)
        return port + offset, controller_port + offset


def local_cluster(settings: Settings, *, master_set: bool) -> Settings:
    """`settings` pointed at the local cluster: jobs on its master, clients on all its brokers.

    The master becomes the local standalone master when there are workers and `spark.master` was
    not set (`master_set`); a single local bootstrap server becomes the list of every broker.
    """
    services = settings.services
    updates: dict[str, BaseModel] = {}
    if services.spark_workers > 0 and not master_set:
        updates["spark"] = settings.spark.model_copy(update={"master": services.spark_master_url})
    kafka = settings.kafka
    if services.kafka_brokers > 1 and kafka.is_local and "," not in kafka.bootstrap_servers:
        host = kafka.bootstrap_servers.strip().rpartition(":")[0]
        ports = [
            services.kafka_ports(kafka.port, kafka.controller_port, node)[0]
            for node in range(1, services.kafka_brokers + 1)
        ]
        servers = ",".join(f"{host}:{port}" for port in ports)
        updates["kafka"] = kafka.model_copy(update={"bootstrap_servers": servers})
    return settings.model_copy(update=updates) if updates else settings
