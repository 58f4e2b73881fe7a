"""Where streaming queries write: Kafka exactly once, InfluxDB idempotently."""

from statestream.sinks.influx import Backoff, InfluxWriter, WriteCancelled, WriteOutcome
from statestream.sinks.kafka_exactly_once import commit_markers, ensure_commits_topic
from statestream.sinks.line_protocol import MEASUREMENTS, BadRecord, Point, PointBuilder

__all__ = [
    "MEASUREMENTS",
    "Backoff",
    "BadRecord",
    "InfluxWriter",
    "Point",
    "PointBuilder",
    "WriteCancelled",
    "WriteOutcome",
    "commit_markers",
    "ensure_commits_topic",
]
