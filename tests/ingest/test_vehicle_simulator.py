"""The vehicle simulator: HSL's topic and payload, deterministic per seed, and the feed's faults
(positions without a fix, tunnel bursts, duplicates, disorder) in the share real feeds have."""

from __future__ import annotations

import re
from collections import Counter
from functools import cache

import orjson
import pytest

from statestream.ingest import RawEvent
from statestream.ingest.hfp import VehiclePositionProcessor, geohash
from statestream.ingest.vehicle_simulator import FeedFaults, vehicle_events

START_MS = 1_795_587_300_000  # 2026-11-25T06:15:00Z
VP_FIELDS = [
    *("desi", "dir", "oper", "veh", "tst", "tsi", "spd", "hdg", "lat", "long", "acc", "dl"),
    *("odo", "drst", "oday", "jrn", "line", "start", "loc", "stop", "route", "occu"),
]
TOPIC = re.compile(
    r"/hfp/v2/journey/ongoing/vp/(?P<mode>bus|tram)/(?P<oper>\d{4})/(?P<veh>\d{5})/"
    r"(?P<route>\d{4})/(?P<dir>[12])/(?P<headsign>[^/]+)/(?P<start>\d\d:\d\d)/"
    r"(?P<stop>\d{7}|EOL)/(?P<level>\d?)/(?P<geohash>[^/]*/[^/]*/[^/]*/[^/]*)"
)
TST = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


@cache
def _feed(seed: int = 7) -> list[tuple[str, bytes]]:
    """40 vehicles for 10 minutes: enough for every fault to happen."""
    return list(vehicle_events(40, seed, START_MS, 600))


def _vp(payload: bytes) -> dict:
    [(name, vp)] = orjson.loads(payload).items()
    assert name == "VP"
    return vp


def test_the_same_seed_sends_the_same_messages_and_another_seed_others() -> None:
    first = list(vehicle_events(10, 3, START_MS, 60))
    assert first == list(vehicle_events(10, 3, START_MS, 60))
    assert first != list(vehicle_events(10, 4, START_MS, 60))


def test_topic_and_payload_are_hsls_hfp_v2() -> None:
    for topic, payload in _feed()[:3000]:
        match = TOPIC.fullmatch(topic)
        assert match, topic
        vp = _vp(payload)
        assert list(vp) == VP_FIELDS
        assert int(match["oper"]) == vp["oper"] and int(match["veh"]) == vp["veh"]
        assert match["route"] == vp["route"] and match["dir"] == vp["dir"]
        assert match["start"] == vp["start"] and isinstance(vp["oper"], int)
        assert TST.fullmatch(vp["tst"]) and vp["tsi"] == _epoch_s(vp["tst"])
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", vp["oday"])
        assert vp["drst"] in (0, 1) and 0 <= vp["hdg"] < 360 and vp["spd"] >= 0
        if vp["lat"] is None:
            assert vp["long"] is None and vp["loc"] == "N/A"
            assert match["level"] == "" and match["geohash"] == "///"
        else:
            assert 60.1 < vp["lat"] < 60.3 and 24.7 < vp["long"] < 25.2
            assert match["geohash"] == "/".join(geohash(vp["lat"], vp["long"]))


def test_every_message_is_one_the_processor_takes() -> None:
    processor = VehiclePositionProcessor()
    positions = [processor.process(RawEvent(p, t, 0))[0] for t, p in _feed()[:5000]]
    assert {p.mode for p in positions} == {"bus", "tram"}
    assert len({p.route for p in positions}) >= 20
    assert len({(p.route, p.direction) for p in positions}) >= 30


def test_a_small_share_of_positions_has_no_fix() -> None:
    without_fix = sum(_vp(payload)["lat"] is None for _, payload in _feed())
    assert 0.005 < without_fix / len(_feed()) < 0.06


def test_a_few_messages_come_twice() -> None:
    copies = Counter(_feed())
    twice = sum(1 for count in copies.values() if count == 2)
    assert 0 < twice < 0.02 * len(copies)
    assert max(copies.values()) == 2


def test_tunnels_hold_messages_and_release_them_in_a_burst_tens_of_seconds_later() -> None:
    newest, bursts, run = 0, [], []  # runs of one vehicle's messages far behind the newest
    for _, payload in _feed():
        vp = _vp(payload)
        behind = newest - _epoch_ms(vp["tst"])
        if behind > 10_000 and (not run or run[-1][0] == (vp["oper"], vp["veh"])):
            run.append(((vp["oper"], vp["veh"]), behind, vp["loc"]))
            continue
        if len(run) >= 10:
            bursts.append(run)
        run = []
        newest = max(newest, _epoch_ms(vp["tst"]))
    assert bursts, "no tunnel burst"
    for burst in bursts:
        assert max(behind for _, behind, _ in burst) > 20_000  # tens of seconds late
        assert {loc for _, _, loc in burst} <= {"ODO", "N/A"}  # positions from the odometer


def test_a_little_disorder_and_none_without_faults() -> None:
    def out_of_order(feed: list[tuple[str, bytes]]) -> int:
        last: dict[tuple[int, int], int] = {}
        count = 0
        for _, payload in feed:
            vp = _vp(payload)
            vehicle, time = (vp["oper"], vp["veh"]), _epoch_ms(vp["tst"])
            count += time < last.get(vehicle, 0)
            last[vehicle] = max(time, last.get(vehicle, 0))
        return count

    assert 0 < out_of_order(_feed()) < 0.05 * len(_feed())
    clean = list(vehicle_events(40, 7, START_MS, 120, faults=FeedFaults.none()))
    assert out_of_order(clean) == 0 and len(set(clean)) == len(clean) == 40 * 120
    assert all(_vp(payload)["lat"] is not None for _, payload in clean)


@pytest.mark.parametrize("root", ["", "test_abc"])
def test_a_topic_root_goes_before_hfp(root: str) -> None:
    topic, _ = next(iter(vehicle_events(1, 0, START_MS, 1, root=root)))
    assert topic.startswith(f"{root}/hfp/v2/journey/ongoing/vp/")


def _epoch_ms(tst: str) -> int:
    from statestream.ingest.hfp import epoch_ms

    return epoch_ms(tst)


def _epoch_s(tst: str) -> int:
    return _epoch_ms(tst) // 1000


def test_a_live_schedule_lets_a_message_go_when_it_is_due() -> None:
    from statestream.codecs.bad_input import now_ms
    from statestream.ingest.vehicle_delivery import LiveSchedule

    now = now_ms()
    timed = [(now - 5, "a", b"1"), (now, "b", b"2"), (now + 60_000, "c", b"3")]
    schedule = LiveSchedule(iter(timed), offset_ms=0)
    assert schedule.allowed(0) == 2  # the third is a minute away
    assert schedule.wait_s(0) == 0.0
    assert [next(schedule), next(schedule)] == [("a", b"1"), ("b", b"2")]
    assert schedule.allowed(2) == 0 and 50 < schedule.wait_s(2) <= 60
    assert next(schedule) == ("c", b"3")
    assert schedule.allowed(3) == 1 and next(schedule, None) is None  # the end: one more look
