"""Vehicle positions on Kafka → columns and rejects, without Spark; the alert's JSON text."""

from __future__ import annotations

import doctest

import pandas as pd
import pytest

import statestream.jobs.bunching_processor
import statestream.jobs.vehicle_decoding
from statestream.ingest.vehicle_positions import VehiclePosition, vehicle_codec_for
from statestream.jobs.vehicle_decoding import decode_vehicle_rows

POSITION = VehiclePosition(
    22,
    1234,
    1764051330123,
    "tram",
    "1004",
    2,
    "4",
    60.171,
    24.9414,
    8.3,
    120,
    -5,
    1234,
    0,
    0,
    "1130446",
    "08:15",
    "2026-11-25",
)


@pytest.mark.parametrize(
    "module", [statestream.jobs.vehicle_decoding, statestream.jobs.bunching_processor]
)
def test_docstring_examples(module) -> None:
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("envelope", ["none", "json", "protobuf"])
def test_every_envelope_decodes_to_the_same_columns(envelope: str) -> None:
    codec = vehicle_codec_for(envelope)
    no_fix = POSITION._replace(lat=None, long=None, speed=None, delay=None)
    values = [codec.encode(POSITION, 1), codec.encode(no_fix, 2)]
    rows = pd.DataFrame(
        {"key": ["22/1234"] * 2, "value": values, "partition": [0, 0], "offset": [1, 2]}
    )
    positions, rejects = decode_vehicle_rows(rows, envelope)
    assert rejects.empty
    first, second = positions.to_dict("records")
    assert {k: first[k] for k in ("line", "vehicle", "mode", "route", "direction", "t")} == {
        "line": "1004/2",
        "vehicle": "22/1234",
        "mode": "tram",
        "route": "1004",
        "direction": 2,
        "t": 1764051330123.0,
    }
    assert (first["lat"], first["long"], first["speed"], first["delay"]) == (
        60.171,
        24.9414,
        pytest.approx(8.3),
        -5.0,
    )
    assert all(pd.isna(second[k]) for k in ("lat", "long", "speed", "delay"))


def test_unusable_values_are_rejected_with_their_reason() -> None:
    plain = vehicle_codec_for("none")
    out_of_range = plain.encode(POSITION._replace(lat=91.0), 0)
    half_fix = plain.encode(POSITION._replace(long=None), 0)
    no_route = plain.encode(POSITION._replace(route=""), 0)
    missing_time = b'{"vehicle": "22/1234", "route": "1004"}'
    values = [None, b"[1, 2]", missing_time, out_of_range, half_fix, no_route]
    rows = pd.DataFrame(
        {"key": "22/1234", "value": values, "partition": 3, "offset": range(len(values))}
    )
    positions, rejects = decode_vehicle_rows(rows, "none")
    assert positions.empty
    assert rejects["offset"].tolist() == list(range(len(values)))
    assert rejects["reason"].tolist() == [
        "empty message",
        "not a vehicle position (none envelope): list indices must be integers or slices, not str",
        "missing phenomenonTime",
        "coordinates out of range: lat 91.0, long 24.9414",
        "lat and long must both be given or both be null (no fix)",
        "route is not a non-empty string",
    ]
    assert rejects["raw"].tolist()[1:] == values[1:]
