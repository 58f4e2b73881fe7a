"""The HFP VP processor: one message → one vehicle position, anything unusable rejected with
its kind and a reason (one kind per rule: the connector counts them)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from statestream.config import Settings
from statestream.ingest import EventRejected, RawEvent
from statestream.ingest.hfp import (
    VehiclePositionProcessor,
    epoch_ms,
    geohash,
    geohash_level,
    hfp_topic,
    parse_topic,
)
from statestream.ingest.routes import vehicle_route
from tests.fuzz_inputs import VP_EVENT, VP_TOPIC


def _process(vp: Any = VP_EVENT, topic: str = VP_TOPIC, name: str = "VP") -> list:
    payload = vp if isinstance(vp, bytes) else json.dumps({name: vp}).encode()
    return VehiclePositionProcessor().process(RawEvent(payload, topic, 0))


def _rejected(**change: Any) -> EventRejected:
    vp = {**VP_EVENT, **change}
    for name in [n for n, v in change.items() if v is _DROP]:
        del vp[name]
    with pytest.raises(EventRejected) as caught:
        _process(vp)
    return caught.value


_DROP = object()


def test_a_vp_event_becomes_the_contracts_position() -> None:
    [position] = _process()
    assert position.key == "22/1234"
    assert position.event_time_ms == 1_795_587_330_123  # 2026-11-25T06:15:30.123Z
    assert (position.mode, position.route, position.direction, position.desi) == (
        "bus", "1052", 1, "52",
    )  # fmt: skip
    assert (position.lat, position.long, position.speed, position.heading) == (
        60.171, 24.9414, 8.3, 120,
    )  # fmt: skip
    assert (position.delay, position.odometer, position.door_status, position.occupancy) == (
        -5, 1234, 0, 0,
    )  # fmt: skip
    assert (position.next_stop, position.journey_start, position.operating_day) == (
        "1130446", "08:15", "2026-11-25",
    )  # fmt: skip


# A subcontracted trip as HSL publishes it: the vehicle is operator 18's (topic), the trip
# operator 6's (payload `oper`).
SUBCONTRACTED_TOPIC = (
    "/hfp/v2/journey/ongoing/vp/bus/0018/00423/1014/1/Hietalahti/07:42/1204412/3/60;24/19/63/51"
)
SUBCONTRACTED = (
    b'{"VP":{"desi":"14","dir":"1","oper":6,"veh":423,"tst":"2026-11-25T05:42:17.512Z",'
    b'"tsi":1795585337,"spd":7.41,"hdg":212,"lat":60.165432,"long":24.931876,"acc":-0.36,'
    b'"dl":-38,"odo":2154,"drst":0,"oday":"2026-11-25","jrn":412,"line":147,"start":"07:42",'
    b'"loc":"GPS","stop":null,"route":"1014","occu":0}}'
)
# The same vehicle between journeys: no route, direction, headsign, start or next stop.
DEADRUN_TOPIC = "/hfp/v2/deadrun/ongoing/vp/bus/0018/00423//////3/60;24/19/63/51"
DEADRUN_WITH_NULLS = (
    b'{"VP":{"desi":null,"dir":null,"oper":18,"veh":423,"tst":"2026-11-25T05:20:03.118Z",'
    b'"tsi":1795584003,"spd":11.2,"hdg":87,"lat":60.165432,"long":24.931876,"acc":0.12,'
    b'"dl":null,"odo":null,"drst":0,"oday":null,"jrn":null,"line":null,"start":null,'
    b'"loc":"GPS","stop":null,"route":null,"occu":0}}'
)
DEADRUN_WITHOUT = (
    b'{"VP":{"oper":18,"veh":423,"tst":"2026-11-25T05:20:03.118Z","tsi":1795584003,'
    b'"spd":11.2,"hdg":87,"lat":60.165432,"long":24.931876,"acc":0.12,"drst":0,"loc":"GPS",'
    b'"occu":0}}'
)


def test_a_subcontracted_trip_is_the_topics_vehicle_not_the_trip_operators() -> None:
    [position] = _process(SUBCONTRACTED, SUBCONTRACTED_TOPIC)
    assert (position.key, position.oper, position.veh) == ("18/423", 18, 423)
    assert position.event_time_ms == 1_795_585_337_512  # 2026-11-25T05:42:17.512Z
    assert (position.route, position.direction, position.desi, position.next_stop) == (
        "1014", 1, "14", "1204412",
    )  # fmt: skip
    [(key, _)] = vehicle_route(Settings(), "#").encode([position], 0)
    assert key == b"18/423"


def test_vehicles_of_two_operators_driving_for_one_trip_operator_are_two() -> None:
    other_topic = SUBCONTRACTED_TOPIC.replace("/0018/", "/0022/")
    [first] = _process(SUBCONTRACTED, SUBCONTRACTED_TOPIC)
    [second] = _process(SUBCONTRACTED, other_topic)  # the same payload: oper 6, veh 423
    assert (first.key, second.key) == ("18/423", "22/423")


def test_the_topics_vehicle_wins_over_another_in_the_payload_and_is_noted() -> None:
    processor = VehiclePositionProcessor()
    payload = SUBCONTRACTED.replace(b'"veh":423', b'"veh":424')
    [position] = processor.process(RawEvent(payload, SUBCONTRACTED_TOPIC, 0))
    assert position.key == "18/423"
    assert processor.notes() == [
        "1 vehicle positions whose payload veh is not the topic's vehicle number (topic taken)"
    ]


@pytest.mark.parametrize("drop", [("oper",), ("veh",), ("oper", "veh")])
def test_the_payload_needs_no_operator_or_vehicle(drop: tuple[str, ...]) -> None:
    processor = VehiclePositionProcessor()
    vp = {k: v for k, v in VP_EVENT.items() if k not in drop}
    [position] = processor.process(RawEvent(json.dumps({"VP": vp}).encode(), VP_TOPIC, 0))
    assert position.key == "22/1234" and processor.notes() == []


@pytest.mark.parametrize("payload", [DEADRUN_WITH_NULLS, DEADRUN_WITHOUT])
def test_a_deadrun_is_rejected_as_no_journey(payload: bytes) -> None:
    with pytest.raises(EventRejected) as caught:
        _process(payload, DEADRUN_TOPIC)
    assert caught.value.kind == "hfp_bad_topic"
    assert caught.value.reason == (
        "HFP deadrun of vehicle 18/423: not on a journey, no route or direction"
    )


def test_no_fix_is_a_position_without_coordinates() -> None:
    processor = VehiclePositionProcessor()
    payload = json.dumps({"VP": {**VP_EVENT, "lat": None, "long": None}}).encode()
    [position] = processor.process(RawEvent(payload, VP_TOPIC, 0))
    assert position.lat is None and position.long is None and processor.without_fix == 1
    assert processor.notes() == ["1 vehicle positions without a GPS fix"]


def test_optional_values_may_be_missing() -> None:
    vp = {k: v for k, v in VP_EVENT.items() if k not in ("spd", "hdg", "dl", "odo", "drst")}
    [position] = _process(vp)
    assert position.speed is position.heading is position.delay is position.odometer is None


@pytest.mark.parametrize(
    "topic",
    [
        VP_TOPIC + "/",  # a trailing slash
        "test_root" + VP_TOPIC,  # a namespace before /hfp
        VP_TOPIC.replace("/1130446/", "/EOL/"),  # at the end of the line
        "/hfp/v2/journey/ongoing/vp/bus/0022/01234/1052/1/Kamppi/08:15/1130446////",  # no fix
    ],
)
def test_topics_hsl_writes_parse(topic: str) -> None:
    parsed = parse_topic(topic)
    assert (parsed.mode, parsed.operator, parsed.vehicle) == ("bus", 22, 1234)
    assert parsed.next_stop == (None if "/EOL/" in topic else "1130446")


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        ({"tst": "yesterday"}, "hfp_bad_time"),
        ({"tst": 1795587330123}, "hfp_bad_time"),
        ({"tst": "2026-11-25T06:15:30.123"}, "hfp_bad_time"),  # no time zone
        ({"tst": _DROP}, "hfp_bad_time"),
        ({"lat": 91.0}, "hfp_bad_position"),
        ({"long": -180.5}, "hfp_bad_position"),
        ({"lat": None}, "hfp_bad_position"),  # long without lat
        ({"lat": "60.17"}, "hfp_bad_position"),
        ({"dir": "3"}, "hfp_bad_value"),
        ({"spd": "fast"}, "hfp_bad_value"),
        ({"hdg": 1e12}, "hfp_bad_value"),
        ({"route": [1052]}, "hfp_bad_value"),
        ({"drst": True}, "hfp_bad_value"),
    ],
)
def test_each_unusable_value_is_rejected_with_its_kind(change: dict, kind: str) -> None:
    rejected = _rejected(**change)
    assert rejected.kind == kind
    assert rejected.reason and "\n" not in rejected.reason


@pytest.mark.parametrize(
    ("payload", "kind"),
    [
        (b'{"VP": {"oper": 22,', "hfp_bad_json"),
        (b"\xff\xfe", "hfp_bad_json"),
        (b"[1, 2]", "hfp_bad_json"),
        (b'{"VP": [1]}', "hfp_bad_json"),
        (b'{"VP": {}, "DOO": {}}', "hfp_bad_json"),
        (json.dumps({"DOO": VP_EVENT}).encode(), "hfp_not_vp"),
        (json.dumps({"ARS": VP_EVENT}).encode(), "hfp_not_vp"),
    ],
)
def test_payloads_that_are_no_vp_event_are_rejected(payload: bytes, kind: str) -> None:
    with pytest.raises(EventRejected) as caught:
        _process(payload)
    assert caught.value.kind == kind


@pytest.mark.parametrize(
    ("topic", "kind"),
    [
        ("machine/states", "hfp_bad_topic"),
        ("/hfp/v2/journey/ongoing/vp/bus/0022", "hfp_bad_topic"),
        ("positions.jsonl", "hfp_bad_topic"),  # a replay whose source is a file, not a topic
        (VP_TOPIC.replace("/0022/", "/22a/"), "hfp_no_vehicle"),
        (VP_TOPIC.replace("/01234/", "//"), "hfp_no_vehicle"),
        (VP_TOPIC.replace("/01234/", "/４２３/"), "hfp_no_vehicle"),  # fullwidth digits
        (VP_TOPIC.replace("/0022/", "/2147483648/"), "hfp_no_vehicle"),  # beyond int32
        (VP_TOPIC.replace("/journey/", "/deadrun/"), "hfp_bad_topic"),
        (VP_TOPIC.replace("/vp/", "/doo/"), "hfp_not_vp"),
    ],
)
def test_topics_that_do_not_parse_are_rejected(topic: str, kind: str) -> None:
    with pytest.raises(EventRejected) as caught:
        _process(topic=topic)
    assert caught.value.kind == kind


def test_the_topic_is_written_as_hsl_writes_it() -> None:
    topic = hfp_topic("tram", 40, 412, "1004", 2, "Munkkiniemi", "07:05", None, 60.1983, 24.876)
    assert topic == (
        "/hfp/v2/journey/ongoing/vp/tram/0040/00412/1004/2/Munkkiniemi/07:05/EOL/0/60;24/18/97/86"
    )
    assert hfp_topic("bus", 6, 1, "1014", 1, "Pasila", "07:05", "1", None, None).endswith("/1/////")
    assert parse_topic(topic).next_stop is None


def test_geohash_levels_say_what_changed_first() -> None:
    here = geohash(60.171, 24.9414)
    assert geohash_level(None, here) == 0
    assert geohash_level(here, geohash(60.1712, 24.9414)) == 4  # nothing in 3 decimals
    assert geohash_level(here, geohash(60.172, 24.9414)) == 3
    assert geohash_level(here, geohash(60.181, 24.9414)) == 2
    assert geohash_level(here, geohash(60.271, 24.9414)) == 1
    assert geohash_level(here, geohash(61.171, 24.9414)) == 0


def test_tst_is_read_to_the_millisecond() -> None:
    assert epoch_ms("1970-01-01T00:00:00.001Z") == 1
    assert epoch_ms("2026-11-25T08:15:30.123+02:00") == 1_795_587_330_123
