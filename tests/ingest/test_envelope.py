"""Record codecs: plain JSON, and the event envelope as JSON or protobuf, round-trip exactly."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from google.protobuf import json_format

from statestream.ingest import ENVELOPES, MachineRecord, codec_for, event_descriptor_set
from statestream.ingest.envelope import (
    decode_event_fields,
    event_file_descriptor,
    event_message_class,
)

PROTO_FILE = Path(__file__).resolve().parents[2] / "src/statestream/ingest/event.proto"
RECORDS = [
    MachineRecord("R0815", "vaLoad_C11", 1554096380468, 1.629638671875),
    MachineRecord("H31415", "actSpeed_C11", 1554096380469, -0.0),
    MachineRecord('th"ing\\ü', "q/ä", 4102444799999, 1e-300),
]


@pytest.mark.parametrize("envelope", ENVELOPES)
@pytest.mark.parametrize("record", RECORDS)
def test_every_encoding_round_trips(envelope: str, record: MachineRecord) -> None:
    codec = codec_for(envelope)  # type: ignore[arg-type]
    decoded, ingestion_ms = codec.decode(codec.encode(record, 1700000000123))
    assert decoded == record
    assert ingestion_ms == (None if envelope == "none" else 1700000000123)


def test_plain_json_is_the_machine_data_record() -> None:
    value = codec_for("none").encode(RECORDS[0], 0)
    assert json.loads(value) == {
        "thing": "R0815",
        "quantity": "vaLoad_C11",
        "phenomenonTime": 1554096380468,
        "result": 1.629638671875,
    }


@pytest.mark.parametrize("record", RECORDS)
def test_the_json_envelope_is_the_protobuf_message_in_protobufs_json_mapping(
    record: MachineRecord,
) -> None:
    event_class = event_message_class()
    from_json = json_format.Parse(codec_for("json").encode(record, 7), event_class())
    from_binary = event_class.FromString(codec_for("protobuf").encode(record, 7))
    assert from_json == from_binary
    assert from_binary.WhichOneof("details") == "machine_record"


def test_the_descriptor_built_in_code_is_event_proto() -> None:
    declared = {
        (message, field, int(number))
        for message, body in re.findall(r"message (\w+) \{(.*?)\n\}", PROTO_FILE.read_text(), re.S)
        for field, number in re.findall(r"^\s+(?:optional )?\w+ (\w+) = (\d+);", body, re.M)
    }
    built = {
        (message.name, field.name, field.number)
        for message in event_file_descriptor().message_type
        for field in message.field
    }
    assert built == declared
    assert event_descriptor_set()  # serialises


def test_decoding_protobuf_fields_for_spark() -> None:
    value = codec_for("protobuf").encode(RECORDS[0], 1)
    assert decode_event_fields(value) == ("R0815", "vaLoad_C11", 1554096380468.0, 1.629638671875)
    assert decode_event_fields(b"\xff\xff garbage") == (None, None, None, None)
    assert decode_event_fields(None) == (None, None, None, None)
    empty = codec_for("protobuf").encode(MachineRecord("", "q", 0, 2.0), 1)
    assert decode_event_fields(empty) == (None, "q", None, 2.0)
