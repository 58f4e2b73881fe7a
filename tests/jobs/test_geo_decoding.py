"""The geo query's decoding: every value is a position or gets a reason, never an exception."""

from __future__ import annotations

import json
from unittest import mock

import numpy as np
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from statestream.ingest.vehicle_positions import VehiclePosition, vehicle_codec_for
from statestream.queries.geo.decoding import decode_positions, vehicle_id, vehicle_key

GOOD = VehiclePosition(22, 1234, 1764051330123, "bus", "1052", 1, "52", 60.1699, 24.9384,
                       8.3, 120, -5, 1234, 0, 0, None, "08:15", "2026-11-25")  # fmt: skip


def test_positions_with_and_without_a_fix_and_refused_values() -> None:
    codec = vehicle_codec_for("json")
    values = [
        codec.encode(GOOD, 5),
        codec.encode(GOOD._replace(lat=None, long=None, speed=None), 5),
        codec.encode(GOOD._replace(event_time_ms=10**17), 5),
        codec.encode(GOOD._replace(long=None), 5),
        None,
    ]
    columns = decode_positions(values, "json", 8)
    assert columns["reason"][:2].tolist() == [None, None]
    assert columns["reason"][2] == "event time 100000000000000000 is not an epoch ms time"
    assert "both or neither" in columns["reason"][3] and columns["reason"][4] == "empty message"
    assert columns["cell"][1] == 0 and np.isnan(columns["speed"][1])
    assert columns["cell"][0] != 0 and columns["delay"][0] == -5.0


def test_vehicle_ids_round_trip() -> None:
    assert vehicle_key(vehicle_id(22, 1234)) == "22/1234"
    assert vehicle_key(vehicle_id(2**31 - 1, 2**32 - 1)) == f"{2**31 - 1}/{2**32 - 1}"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(st.binary(max_size=200), st.none()), max_size=20),
    st.sampled_from(["none", "json", "protobuf"]),
)
def test_any_bytes_are_a_position_or_a_reason(values, envelope) -> None:
    columns = decode_positions(values, envelope, 8)
    for i, reason in enumerate(columns["reason"]):
        if reason is None:
            assert columns["t"][i] >= 0 and (columns["cell"][i] != 0) == np.isfinite(
                columns["lat"][i]
            )
        else:
            assert isinstance(reason, str) and reason


_ANY_JSON = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
)
_FIELDS = {
    "oper": st.one_of(st.integers(-5, 2**33), _ANY_JSON),
    "veh": st.one_of(st.integers(-5, 2**33), _ANY_JSON),
    "lat": st.one_of(st.floats(-100, 100), _ANY_JSON),
    "long": st.one_of(st.floats(-200, 200), _ANY_JSON),
    "speed": st.one_of(st.floats(0, 40), st.integers(0, 40), _ANY_JSON),
    "delay": st.one_of(st.integers(-600, 600), _ANY_JSON),
}
_TIMES = st.one_of(st.integers(-5, 10**14), _ANY_JSON)


@st.composite
def _json_values(draw, envelope: str) -> bytes:
    """A value of `envelope` (none or json) whose fields are plain, odd or missing."""
    codec = vehicle_codec_for(envelope)  # type: ignore[arg-type]
    obj = orjson.loads(codec.encode(GOOD, 5))
    details = obj if envelope == "none" else obj["vehiclePosition"]
    for name, values in _FIELDS.items():
        if draw(st.booleans()):
            details[name] = draw(values)
        elif draw(st.integers(0, 9)) == 0:
            del details[name]
    time_name = "phenomenonTime" if envelope == "none" else "eventTimeMs"
    if draw(st.booleans()):
        obj[time_name] = draw(_TIMES)
    if envelope == "json" and draw(st.integers(0, 9)) == 0:
        obj["ingestionTimeMs"] = draw(_ANY_JSON)
    return json.dumps(obj).encode()  # (orjson cannot write integers past 64 bits)


@settings(max_examples=300, deadline=None)
@given(st.data(), st.sampled_from(["none", "json"]))
def test_the_fast_path_decodes_as_the_codec_does(data, envelope) -> None:
    values = data.draw(st.lists(_json_values(envelope), min_size=1, max_size=8))
    fast = decode_positions(values, envelope, 8)
    codec = type(vehicle_codec_for(envelope))
    with mock.patch.object(codec, "numbers", lambda _self, _value: None):
        slow = decode_positions(values, envelope, 8)
    assert fast["reason"].tolist() == slow["reason"].tolist()
    for name in ("t", "vehicle", "lat", "long", "speed", "delay", "cell"):
        np.testing.assert_array_equal(fast[name], slow[name], err_msg=name)


def test_plain_values_take_the_fast_path() -> None:
    for envelope in ("none", "json"):
        codec = vehicle_codec_for(envelope)
        numbers = codec.numbers(codec.encode(GOOD, 5))
        assert numbers == (GOOD.event_time_ms, 22, 1234, 60.1699, 24.9384, 8.3, -5)
        assert codec.numbers(codec.encode(GOOD._replace(lat=None, long=None), 5)) is not None
        assert codec.numbers(b'{"oper": true}') is None and codec.numbers(b"{") is None
