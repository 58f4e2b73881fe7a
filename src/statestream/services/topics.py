"""The Kafka topics statestream uses, created with the partitions and configuration of the settings.

>>> [t.state for t in create_topics(load_settings())]   # a second call reports "exists"
['created', 'created', 'created', 'created', 'created', 'created', 'created']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic, TopicMetadata

from statestream.config import Settings
from statestream.errors import ServiceError
from statestream.services.kafka import kafka_health


@dataclass(frozen=True)
class TopicSpec:
    """A topic as statestream wants it."""

    name: str
    partitions: int
    config: dict[str, str] = field(default_factory=dict)


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

    @property
    def name(self) -> str:
        return self.spec.name


def topic_specs(settings: Settings) -> list[TopicSpec]:
    """The topics of the settings: the two compacted machine topics, four others, the commits."""
    topics = settings.topics
    retention = {"retention.ms": str(topics.retention_ms)}
    compacted = {"cleanup.policy": topics.cleanup_policy, **retention}
    others = (topics.dead_letter, topics.late, topics.stats, topics.alerts)
    return [
        TopicSpec(topics.machine_data, topics.machine_data_partitions, compacted),
        TopicSpec(topics.machine_out, topics.machine_out_partitions, compacted),
        *(TopicSpec(name, topics.other_partitions, retention) for name in others),
        TopicSpec(topics.commits, 1, {"cleanup.policy": "compact"}),
    ]


def create_topics(settings: Settings, timeout_s: float = 30.0) -> list[TopicResult]:
    """Create the topics that do not exist yet; existing ones are reported, not changed."""
    problem = kafka_health(settings)
    if problem is not None:
        raise ServiceError(f"Kafka: {problem}; start it with `statestream services up`")
    admin = AdminClient(settings.kafka.client_config())
    specs = topic_specs(settings)
    new_topics = [
        NewTopic(
            spec.name, num_partitions=spec.partitions, replication_factor=-1, config=spec.config
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
    return results


def _result(
    spec: TopicSpec, state: Literal["created", "exists"], metadata: TopicMetadata | None
) -> TopicResult:
    partitions = len(metadata.partitions) if metadata is not None else spec.partitions
    note = ""
    if partitions != spec.partitions:
        note = f"has {partitions} partitions, the settings say {spec.partitions}"
    return TopicResult(spec, state, partitions, note)
