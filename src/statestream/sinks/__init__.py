"""Where streaming queries write: Kafka exactly once, InfluxDB idempotently."""

from statestream.sinks.influx import Backoff, InfluxWriter, WriteCancelled, WriteOutcome
from statestream.sinks.kafka_exactly_once import TransactionalKafkaWriter, checkpoint_query_id
from statestream.sinks.line_protocol import MEASUREMENTS, BadRecord, Point, PointBuilder

__all__ = [
    "MEASUREMENTS",
    "Backoff",
    "BadRecord",
    "InfluxWriter",
    "Point",
    "PointBuilder",
    "TransactionalKafkaWriter",
    "WriteCancelled",
    "WriteOutcome",
    "checkpoint_query_id",
]
