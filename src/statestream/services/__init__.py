"""The services statestream runs as plain processes (Kafka, Mosquitto, InfluxDB), and its topics."""

from statestream.services.base import LocalService
from statestream.services.kafka_security import acl_table, grant_access, grant_topics
from statestream.services.stack import (
    ServiceStatus,
    local_services,
    service_statuses,
    start_services,
    stop_services,
)
from statestream.services.topics import TopicResult, TopicSpec, create_topics, topic_specs

__all__ = [
    "LocalService",
    "ServiceStatus",
    "TopicResult",
    "TopicSpec",
    "acl_table",
    "create_topics",
    "grant_access",
    "grant_topics",
    "local_services",
    "service_statuses",
    "start_services",
    "stop_services",
    "topic_specs",
]
