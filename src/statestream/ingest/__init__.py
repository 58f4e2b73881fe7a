"""Getting machine data in: connectors receive raw events, processors turn them into records.

- `base`: the `Connector` and `Processor` abstractions, `RawEvent`, `MachineRecord`.
- `machine_data`: `MachineRowProcessor`, wide row → one record per quantity.
- `pipeline`: `IngestPipeline`, processor + envelope codec + idempotent Kafka producer + dead
  letters, reporting which events are safely in Kafka.
- `mqtt_connector`, `replay`: the MQTT subscription and the file/sequence replay connectors.
- `envelope`: plain record JSON or the common event envelope (JSON or protobuf).
- `simulator`, `simulate`: replaying real machine rows to MQTT or Kafka.
"""

from importlib import resources
from pathlib import Path

from statestream.ingest.base import (
    Connector,
    EventRejected,
    MachineRecord,
    Processor,
    RawEvent,
)
from statestream.ingest.envelope import (
    ENVELOPES,
    JsonEnvelopeCodec,
    PlainJsonCodec,
    ProtobufEnvelopeCodec,
    RecordCodec,
    codec_for,
    event_descriptor_set,
)
from statestream.ingest.kafka_sink import KafkaRecordSink
from statestream.ingest.machine_data import MachineRowProcessor
from statestream.ingest.mqtt_connector import MqttConnector
from statestream.ingest.pipeline import (
    IngestCounts,
    IngestPipeline,
    connector_pipeline,
    dead_letter_value,
    machine_data_pipeline,
    routes_pipeline,
)
from statestream.ingest.replay import ReplayConnector, file_lines
from statestream.ingest.simulate import SimulationResult, run_simulation
from statestream.ingest.simulator import Pacer, SimulationPlan

SAMPLE_FILE = Path(str(resources.files("statestream") / "data" / "machine_events.jsonl"))
"""The bundled sample: 5,000 rows of three CNC machines, 19,825 records (Apache License 2.0)."""

__all__ = [
    "ENVELOPES",
    "SAMPLE_FILE",
    "Connector",
    "EventRejected",
    "IngestCounts",
    "IngestPipeline",
    "JsonEnvelopeCodec",
    "KafkaRecordSink",
    "MachineRecord",
    "MachineRowProcessor",
    "MqttConnector",
    "Pacer",
    "PlainJsonCodec",
    "Processor",
    "ProtobufEnvelopeCodec",
    "RawEvent",
    "RecordCodec",
    "ReplayConnector",
    "SimulationPlan",
    "SimulationResult",
    "codec_for",
    "connector_pipeline",
    "dead_letter_value",
    "event_descriptor_set",
    "file_lines",
    "machine_data_pipeline",
    "routes_pipeline",
    "run_simulation",
]
