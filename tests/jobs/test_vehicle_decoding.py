"""Vehicle positions on Kafka → columns and rejects, without Spark; the alert's JSON text."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statestream.ingest.vehicle_positions import VehiclePosition, vehicle_codec_for
from statestream.jobs.vehicle_decoding import decode_vehicle_rows

ENVELOPES = ["none", "json", "protobuf"]
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


@pytest.mark.parametrize("envelope", ENVELOPES)
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


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)


@st.composite
def kafka_values(draw) -> bytes | None:
    """Anything on the topic: random bytes, random JSON, a position with random fields."""
    kind = draw(st.sampled_from(["bytes", "json", "fields", "none"]))
    if kind == "bytes":
        return draw(st.binary(max_size=64))
    if kind == "json":
        return json.dumps(draw(JSON_VALUES)).encode()
    if kind == "none":
        return None
    obj = json.loads(vehicle_codec_for("none").encode(POSITION, 0))
    names = draw(st.lists(st.sampled_from(sorted(obj)), min_size=1, max_size=3, unique=True))
    return json.dumps({**obj, **{name: draw(JSON_VALUES) for name in names}}).encode()


@settings(max_examples=150, deadline=None)
@given(st.lists(kafka_values(), min_size=1, max_size=6), st.sampled_from(ENVELOPES))
def test_any_value_is_a_usable_position_or_a_reject(values, envelope: str) -> None:
    rows = pd.DataFrame(
        {"key": "22/1234", "value": values, "partition": 0, "offset": range(len(values))}
    )
    positions, rejects = decode_vehicle_rows(rows, envelope)
    assert sorted([*positions["offset"], *rejects["offset"]]) == list(range(len(values)))
    assert all(isinstance(reason, str) and reason for reason in rejects["reason"])
    assert positions["line"].str.len().gt(2).all()
    assert positions["t"].between(0, 10**13).all()
    fix = positions["lat"].notna()
    assert fix.eq(positions["long"].notna()).all()
    assert positions.loc[fix, "lat"].abs().le(90).all()
    assert positions.loc[fix, "long"].abs().le(180).all()


def test_a_deeply_nested_or_huge_value_is_a_reject() -> None:
    values = [b"[" * 20_000 + b"]" * 20_000, b'{"vehicle": "' + b"x" * 1_500_000 + b'"}']
    rows = pd.DataFrame({"key": "22/1", "value": values, "partition": 0, "offset": [0, 1]})
    for envelope in ENVELOPES:
        positions, rejects = decode_vehicle_rows(rows, envelope)
        assert positions.empty and len(rejects) == 2
