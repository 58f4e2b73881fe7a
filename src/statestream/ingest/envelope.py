"""How a record becomes a Kafka value: plain record JSON, or wrapped in the common event schema.

`settings.ingest.envelope` chooses, and the join job reads the same setting:

- `none` (default): the record itself, `{"thing", "quantity", "phenomenonTime", "result"}`;
- `json`: the envelope `Event` (event.proto) in protobuf's JSON mapping, e.g.
  `{"eventTimeMs": …, "ingestionTimeMs": …, "machineRecord": {"thing", "quantity", "result"}}`;
- `protobuf`: the same `Event` as protobuf binary.

    >>> record = MachineRecord("R0815", "vaLoad_C11", 1554096380468, 1.5)
    >>> codec = codec_for("json")
    >>> value = codec.encode(record, ingestion_ms=1554096380470)
    >>> print(value.decode())  # doctest: +NORMALIZE_WHITESPACE
    {"eventTimeMs": 1554096380468, "ingestionTimeMs": 1554096380470,
     "machineRecord": {"thing": "R0815", "quantity": "vaLoad_C11", "result": 1.5}}
    >>> codec.decode(codec.encode(record, 1554096380470)) == (record, 1554096380470)
    True
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from functools import lru_cache
from typing import Any, Literal

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from statestream.ingest.base import MachineRecord

Envelope = Literal["none", "json", "protobuf"]
ENVELOPES: tuple[Envelope, ...] = ("none", "json", "protobuf")
PACKAGE = "statestream.v1"
EVENT_MESSAGE = f"{PACKAGE}.Event"


class RecordCodec(ABC):
    """Encodes a record (with its ingestion time) as a Kafka value, and decodes it again."""

    name: Envelope

    @abstractmethod
    def encode(self, record: MachineRecord, ingestion_ms: int) -> bytes:
        """The Kafka value of `record`."""

    @abstractmethod
    def decode(self, value: bytes) -> tuple[MachineRecord, int | None]:
        """The record and its ingestion time (None when the encoding has none)."""


@lru_cache(maxsize=65_536)
def _json_string(text: str) -> str:
    return json.dumps(text)


@lru_cache(maxsize=65_536)
def _plain_head(thing: str, quantity: str) -> str:
    return f'{{"thing": {json.dumps(thing)}, "quantity": {json.dumps(quantity)}, "phenomenonTime": '


class PlainJsonCodec(RecordCodec):
    """The record as the seed wrote it: `{"thing", "quantity", "phenomenonTime", "result"}`."""

    name: Envelope = "none"

    def encode(self, record: MachineRecord, ingestion_ms: int) -> bytes:
        head = _plain_head(record.thing, record.quantity)
        return f'{head}{record.phenomenon_time_ms}, "result": {record.result!r}}}'.encode()

    def decode(self, value: bytes) -> tuple[MachineRecord, int | None]:
        obj = json.loads(value)
        record = MachineRecord(
            obj["thing"], obj["quantity"], obj["phenomenonTime"], float(obj["result"])
        )
        return record, None


class JsonEnvelopeCodec(RecordCodec):
    """The `Event` envelope in protobuf's JSON mapping (int64 as numbers, which it accepts)."""

    name: Envelope = "json"

    def encode(self, record: MachineRecord, ingestion_ms: int) -> bytes:
        return (
            f'{{"eventTimeMs": {record.phenomenon_time_ms}, "ingestionTimeMs": {ingestion_ms}, '
            f'"machineRecord": {{"thing": {_json_string(record.thing)}, '
            f'"quantity": {_json_string(record.quantity)}, "result": {record.result!r}}}}}'
        ).encode()

    def decode(self, value: bytes) -> tuple[MachineRecord, int | None]:
        obj = json.loads(value)
        details = obj["machineRecord"]
        record = MachineRecord(
            details["thing"], details["quantity"], int(obj["eventTimeMs"]), details["result"]
        )
        return record, int(obj["ingestionTimeMs"])


class ProtobufEnvelopeCodec(RecordCodec):
    """The `Event` envelope as protobuf binary."""

    name: Envelope = "protobuf"

    def __init__(self) -> None:
        self._event = event_message_class()

    def encode(self, record: MachineRecord, ingestion_ms: int) -> bytes:
        event = self._event(
            event_time_ms=int(record.phenomenon_time_ms), ingestion_time_ms=ingestion_ms
        )
        details = event.machine_record
        details.thing = record.thing
        details.quantity = record.quantity
        details.result = record.result
        return event.SerializeToString()

    def decode(self, value: bytes) -> tuple[MachineRecord, int | None]:
        event = self._event.FromString(value)
        details = event.machine_record
        record = MachineRecord(details.thing, details.quantity, event.event_time_ms, details.result)
        return record, event.ingestion_time_ms


def codec_for(envelope: Envelope) -> RecordCodec:
    """The codec of an envelope setting: `none`, `json` or `protobuf`."""
    codecs: dict[str, type[RecordCodec]] = {
        "none": PlainJsonCodec,
        "json": JsonEnvelopeCodec,
        "protobuf": ProtobufEnvelopeCodec,
    }
    return codecs[envelope]()


def event_file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """event.proto as a descriptor, built in code so that no protoc is needed."""
    proto = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(
        name="statestream/v1/event.proto", package=PACKAGE, syntax="proto3"
    )
    record = file.message_type.add(name="MachineRecord")
    for number, (name, kind) in enumerate(
        (
            ("thing", proto.TYPE_STRING),
            ("quantity", proto.TYPE_STRING),
            ("result", proto.TYPE_DOUBLE),
        ),
        start=1,
    ):
        record.field.add(name=name, number=number, type=kind, label=proto.LABEL_OPTIONAL)
    _add_vehicle_position(file.message_type.add(name="VehiclePosition"))
    event = file.message_type.add(name="Event")
    event.field.add(
        name="event_time_ms", number=1, type=proto.TYPE_INT64, label=proto.LABEL_OPTIONAL
    )
    event.field.add(
        name="ingestion_time_ms", number=2, type=proto.TYPE_INT64, label=proto.LABEL_OPTIONAL
    )
    event.oneof_decl.add(name="details")
    event.field.add(
        name="machine_record",
        number=3,
        type=proto.TYPE_MESSAGE,
        type_name=f".{PACKAGE}.MachineRecord",
        label=proto.LABEL_OPTIONAL,
        oneof_index=0,
    )
    event.field.add(
        name="vehicle_position",
        number=4,
        type=proto.TYPE_MESSAGE,
        type_name=f".{PACKAGE}.VehiclePosition",
        label=proto.LABEL_OPTIONAL,
        oneof_index=0,
    )
    for message in file.message_type:
        for field in message.field:
            field.json_name = _camel(field.name)
    return file


_VEHICLE_POSITION_FIELDS: tuple[tuple[str, int, bool], ...] = (
    ("vehicle", descriptor_pb2.FieldDescriptorProto.TYPE_STRING, False),
    ("mode", descriptor_pb2.FieldDescriptorProto.TYPE_STRING, False),
    ("route", descriptor_pb2.FieldDescriptorProto.TYPE_STRING, False),
    ("direction", descriptor_pb2.FieldDescriptorProto.TYPE_INT32, False),
    ("desi", descriptor_pb2.FieldDescriptorProto.TYPE_STRING, False),
    ("oper", descriptor_pb2.FieldDescriptorProto.TYPE_INT32, False),
    ("veh", descriptor_pb2.FieldDescriptorProto.TYPE_INT32, False),
    ("lat", descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE, True),
    ("long", descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE, True),
    ("speed", descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE, True),
    ("heading", descriptor_pb2.FieldDescriptorProto.TYPE_INT32, True),
    ("delay", descriptor_pb2.FieldDescriptorProto.TYPE_INT32, True),
    ("odometer", descriptor_pb2.FieldDescriptorProto.TYPE_INT32, True),
    ("door_status", descriptor_pb2.FieldDescriptorProto.TYPE_INT32, True),
    ("occupancy", descriptor_pb2.FieldDescriptorProto.TYPE_INT32, True),
    ("next_stop", descriptor_pb2.FieldDescriptorProto.TYPE_STRING, False),
    ("journey_start", descriptor_pb2.FieldDescriptorProto.TYPE_STRING, False),
    ("operating_day", descriptor_pb2.FieldDescriptorProto.TYPE_STRING, False),
)
"""(name, type, proto3 optional) of `VehiclePosition`'s fields, numbered from 1."""


def _add_vehicle_position(message: descriptor_pb2.DescriptorProto) -> None:
    """The fields of `VehiclePosition`; each proto3 `optional` one gets its synthetic oneof."""
    for number, (name, kind, optional) in enumerate(_VEHICLE_POSITION_FIELDS, start=1):
        field = message.field.add(
            name=name,
            number=number,
            type=kind,
            label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
        )
        if optional:
            field.proto3_optional = True
            field.oneof_index = len(message.oneof_decl)
            message.oneof_decl.add(name=f"_{name}")


def event_descriptor_set() -> bytes:
    """The serialized FileDescriptorSet of event.proto (what protoc --descriptor_set_out writes)."""
    return descriptor_pb2.FileDescriptorSet(file=[event_file_descriptor()]).SerializeToString()


@lru_cache(maxsize=1)
def event_message_class() -> Any:
    """The generated message class of `statestream.v1.Event`, in a pool of its own."""
    pool = descriptor_pool.DescriptorPool()
    pool.Add(event_file_descriptor())
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(EVENT_MESSAGE))


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def decode_event_fields(
    value: bytes | None,
) -> tuple[str | None, str | None, float | None, float | None]:
    """A protobuf `Event` value as (thing, quantity, event time in ms, result).

    What it lacks is None, and so is all of it when it is no `Event` with a `MachineRecord`.
    Proto3 cannot tell an empty string or a zero time from a missing one: both count as missing.
    """
    if value is None:
        return None, None, None, None
    try:
        event = event_message_class().FromString(value)
    except DecodeError:
        return None, None, None, None
    if event.WhichOneof("details") != "machine_record":
        return None, None, None, None
    details = event.machine_record
    time = float(event.event_time_ms) if event.event_time_ms else None
    return details.thing or None, details.quantity or None, time, details.result
