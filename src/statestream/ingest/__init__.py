"""Getting data in: connectors receive raw events, processors turn them into records.

- `base`: the `Connector` and `Processor` abstractions, `RawEvent`, `MachineRecord`.
- `machine_data`: `MachineRowProcessor`, wide row → one record per quantity.
- `hfp`, `vehicle_positions`: HSL's HFP v2 VP events → `VehiclePosition` records and their codec.
- `routes`: MQTT topic filter → processor, Kafka topic and encoding (`ingest.processors`).
- `pipeline`: `IngestPipeline`, routes + idempotent Kafka producer + dead letters, reporting
  which events are safely in Kafka.
- `mqtt_connector`, `replay`: the MQTT subscription and the file/sequence replay connectors.
- `envelope`: plain record JSON or the common event envelope (JSON or protobuf).
- `machine_simulator` (the plan), `machine_delivery` (sending it): machine rows to MQTT or Kafka.
- `vehicle_simulator` (the vehicles), `vehicle_delivery` (sending them): simulated HSL vehicles.
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
from statestream.ingest.hfp import VehiclePositionProcessor
from statestream.ingest.kafka_sink import KafkaRecordSink
from statestream.ingest.machine_data import MachineRowProcessor
from statestream.ingest.machine_delivery import SimulationResult, run_simulation
from statestream.ingest.machine_simulator import Pacer, SimulationPlan
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
from statestream.ingest.vehicle_delivery import VehicleSimulation, run_vehicle_simulation
from statestream.ingest.vehicle_positions import VehiclePosition, vehicle_codec_for
from statestream.ingest.vehicle_simulator import FeedFaults, vehicle_events

SAMPLE_FILE = Path(str(resources.files("statestream") / "data" / "machine_events.jsonl"))
"""The bundled sample: 5,000 rows of three CNC machines, 19,825 records (Apache License 2.0)."""

__all__ = [
    "ENVELOPES",
    "SAMPLE_FILE",
    "Connector",
    "EventRejected",
    "FeedFaults",
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
    "VehiclePosition",
    "VehiclePositionProcessor",
    "VehicleSimulation",
    "codec_for",
    "connector_pipeline",
    "dead_letter_value",
    "event_descriptor_set",
    "file_lines",
    "machine_data_pipeline",
    "routes_pipeline",
    "run_simulation",
    "run_vehicle_simulation",
    "vehicle_codec_for",
    "vehicle_events",
]
