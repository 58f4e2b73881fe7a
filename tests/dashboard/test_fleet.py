"""The fleet overview's rows (power, duty cycle, alert state) and how the app sends them."""

from __future__ import annotations

import asyncio
import doctest
import json

import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from statestream.config import Settings
from statestream.dashboard import DashboardState, WindowResult, create_app, fleet
from statestream.dashboard.fleet import FleetBoard
from statestream.dashboard.kafka_feed import FeedBatch
from statestream.dashboard.vehicles import cell_result
from tests.dashboard.test_vehicles import cell_record

T0 = 1_795_000_000_000


def power(thing: str, component: str, times: list[int], watts: list[float]) -> dict:
    """A series message as the feed sends it (see `series_messages`)."""
    quantity = f"vaPower_{component}"
    return {"thing": thing, "chart": "0.result", "quantity": quantity, "component": component,
            "t": times, "v": watts}  # fmt: skip


def duty(thing: str, component: str, share: float, kind: str = "duty_cycle") -> WindowResult:
    values = {"duty_cycle": share, "limit": 0.4} if kind == "alert" else {"duty_cycle": share}
    return WindowResult(thing, component, kind, T0, T0 + 600_000, values)


def test_power_is_the_sum_of_the_components_newest_values_in_kw() -> None:
    board = FleetBoard("vaPower_{c}")
    board.take_series(
        [
            power("R1", "C11", [T0, T0 + 2000, T0 + 1000], [1000.0, 4000.0, 9000.0]),
            power("R1", "C12", [T0 + 500], [-500.0]),
            {**power("R1", "C11", [T0 + 9000], [1e9]), "quantity": "actSpeed_C11"},  # not power
        ]
    )
    board.take_series([power("R1", "C11", [T0 + 1500], [7000.0])])  # older than the one held
    (row,) = board.rows()
    assert (row["thing"], row["power_kw"], row["power_time"]) == ("R1", 3.5, T0 + 2000)


def test_duty_cycle_is_the_busiest_component_and_alerts_follow_the_display() -> None:
    board = FleetBoard("vaPower_{c}")
    board.take_results([duty("R1", "C11", 0.2), duty("R1", "C12", 0.55), duty("R2", "C11", 0.1)])
    board.take_results([duty("R1", "C12", 0.55, kind="alert")])
    rows = {row["thing"]: row for row in board.rows()}
    assert (rows["R1"]["duty_cycle"], rows["R1"]["duty_component"]) == (0.55, "C12")
    assert rows["R1"]["alert"] and rows["R1"]["alert_components"] == ["C12"]
    assert not rows["R2"]["alert"] and rows["R2"]["power_kw"] is None
    board.take_changes()
    board.take_expired(["R1.C12.alert", "R1.C12.duty_cycle", "R9.C11.alert"])
    (changed,) = board.take_changes()
    assert (changed["thing"], changed["alert"], changed["duty_cycle"]) == ("R1", False, 0.2)


def test_only_changed_rows_are_handed_over() -> None:
    board = FleetBoard("vaPower_{c}")
    board.take_series([power(f"M{i:04d}", "C11", [T0], [1000.0 * i]) for i in range(1000)])
    assert len(board.take_changes()) == 1000
    board.take_series([power("M0007", "C11", [T0 + 1000], [1.0])])
    assert [row["thing"] for row in board.take_changes()] == ["M0007"]
    assert len(board) == 1000


def _next_message(client) -> dict:
    return json.loads(asyncio.run(asyncio.wait_for(client.get(), 1.0)))


def test_the_app_sends_the_fleet_its_changed_rows_on_each_sweep() -> None:
    state = DashboardState(Settings())
    client = state.fleet_hub.connect()
    machines = state.hub.connect()
    batch = FeedBatch(
        series=[power("R1", "C11", [T0], [2500.0])],
        results=[duty("R1", "C11", 0.5)],
        alerts=[duty("R1", "C11", 0.5, kind="alert")],
    )
    state.apply(batch)
    assert len(client) == 0  # throttled: rows go out on the sweep, not with every batch
    state.sweep()
    message = _next_message(client)
    assert message["type"] == "fleet"
    assert [(r["thing"], r["power_kw"], r["alert"]) for r in message["rows"]] == [("R1", 2.5, True)]
    assert _next_message(machines)["series"][0]["thing"] == "R1"  # the machines page as before
    state.sweep()
    assert len(client) == 0  # nothing changed


def test_cells_go_to_the_vehicle_pages_only() -> None:
    state = DashboardState(Settings())
    vehicles, machines = state.vehicle_hub.connect(), state.hub.connect()
    state.apply(FeedBatch(cells=[cell_result(cell_record())]))
    message = _next_message(vehicles)
    assert [r["cell"] for r in message["results"]] == [json.loads(cell_record())["cell"]]
    assert len(message["results"][0]["boundary"]) == 6
    assert json.loads(asyncio.run(machines.get()))["results"] == []


def test_the_pages_and_their_snapshots_are_served() -> None:
    with TestClient(create_app(Settings(), start_feed=False)) as client:
        for path in ("/fleet", "/vehicles", "/static/fleet.js", "/static/vehicles.js"):
            assert client.get(path).status_code == 200, path
        assert "leaflet.js" in client.get("/vehicles").text
        assert client.get("/api/fleet").json() == {
            "layout": {"duty_cycle_limit": 0.4, "rated_power_kw": 20.0},
            "rows": [],
        }
        snapshot = client.get("/api/vehicles").json()
        assert snapshot["results"] == [] and snapshot["layout"]["resolution"] == 8
        with (
            client.websocket_connect("/ws?view=vehicles"),
            client.websocket_connect("/ws?view=fleet"),
        ):
            pass
        with pytest.raises(WebSocketDisconnect) as refused, client.websocket_connect("/ws?view=x"):
            pass
        assert refused.value.code == 1008


def test_docstring_examples() -> None:
    result = doctest.testmod(fleet)
    assert result.attempted > 0 and result.failed == 0
