"""The Kafka topics statestream uses, created with the partitions and configuration of the settings.

>>> [t.state for t in create_topics(load_settings())]  # doctest: +SKIP
['created', 'created', 'created', 'created', 'created', 'created', 'created']

A second call reports "exists" (the example needs Kafka: it is not run as a doctest).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Literal

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, TopicMetadata

from statestream.config import Settings
from statestream.errors import ServiceError
from statestream.exactly_once.markers import COMMITS_TOPIC_CONFIG
from statestream.services.kafka import kafka_health
from statestream.services.kafka_security import grant_access, tool_login


@dataclass(frozen=True)
class TopicSpec:
    """A topic as statestream wants it."""

    name: str
    partitions: int
    config: dict[str, str] = field(default_factory=dict)
    replication_factor: int = -1  # -1: the brokers' default.replication.factor


@dataclass(frozen=True)
class TopicResult:
    """What `create_topics` did with one topic; `partitions` is what the topic has now.

    An existing topic keeps its partitions and configuration; `note` says where they differ in
    partition count from `spec`.
    """

    spec: TopicSpec
    state: Literal["created", "exists"]
    partitions: int
    note: str = ""
    warning: str = ""  # an existing time-series topic that compacts (and so loses history)

    @property
    def name(self) -> str:
        return self.spec.name


def topic_specs(settings: Settings) -> list[TopicSpec]:
    """The topics of the settings: three time-series topics, six others, the commits topic.

    Time series are deleted after their retention, never compacted: their key is
    thing.quantity, so compaction would keep only each series' latest record. Only the commits
    topic, where a query's last marker is all that matters, is compacted. On the local brokers
    every topic has `services.replication_factor` replicas (3 of 3 brokers, with
    min.insync.replicas 2); on another machine's Kafka, that cluster's defaults.
    """
    topics = settings.topics
    retention = {
        "retention.ms": str(topics.retention_ms),
        "retention.bytes": str(topics.retention_bytes),
    }
    series = {"cleanup.policy": topics.cleanup_policy, **retention}
    specs = [
        TopicSpec(topics.machine_data, topics.machine_data_partitions, series),
        TopicSpec(topics.machine_out, topics.machine_out_partitions, series),
        TopicSpec(topics.vehicle_positions, topics.vehicle_positions_partitions, series),
        *(TopicSpec(name, topics.other_partitions, retention) for name in topics.others),
        TopicSpec(topics.commits, 1, dict(COMMITS_TOPIC_CONFIG)),
    ]
    return [replicated(spec, settings) for spec in specs]


def replicated(spec: TopicSpec, settings: Settings) -> TopicSpec:
    """`spec` with the replication of the local brokers (unchanged for another machine's Kafka)."""
    if not settings.kafka.is_local:
        return spec
    services = settings.services
    config = dict(spec.config)
    if services.min_insync_replicas > 1:
        config["min.insync.replicas"] = str(services.min_insync_replicas)
    return replace(spec, config=config, replication_factor=services.replication_factor)


def create_topics(settings: Settings, timeout_s: float = 30.0) -> list[TopicResult]:
    """Create the topics that do not exist yet; existing ones are reported, not changed.

    On the local brokers, the components are granted their ACLs on these topics (again).
    """
    problem = kafka_health(settings)
    if problem is not None:
        raise ServiceError(f"Kafka: {problem}; start it with `statestream services up`")
    grant_access(settings)
    admin = AdminClient(settings.kafka.client_config("admin"))
    specs = topic_specs(settings)
    new_topics = [
        NewTopic(
            spec.name,
            num_partitions=spec.partitions,
            replication_factor=spec.replication_factor,
            config=spec.config,
        )
        for spec in specs
    ]
    futures = admin.create_topics(new_topics, request_timeout=timeout_s)
    existing = admin.list_topics(timeout=timeout_s).topics
    results = []
    for spec in specs:
        try:
            futures[spec.name].result()
            state: Literal["created", "exists"] = "created"
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise ServiceError(f"could not create topic {spec.name}: {error.str()}") from None
            state = "exists"
        results.append(_result(spec, state, existing.get(spec.name)))
    series = {settings.topics.machine_data, settings.topics.machine_out}
    return [
        _with_compaction_warning(admin, result, settings) if result.name in series else result
        for result in results
    ]


def _with_compaction_warning(
    admin: AdminClient, result: TopicResult, settings: Settings
) -> TopicResult:
    """`result` with a warning if its topic, a time series, has a compacting cleanup policy."""
    config = _topic_config(admin, result.name)
    policy = config["cleanup.policy"].value if "cleanup.policy" in config else "delete"
    if "compact" not in policy:
        return result
    warning = (
        f"{result.name} has cleanup.policy={policy}: Kafka keeps only the latest record of each "
        "series (key thing.quantity) and a lagging or restarted job loses data; change it with "
        f"kafka-configs.sh {tool_login(settings)} --alter --entity-type topics --entity-name "
        f"{result.name} "
        "--add-config cleanup.policy=delete"
    )
    return replace(result, warning=warning)


def _topic_config(admin: AdminClient, topic: str, timeout_s: float = 15.0) -> dict:
    """The configuration of `topic`, waiting while a just-created topic is unknown to a broker
    (of several brokers, the one asked may not have heard of it yet)."""
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return admin.describe_configs([resource])[resource].result(timeout=30)
        except KafkaException as exc:
            unknown = exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
            if not unknown or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _result(
    spec: TopicSpec, state: Literal["created", "exists"], metadata: TopicMetadata | None
) -> TopicResult:
    partitions = len(metadata.partitions) if metadata is not None else spec.partitions
    note = ""
    if partitions != spec.partitions:
        note = f"has {partitions} partitions, the settings say {spec.partitions}"
    return TopicResult(spec, state, partitions, note)
