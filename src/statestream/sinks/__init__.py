"""Where streaming queries write InfluxDB, idempotently.

Kafka, exactly once, has a package of its own: `statestream.exactly_once`.
"""

from statestream.sinks.influx import Backoff, InfluxWriter, WriteCancelled, WriteOutcome
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
]
