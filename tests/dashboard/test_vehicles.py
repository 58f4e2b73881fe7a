"""The map's records and display policy: cell results and bunching alerts as the contract writes
them, the event clock, and what the /vehicles page is sent (no Kafka, no browser)."""

from __future__ import annotations

import doctest
import json

import h3
import pytest

from statestream.config import Settings
from statestream.dashboard import policy, vehicles
from statestream.dashboard.kafka_feed import watched_topics
from statestream.dashboard.messages import UnreadableRecord
from statestream.dashboard.vehicle_map import VehicleMap
from statestream.dashboard.vehicles import EventClock, bunching_alert, cell_result, stream_time_ms

CELL = h3.latlng_to_cell(60.1699, 24.9384, 8)
OTHER_CELL = h3.latlng_to_cell(60.2, 24.9, 8)
MINUTE = 60_000
T0 = 1_795_000_000_000  # 2026-11-18


def cell_record(cell: str = CELL, start: int = T0, final: bool = False, **changes) -> bytes:
    record = {
        "cell": cell,
        "resolution": 8,
        "window_start": start,
        "window_end": start + MINUTE,
        "vehicles": 3,
        "positions": 120,
        "mean_speed": 8.25,
        "mean_delay": -42.0,
        "final": final,
        **changes,
    }
    return json.dumps(record).encode()


def alert_record(**changes) -> bytes:
    record = {
        "alert": "bunching",
        "route": "1052",
        "direction": 1,
        "mode": "bus",
        "vehicles": ["22/1240", "22/1234"],
        "episode_start": T0,
        "detected_at": T0 + MINUTE,
        "distance_m": 84.5,
        "lat": 60.17,
        "long": 24.94,
        **changes,
    }
    return json.dumps(record).encode()


class FakeWall:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_cell_result_of_the_contract_is_read_with_its_hexagon() -> None:
    result = cell_result(cell_record(final=True))
    assert (result.key, result.event_time) == (CELL, (T0, T0 + MINUTE))
    assert (result.vehicles, result.positions, result.mean_speed, result.mean_delay) == (
        3,
        120,
        8.25,
        -42.0,
    )
    message = result.as_message()
    assert message["final"] is True and message["kind"] == "cell"
    corners = [tuple(c) for c in message["boundary"]]
    assert corners == [
        (pytest.approx(lat, abs=1e-6), pytest.approx(lng, abs=1e-6))
        for lat, lng in h3.cell_to_boundary(CELL)
    ]
    assert h3.latlng_to_cell(*_centre(corners), 8) == CELL


def _centre(corners: list[tuple[float, float]]) -> tuple[float, float]:
    return sum(c[0] for c in corners) / len(corners), sum(c[1] for c in corners) / len(corners)


def test_null_means_are_kept_as_null() -> None:
    result = cell_result(cell_record(mean_speed=None, mean_delay=None))
    assert result.mean_speed is None and result.mean_delay is None


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[1, 2]",
        cell_record(cell="not-a-cell"),
        cell_record(window_start=None),
        cell_record(window_end=T0 - 1),
        cell_record(vehicles="three"),
    ],
)
def test_what_is_not_a_cell_result_is_unreadable(raw: bytes) -> None:
    with pytest.raises(UnreadableRecord):
        cell_result(raw)


def test_a_bunching_alert_of_the_contract_is_read() -> None:
    alert = bunching_alert(alert_record())
    assert alert.vehicles == ("22/1234", "22/1240")  # sorted, as the contract promises
    assert alert.key == "1052/1/22/1234+22/1240"
    assert alert.event_time == (T0, T0 + MINUTE)
    message = alert.as_message()
    assert (message["lat"], message["long"], message["distance_m"]) == (60.17, 24.94, 84.5)


def test_an_alert_with_a_place_off_the_earth_is_kept_without_a_place() -> None:
    alert = bunching_alert(alert_record(lat=123.0))
    assert (alert.lat, alert.long) == (None, None)


@pytest.mark.parametrize(
    "raw",
    [
        alert_record(alert="duty_cycle"),
        alert_record(route=None),
        alert_record(vehicles="22/1234"),
        alert_record(detected_at=None),
    ],
)
def test_what_is_not_a_bunching_alert_is_unreadable(raw: bytes) -> None:
    with pytest.raises(UnreadableRecord):
        bunching_alert(raw)


def test_the_feed_reads_the_vehicle_topics_of_the_settings() -> None:
    roles = watched_topics(Settings())
    assert roles["analytics.vehicle.cells"] == "cells"
    assert roles["analytics.vehicle.alerts"] == "bunching"


def test_the_stream_time_a_result_proves() -> None:
    early, final = cell_result(cell_record()), cell_result(cell_record(final=True))
    assert stream_time_ms(early, disorder_s=5) == T0
    assert stream_time_ms(final, disorder_s=5) == T0 + MINUTE + 5000
    assert stream_time_ms(bunching_alert(alert_record()), disorder_s=5) == T0 + MINUTE


def test_the_event_clock_jumps_to_the_stream_runs_with_the_wall_and_never_goes_back() -> None:
    wall = FakeWall()
    clock = EventClock(wall)
    assert clock.observe(T0) == T0 / 1000
    wall.now += 2.0
    assert clock.now() == T0 / 1000 + 2.0  # no record: the wall's pace
    clock.observe(T0 + 10 * MINUTE)  # a fast replay: event time ran ahead
    assert clock.now() == (T0 + 10 * MINUTE) / 1000
    clock.observe(T0)  # an old record
    assert clock.now() == (T0 + 10 * MINUTE) / 1000


def _map(wall: FakeWall) -> VehicleMap:
    return VehicleMap(Settings(), EventClock(wall))


def test_a_newer_window_replaces_an_older_one_never_the_reverse() -> None:
    board = _map(FakeWall())
    later = cell_result(cell_record(start=T0 + MINUTE))
    first = board.apply([later], [])
    assert first is not None and [r["window_start"] for r in first["results"]] == [T0 + MINUTE]
    assert board.apply([cell_result(cell_record(start=T0, final=True))], []) is None
    refined = cell_result(cell_record(start=T0 + MINUTE, vehicles=7))
    update = board.apply([refined], [])
    assert update is not None and update["results"][0]["vehicles"] == 7
    assert [r["vehicles"] for r in board.snapshot()["results"]] == [7]


def test_in_a_fast_replay_cells_expire_by_event_time() -> None:
    wall = FakeWall()
    board = _map(wall)
    board.apply([cell_result(cell_record(cell=OTHER_CELL, start=T0))], [])
    # Two windows later in event time, a moment later on the wall: the old cell is due.
    update = board.apply([cell_result(cell_record(start=T0 + 2 * MINUTE))], [])
    assert update is not None and update["expired"] == [OTHER_CELL]
    assert [r["cell"] for r in board.snapshot()["results"]] == [CELL]


def test_a_stopped_stream_leaves_no_stale_cells() -> None:
    wall = FakeWall()
    board = _map(wall)
    board.apply([cell_result(cell_record())], [])
    wall.now += 60 + 4.9
    assert board.expire() is None
    wall.now += 0.2  # window (60 s) + the grace of 5 s
    assert board.expire() == {"type": "update", "expired": [CELL], "event_time": T0 + 65_100}


def test_an_alert_is_drawn_and_listed_once_per_episode() -> None:
    board = _map(FakeWall())
    first = board.apply([], [bunching_alert(alert_record())])
    assert first is not None and len(first["alerts"]) == 1 and len(first["results"]) == 1
    assert board.apply([], [bunching_alert(alert_record())])["alerts"] == []  # type: ignore[index]
    later = alert_record(episode_start=T0 + 5 * MINUTE, detected_at=T0 + 6 * MINUTE)
    second = board.apply([], [bunching_alert(later)])
    assert second is not None and second["results"][0]["episode_start"] == T0 + 5 * MINUTE
    assert [a["episode_start"] for a in board.snapshot()["alerts"]] == [T0 + 5 * MINUTE, T0]


def test_the_layout_names_the_tiles_and_the_window() -> None:
    layout = _map(FakeWall()).layout()
    assert layout["tile_url"] == "" and layout["window_s"] == 60.0


@pytest.mark.parametrize("module", [vehicles, policy])
def test_docstring_examples(module) -> None:
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
