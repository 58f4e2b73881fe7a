"""A replay's payload adjustments, read back by the processors that will take them: HFP and
machine event times shifted, copies renamed consistently in topic and payload, anything else
left byte for byte."""

from __future__ import annotations

import json

import orjson
import pytest

from statestream.ingest import SAMPLE_FILE, RawEvent, file_lines
from statestream.ingest.hfp import VehiclePositionProcessor
from statestream.ingest.machine_data import MachineRowProcessor
from statestream.ingest.recording import ReplayAdjuster, adjusted
from tests.fuzz_inputs import VP_EVENT

HFP_TOPIC = (
    "/hfp/v2/journey/ongoing/vp/bus/0018/00423/1065/1/"
    "Kamppi via Töölö/08:15/1130446/3/60;24/19/74/11"
)
HFP = json.dumps({"VP": {**VP_EVENT, "oper": 6, "veh": 423}}).encode()  # a subcontracted trip
ROW = b'{"Thing": "R0815", "Timestamp": 1554096380468, "vaTorque_C11": -4.44, "id": "c352"}'
HOUR_MS = 3_600_000


def _vp(payload: bytes) -> dict:
    return orjson.loads(payload)["VP"]


def _position(topic: str, payload: bytes):
    [position] = VehiclePositionProcessor().process(RawEvent(payload, topic, 0))
    return position


def test_hfp_times_move_in_their_own_spelling() -> None:
    topic, payload = adjusted(HFP_TOPIC, HFP, shift_ms=HOUR_MS + 877)
    vp = _vp(payload)
    assert topic == HFP_TOPIC
    assert vp["tst"] == "2026-11-25T07:15:31.000Z" and vp["tsi"] == 1795587330 + 3601
    assert vp["oday"] == "2026-11-25"
    assert _position(topic, payload).event_time_ms == 1795587330123 + HOUR_MS + 877
    assert {k: v for k, v in vp.items() if k not in ("tst", "tsi")} == {
        k: v for k, v in _vp(HFP).items() if k not in ("tst", "tsi")
    }


def test_hfp_operating_day_moves_with_the_date_and_other_spellings_keep_theirs() -> None:
    late = json.dumps({"VP": {**VP_EVENT, "tst": "2026-11-25T23:59:59.5+00:00"}}).encode()
    vp = _vp(adjusted(HFP_TOPIC, late, shift_ms=1000)[1])
    assert vp["tst"] == "2026-11-26T00:00:00.5+00:00" and vp["oday"] == "2026-11-26"
    only_tsi = json.dumps({"DOO": {"tsi": 1795587330, "veh": 423}}).encode()
    assert orjson.loads(adjusted(HFP_TOPIC, only_tsi, shift_ms=-2500)[1]) == {
        "DOO": {"tsi": 1795587327, "veh": 423}
    }


def test_an_hfp_copy_is_another_vehicle_in_topic_and_payload_alike() -> None:
    topic, payload = adjusted(HFP_TOPIC, HFP, copy=3)
    assert topic == HFP_TOPIC.replace("/bus/0018/00423/", "/bus/30018/00423/")
    assert _vp(payload)["oper"] == 30006 and _vp(payload)["veh"] == 423
    original, copied = _position(HFP_TOPIC, HFP), _position(topic, payload)
    assert (original.key, copied.key) == ("18/423", "30018/423")
    assert copied._replace(oper=18) == original


def test_a_machine_row_moves_in_its_own_unit_and_a_copy_is_another_machine() -> None:
    _, payload = adjusted("machine/states", ROW, shift_ms=1500, copy=2)
    row = orjson.loads(payload)
    assert row == {
        "Thing": "R0815-copy2", "Timestamp": 1554096381968, "vaTorque_C11": -4.44, "id": "c352",
    }  # fmt: skip
    [record] = MachineRowProcessor().process(RawEvent(payload, "machine/states", 0))
    assert record.key == "R0815-copy2.vaTorque_C11" and record.phenomenon_time_ms == 1554096381968
    for timestamp, moved in ((1554096380, 1554096382), (1554096380.25, 1554096381.75),
                             (1554096380468000, 1554096381968000)):  # fmt: skip
        row = {"Thing": "R1", "Timestamp": timestamp}
        shifted = adjusted("m", json.dumps(row).encode(), shift_ms=1500)[1]
        assert orjson.loads(shifted)["Timestamp"] == moved


@pytest.mark.parametrize(
    "payload",
    [b"\x00\xff", b"21.5", b"[1, 2]", b'{"a": 1}', b'{"VP": 5}', b'{"Thing": "R1"}', b"{bad"],
)
def test_a_payload_of_no_known_kind_is_left_byte_for_byte(payload: bytes) -> None:
    assert adjusted("t", payload, shift_ms=1000, copy=1) == ("t", payload)


def test_nothing_to_change_leaves_the_recorded_bytes() -> None:
    assert adjusted(HFP_TOPIC, HFP) == (HFP_TOPIC, HFP)
    adjust = ReplayAdjuster(shift_time=False, copy=0, start_ms=0)
    assert adjust("machine/states", ROW, 0) == ("machine/states", ROW)


def test_shift_time_makes_the_first_event_now_and_each_pass_moves_on() -> None:
    now = 1_800_000_000_000
    adjust = ReplayAdjuster(shift_time=True, copy=1, start_ms=now)
    rows = list(file_lines(SAMPLE_FILE))[:3]
    times = [orjson.loads(row)["Timestamp"] for row in rows]
    assert adjust("t", b"binary \xff", 0) == ("t", b"binary \xff")  # no event time: unmoved
    out = [orjson.loads(adjust("machine/states", row, 0)[1]) for row in rows]
    assert [r["Timestamp"] for r in out] == [now + t - times[0] for t in times]
    assert {r["Thing"] for r in out} == {"R0815-copy1"}
    second_pass = orjson.loads(adjust("machine/states", rows[0], 5000)[1])
    assert second_pass["Timestamp"] == now + 5000
    assert adjust.unadjusted == 1


def test_a_loop_without_shift_time_moves_later_passes_only() -> None:
    adjust = ReplayAdjuster(shift_time=False, copy=0, start_ms=0)
    assert adjust("m", ROW, 0) == ("m", ROW)
    assert orjson.loads(adjust("m", ROW, 7000)[1])["Timestamp"] == 1554096387468
