"""Vehicle-position codecs: every envelope round-trips, a position without a fix included."""

from __future__ import annotations

import json

import pytest
from google.protobuf import json_format

from statestream.ingest import ENVELOPES
from statestream.ingest.envelope import event_message_class
from statestream.ingest.vehicle_positions import VehiclePosition, vehicle_codec_for

WITH_FIX = VehiclePosition(
    22, 1234, 1764051330123, "bus", "1052", 1, "52", 60.171, 24.9414, 8.3, 120, -5, 1234, 0, 0,
    "1130446", "08:15", "2026-11-25",
)  # fmt: skip
NO_FIX = WITH_FIX._replace(lat=None, long=None, speed=None, heading=None, next_stop=None)
ALL_ABSENT = NO_FIX._replace(delay=None, odometer=None, door_status=None, occupancy=None)
ZEROS = WITH_FIX._replace(lat=0.0, long=0.0, speed=0.0, heading=0, delay=0, odometer=0)
POSITIONS = [WITH_FIX, NO_FIX, ALL_ABSENT, ZEROS, WITH_FIX._replace(mode="tram", route="1010")]


@pytest.mark.parametrize("envelope", ENVELOPES)
@pytest.mark.parametrize("position", POSITIONS)
def test_every_envelope_round_trips(envelope: str, position: VehiclePosition) -> None:
    codec = vehicle_codec_for(envelope)  # type: ignore[arg-type]
    decoded, ingestion_ms = codec.decode(codec.encode(position, 1764051330200))
    assert decoded == position
    assert ingestion_ms == (None if envelope == "none" else 1764051330200)


def test_plain_json_is_the_contracts_record() -> None:
    assert json.loads(vehicle_codec_for("none").encode(WITH_FIX, 0)) == {
        "vehicle": "22/1234",
        "phenomenonTime": 1764051330123,
        "mode": "bus",
        "route": "1052",
        "direction": 1,
        "desi": "52",
        "oper": 22,
        "veh": 1234,
        "lat": 60.171,
        "long": 24.9414,
        "speed": 8.3,
        "heading": 120,
        "delay": -5,
        "odometer": 1234,
        "doorStatus": 0,
        "occupancy": 0,
        "nextStop": "1130446",
        "journeyStart": "08:15",
        "operatingDay": "2026-11-25",
    }
    plain = json.loads(vehicle_codec_for("none").encode(NO_FIX, 0))
    assert plain["lat"] is None and plain["long"] is None and plain["nextStop"] is None


def test_the_json_envelope_wraps_the_same_fields() -> None:
    value = json.loads(vehicle_codec_for("json").encode(NO_FIX, 7))
    assert value["eventTimeMs"] == NO_FIX.event_time_ms and value["ingestionTimeMs"] == 7
    plain = json.loads(vehicle_codec_for("none").encode(NO_FIX, 7))
    del plain["phenomenonTime"]
    assert value["vehiclePosition"] == plain


@pytest.mark.parametrize("position", POSITIONS)
def test_the_json_envelope_is_the_protobuf_message_in_protobufs_json_mapping(
    position: VehiclePosition,
) -> None:
    event_class = event_message_class()
    from_json = json_format.Parse(vehicle_codec_for("json").encode(position, 7), event_class())
    from_binary = event_class.FromString(vehicle_codec_for("protobuf").encode(position, 7))
    assert from_json == from_binary
    assert from_binary.WhichOneof("details") == "vehicle_position"
    assert from_binary.vehicle_position.HasField("lat") == (position.lat is not None)
