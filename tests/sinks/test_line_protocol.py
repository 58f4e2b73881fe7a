"""Records of each stream as InfluxDB line protocol; records that cannot be points, with reasons."""

from __future__ import annotations

import json

import pytest

from statestream.sinks.line_protocol import BadRecord, PointBuilder, lines_body


def _lines(measurement: str, record: dict | str) -> list[str]:
    value = record if isinstance(record, str) else json.dumps(record)
    points = PointBuilder().points(measurement, value)
    body, precision = lines_body(points)
    return [*body.decode().split("\n"), precision]


def test_a_pair_keeps_its_fraction_of_a_millisecond_in_microseconds() -> None:
    pair = {
        "thing": "R0815",
        "quantity": "vaPower_C11",
        "phenomenonTime": 1554096420441.5,
        "result": -134,
        "left": {"quantity": "actSpeed_C11", "phenomenonTime": 1554096460415, "result": 288.2},
        "right": {"quantity": "vaTorque_C11", "phenomenonTime": 1554096380468, "result": -4.44},
    }
    assert _lines("machine_out", pair) == [
        "machine_out,quantity=vaPower_C11,thing=R0815 left_result=288.2,"
        "left_time=1554096460415.0,result=-134.0,right_result=-4.44,right_time=1554096380468.0 "
        "1554096420441500",
        "u",
    ]


def test_a_levels_record_is_one_point_per_level_at_the_window_start() -> None:
    record = {
        "thing": "R0815",
        "component": "C11",
        "kind": "levels",
        "window_start": 60000,
        "window_end": 120000,
        "level_seconds": {"0-20": 30, "80-100": 30.0},
    }
    assert _lines("machine_stats", record) == [
        "machine_stats,component=C11,kind=levels,level=0-20,thing=R0815 "
        "seconds=30.0,window_end=120000.0 60000",
        "machine_stats,component=C11,kind=levels,level=80-100,thing=R0815 "
        "seconds=30.0,window_end=120000.0 60000",
        "ms",
    ]


def test_duty_cycle_and_alert_records() -> None:
    duty = {
        "thing": "R0815",
        "component": "C12",
        "kind": "duty_cycle",
        "window_start": 0,
        "window_end": 600000,
        "duty_cycle": 0.45,
    }
    assert _lines("machine_stats", duty)[0] == (
        "machine_stats,component=C12,kind=duty_cycle,thing=R0815 "
        "duty_cycle=0.45,window_end=600000.0 0"
    )
    assert _lines("machine_alerts", {**duty, "limit": 0.4})[0] == (
        "machine_alerts,component=C12,thing=R0815 duty_cycle=0.45,limit=0.4,window_end=600000.0 0"
    )


def test_tag_values_are_escaped() -> None:
    record = {"thing": "press 1,a=b", "quantity": "q", "phenomenonTime": 5.0, "result": 1}
    assert _lines("machine_data", record)[0] == (
        "machine_data,quantity=q,thing=press\\ 1\\,a\\=b result=1.0 5"
    )


DATA = {"thing": "R", "quantity": "q", "phenomenonTime": 1, "result": 1}
WINDOW = {"thing": "R", "component": "C", "window_start": 1, "window_end": 2}


def _without(record: dict, name: str) -> dict:
    return {key: value for key, value in record.items() if key != name}


@pytest.mark.parametrize(
    ("measurement", "value", "reason"),
    [
        ("machine_data", "{not json", "bad JSON"),
        ("machine_data", "[1, 2]", "not a JSON object"),
        ("machine_data", _without(DATA, "phenomenonTime"), "phenomenonTime"),
        ("machine_data", {**DATA, "thing": ""}, "thing"),
        ("machine_data", {**DATA, "result": "1"}, "result"),
        ("machine_data", {**DATA, "result": True}, "result"),
        ("machine_data", json.dumps({**DATA, "result": float("nan")}), "bad JSON"),
        ("machine_data", json.dumps(DATA).replace('"result": 1', '"result": 1e400'), "bad JSON"),
        ("machine_data", {**DATA, "phenomenonTime": 1e300}, "time"),
        ("machine_data", {**DATA, "thing": "R\n"}, "line break"),
        ("machine_out", DATA, "left"),
        ("machine_stats", {**WINDOW, "kind": "x"}, "kind"),
        ("machine_stats", {**WINDOW, "kind": "levels", "level_seconds": {}}, "empty"),
        ("machine_alerts", {**WINDOW, "duty_cycle": 0.5}, "limit"),
    ],
)
def test_records_that_cannot_be_points_say_why(
    measurement: str, value: str | dict, reason: str
) -> None:
    text = value if isinstance(value, str) else json.dumps(value)
    with pytest.raises(BadRecord, match=reason):
        PointBuilder().points(measurement, text)


def test_an_empty_message_is_a_bad_record() -> None:
    with pytest.raises(BadRecord, match="empty"):
        PointBuilder().points("machine_data", None)
