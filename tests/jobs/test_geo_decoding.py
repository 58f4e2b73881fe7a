"""The geo query's decoding: every value is a position or gets a reason, never an exception."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from statestream.ingest.vehicle_positions import VehiclePosition, vehicle_codec_for
from statestream.jobs.geo_decoding import decode_positions, vehicle_id, vehicle_key

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
