"""Shaping the dashboard's Kafka records into chart points and window results."""

from __future__ import annotations

import doctest
import json

import pytest

from statestream.config import JoinSpecSettings
from statestream.dashboard import (
    RecordShaper,
    SeriesPoint,
    UnreadableRecord,
    WindowResult,
    health,
    hub,
    messages,
    policy,
)
from statestream.dashboard.messages import charts_of, series_messages


@pytest.fixture
def shaper() -> RecordShaper:
    return RecordShaper([JoinSpecSettings()])


def test_charts_follow_the_join_specs() -> None:
    specs = [
        JoinSpecSettings(),
        JoinSpecSettings(left="cmdSpeed_{c}", right="vaCurr_{c}", result="x_{c}"),
    ]
    charts = charts_of(specs)
    assert [(c.chart_id, c.title) for c in charts] == [
        ("0.left", "actSpeed"),
        ("0.right", "vaTorque"),
        ("0.result", "vaPower"),
        ("1.left", "cmdSpeed"),
        ("1.right", "vaCurr"),
        ("1.result", "x"),
    ]
    assert charts[1].component_of("vaTorque_C12") == "C12"
    assert charts[1].component_of("vaTorque") is None


def test_a_machine_record_becomes_a_point(shaper: RecordShaper) -> None:
    record = {
        "thing": "R0815",
        "quantity": "vaTorque_C11",
        "phenomenonTime": 1554096380468,
        "result": -4.44,
    }
    assert shaper.point(json.dumps(record).encode()) == SeriesPoint(
        "R0815", "0.right", "vaTorque_C11", "C11", 1554096380468.0, -4.44
    )


def test_a_pair_becomes_a_point_of_the_result_chart(shaper: RecordShaper) -> None:
    pair = {
        "thing": "R0815",
        "quantity": "vaPower_C11",
        "phenomenonTime": 1554096420441.5,
        "result": -134.0,
        "left": {"quantity": "actSpeed_C11", "phenomenonTime": 1554096460415, "result": 288.2},
        "right": {"quantity": "vaTorque_C11", "phenomenonTime": 1554096380468, "result": -4.44},
    }
    point = shaper.point(json.dumps(pair))
    assert point is not None and (point.chart_id, point.time, point.value) == (
        "0.result",
        1554096420441.5,
        -134.0,
    )


def test_quantities_that_are_not_charted_are_skipped(shaper: RecordShaper) -> None:
    record = {"thing": "R0815", "quantity": "vaLoad_C11", "phenomenonTime": 1, "result": 1.6}
    assert shaper.point(json.dumps(record)) is None


@pytest.mark.parametrize(
    "raw",
    [
        b"{not json",
        b"[1, 2]",
        b'{"quantity": "actSpeed_C11", "phenomenonTime": 1, "result": 2}',
        b'{"thing": "R1", "quantity": "actSpeed_C11", "phenomenonTime": "x", "result": 2}',
        b'{"thing": "R1", "quantity": "actSpeed_C11", "phenomenonTime": 1, "result": null}',
        b'{"thing": "R1", "quantity": "actSpeed_C11", "phenomenonTime": 1, "result": true}',
        None,
    ],
)
def test_unreadable_records_are_reported(shaper: RecordShaper, raw: bytes | None) -> None:
    with pytest.raises(UnreadableRecord):
        shaper.point(raw)


def stats(**fields) -> bytes:
    base = {"thing": "R0815", "component": "C11", "window_start": 0, "window_end": 60_000}
    return json.dumps({**base, **fields}).encode()


def test_stats_records_become_window_results(shaper: RecordShaper) -> None:
    levels = stats(kind="levels", level_seconds={"0-20": 30, "80-100": 30})
    assert shaper.window_result(levels) == WindowResult(
        "R0815",
        "C11",
        "levels",
        0,
        60_000,
        {"0-20": 30.0, "20-40": 0.0, "40-60": 0.0, "60-80": 0.0, "80-100": 30.0},
    )
    duty = shaper.window_result(stats(kind="duty_cycle", duty_cycle=0.41))
    assert (duty.key, duty.values) == ("R0815.C11.duty_cycle", {"duty_cycle": 0.41})


def test_alerts_become_window_results_of_their_own_kind(shaper: RecordShaper) -> None:
    alert = shaper.alert(stats(kind="duty_cycle", duty_cycle=0.55, limit=0.4))
    assert (alert.key, alert.values) == ("R0815.C11.alert", {"duty_cycle": 0.55, "limit": 0.4})


@pytest.mark.parametrize(
    "raw",
    [
        stats(kind="levels"),
        stats(kind="duty_cycle"),
        stats(kind="other", duty_cycle=0.1),
        stats(kind="duty_cycle", duty_cycle=0.1, window_start=None),
        b"\xff\xfe",
    ],
)
def test_unreadable_stats_are_reported(shaper: RecordShaper, raw: bytes) -> None:
    with pytest.raises(UnreadableRecord):
        shaper.window_result(raw)


def test_series_are_grouped_sorted_and_thinned_keeping_the_newest() -> None:
    points = [
        SeriesPoint("R1", "0.left", "actSpeed_C11", "C11", t, t * 2.0) for t in range(100, 0, -1)
    ]
    points.append(SeriesPoint("R2", "0.left", "actSpeed_C11", "C11", 5.0, 1.0))
    first, second = series_messages(points, per_series=10)
    assert (first["thing"], first["component"], len(first["t"])) == ("R1", "C11", 10)
    assert first["t"] == sorted(first["t"]) and first["t"][0] == 1 and first["t"][-1] == 100
    assert first["v"] == [t * 2.0 for t in first["t"]]
    assert second == {
        "thing": "R2",
        "chart": "0.left",
        "quantity": "actSpeed_C11",
        "component": "C11",
        "t": [5],
        "v": [1.0],
    }


@pytest.mark.parametrize("module", [messages, policy, hub, health])
def test_docstring_examples(module) -> None:
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
