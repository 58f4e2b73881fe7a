"""The /vehicles map and the /fleet overview in headless Chromium, fed through the real Kafka.

One `statestream dashboard` process (topics of its own, a token set) serves the map and the fleet
tests. The map test writes cell results and a bunching alert in the contract's shapes, in Kafka
transactions (one aborted, which must never show: the feed reads read_committed); the fleet test
writes the power, duty cycle and alerts of 1,000 machines and a day of one machine's power in
InfluxDB. The machines page test counts every machine its dashboard knows, so it has a dashboard
of its own (topics and database too): the fleet's machines do not reach it. The base layer test
checks that the map draws the simulator's network under the cells with no request beyond the
dashboard (no `dashboard.tile_url`). Screenshots go to test-artifacts/vehicles.png,
test-artifacts/vehicles-base.png, test-artifacts/fleet.png and (the machine the fleet clicks
through to) test-artifacts/machine.png.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Iterator

import h3
import pytest
import requests
from confluent_kafka import Producer

from statestream.config import Settings
from tests.integration.dashboard_support import (
    ARTIFACTS,
    Dashboard,
    chromium,
    open_page,
    running_dashboard,
    write_points,
)

pytestmark = pytest.mark.integration

MINUTE = 60_000
DAY_MS = 86_400_000
HELSINKI = [(60.1699, 24.9384), (60.1719, 24.9414), (60.1868, 24.9609)]
MACHINES = 1000
OPEN_SEA = [60.140, 24.945]  # south of Eira: no route, stop or place of the network within 1 km
BASE_PIXEL_ALPHA = """([lat, long]) => {
  const map = statestreamVehicles.state.map;
  const canvas = document.querySelector("#map .leaflet-base-pane canvas");
  if (!canvas) return -1;
  const at = map.latLngToContainerPoint([lat, long]);
  const mapBox = map.getContainer().getBoundingClientRect();
  const box = canvas.getBoundingClientRect();
  const scale = canvas.width / box.width;
  const x = Math.round((mapBox.left + at.x - box.left) * scale);
  const y = Math.round((mapBox.top + at.y - box.top) * scale);
  if (x < 1 || y < 1 || x >= canvas.width - 1 || y >= canvas.height - 1) return -1;
  const rgba = canvas.getContext("2d").getImageData(x - 1, y - 1, 3, 3).data;
  return Math.max(...rgba.filter((_, i) => i % 4 === 3));
}"""
"""The most opaque pixel of the base layer's canvas around a place (-1: not on the canvas)."""


@pytest.fixture(scope="module")
def dashboard(local_services: Settings) -> Iterator[Dashboard]:
    with running_dashboard(local_services) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with chromium() as launched:
        yield launched


def _cell(cell: str, start: int, vehicles: int, final: bool = False) -> dict:
    return {"cell": cell, "resolution": 8, "window_start": start, "window_end": start + MINUTE,
            "vehicles": vehicles, "positions": 40 * vehicles, "mean_speed": 2.0 * vehicles,
            "mean_delay": -30.0 * vehicles, "final": final}  # fmt: skip


def _bunching(now: int) -> dict:
    return {"alert": "bunching", "route": "1052", "direction": 1, "mode": "bus",
            "vehicles": ["22/1234", "22/1240"], "episode_start": now - MINUTE,
            "detected_at": now, "distance_m": 84.0, "lat": 60.1705, "long": 24.9401}  # fmt: skip


def _transactional(settings: Settings) -> Producer:
    producer = Producer(
        {**settings.kafka.client_config(), "transactional.id": f"test-{uuid.uuid4().hex[:8]}"}
    )
    producer.init_transactions(10)
    return producer


def _vehicles_page(browser, dashboard: Dashboard):
    ready = "window.statestreamVehicles?.state.loaded && window.statestreamVehicles.state.connected"
    return open_page(browser, f"{dashboard.url}vehicles?token={dashboard.token}", ready)


def test_cells_and_a_bunching_alert_appear_on_the_map(dashboard: Dashboard, browser) -> None:
    topics = dashboard.settings.topics
    cells = [h3.latlng_to_cell(lat, long, 8) for lat, long in HELSINKI]
    start = int(time.time() // 60 * MINUTE)
    producer = _transactional(dashboard.settings)
    page = _vehicles_page(browser, dashboard)
    try:
        producer.begin_transaction()  # aborted: a newer window of the first cell, never shown
        producer.produce(
            topics.vehicle_cells,
            key=cells[0],
            value=json.dumps(_cell(cells[0], start + MINUTE, 99)),
        )
        producer.abort_transaction(10)
        producer.begin_transaction()
        for number, cell in enumerate(cells, start=1):
            producer.produce(
                topics.vehicle_cells, key=cell, value=json.dumps(_cell(cell, start, number))
            )
        producer.produce(
            topics.vehicle_alerts, key="1052/1", value=json.dumps(_bunching(start + 30_000))
        )
        producer.commit_transaction(10)  # fmt: skip
        page.wait_for_function(
            "statestreamVehicles.cellCount() === 3 && statestreamVehicles.listedAlerts() === 1",
            timeout=20_000,
        )
        shown = page.evaluate(
            "[...statestreamVehicles.state.cells.values()].map((c) => [c.result.cell,"
            " c.result.vehicles, c.result.window_start])"
        )
        assert sorted(shown) == sorted([cell, n, start] for n, cell in enumerate(cells, start=1))
        assert page.locator("#map path.cell").count() == 3
        assert page.locator("#map path.bunching").count() == 1
        assert "22/1234 + 22/1240" in page.locator("#bunching").inner_text()
        by_vehicles = _fills(page)
        assert len(set(by_vehicles)) == 3  # 1, 2 and 3 vehicles: three colours
        page.select_option("#colour-by", "speed")
        by_speed = _fills(page)
        assert by_speed != by_vehicles and "mean speed" in page.locator("#legend").inner_text()
        page.select_option("#colour-by", "delay")
        assert _fills(page) not in (by_vehicles, by_speed)
        assert "mean delay" in page.locator("#legend").inner_text()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "vehicles.png"))
    finally:
        page.close()


def test_the_base_layer_is_drawn_under_the_cells_offline(dashboard: Dashboard, browser) -> None:
    network = requests.get(
        f"{dashboard.url}api/vehicles/base", params={"token": dashboard.token}, timeout=10
    ).json()
    served = Counter(f["properties"]["kind"] for f in network["features"])
    assert served["route"] == 36 and served["place"] == 29 and served["stop"] > 1000
    page = _vehicles_page(browser, dashboard)
    try:
        page.wait_for_function("statestreamVehicles.baseFeatures()?.labels > 0", timeout=20_000)
        drawn = page.evaluate("statestreamVehicles.baseFeatures()")
        assert (drawn["routes"], drawn["stops"], drawn["places"], drawn["tiles"]) == (
            served["route"], served["stop"], served["place"], False
        )  # fmt: skip
        assert page.locator("#map .place-label").count() == served["place"]
        assert page.locator("#map .leaflet-tile").count() == 0
        elsewhere = page.evaluate(
            "performance.getEntriesByType('resource').map((e) => e.name)"
            ".filter((url) => !url.startsWith(location.origin + '/'))"
        )
        assert elsewhere == []  # offline by default: no request beyond the dashboard
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "vehicles-base.png"))
        first_route = next(f for f in network["features"] if f["properties"]["kind"] == "route")
        long, lat = first_route["geometry"]["coordinates"][1]  # on a street, between two places
        page.evaluate(
            "([lat, long]) => void statestreamVehicles.state.map.setView([lat, long], 13,"
            " {animate: false})",
            [lat, long],
        )
        page.wait_for_function(f"(at) => ({BASE_PIXEL_ALPHA})(at) > 0", arg=[lat, long])
        assert page.evaluate(BASE_PIXEL_ALPHA, OPEN_SEA) == 0  # on the canvas, nothing drawn
    finally:
        page.close()


def _fills(page) -> list[str]:
    return page.evaluate(
        "[...document.querySelectorAll('#map path.cell')].map((p) => p.getAttribute('fill'))"
    )


def _machine(number: int) -> str:
    return f"M{number:04d}"


def _fleet_records(start: int) -> list[tuple[str, str, dict]]:
    """(role, key, value): each machine's power (number × 10 W) and duty cycle; every 100th
    machine above the duty-cycle limit, with its alert."""
    records = []
    for number in range(MACHINES):
        thing, duty_cycle = _machine(number), 0.5 if number % 100 == 0 else 0.1
        power = {
            "thing": thing,
            "quantity": "vaPower_C11",
            "phenomenonTime": start,
            "result": 10.0 * number,
        }
        window = {"thing": thing, "component": "C11", "window_start": start,
                  "window_end": start + 10 * MINUTE}  # fmt: skip
        records += [
            ("out", f"{thing}.vaPower_C11", power),
            ("stats", f"{thing}.C11", {**window, "kind": "duty_cycle", "duty_cycle": duty_cycle}),
        ]
        if duty_cycle > 0.4:
            alert = {**window, "kind": "duty_cycle", "duty_cycle": duty_cycle, "limit": 0.4}
            records.append(("alerts", f"{thing}.C11", alert))
    return records


def _produce(dashboard: Dashboard, records: list[tuple[str, str, dict]]) -> None:
    topics = dashboard.settings.topics
    topic_of = {"out": topics.machine_out, "stats": topics.stats, "alerts": topics.alerts}
    producer = Producer(dashboard.settings.kafka.client_config())
    for role, key, value in records:
        producer.produce(topic_of[role], key=key, value=json.dumps(value))
    assert producer.flush(20) == 0


def _write_a_day_of_power(settings: Settings, thing: str) -> int:
    """`thing`'s power every 10 s from today's UTC midnight, 1,000 points, into the dashboard's
    InfluxDB database; how many 5-minute means lie before its last `history_points` points."""
    midnight = int(time.time() * 1000) // DAY_MS * DAY_MS
    lines = [
        f"machine_out,thing={thing},quantity=vaPower_C11 result={i}.5 {midnight + i * 10_000}"
        for i in range(1_000)
    ]
    write_points(settings, lines)
    first_recent_s = (1_000 - settings.dashboard.history_points) * 10
    return -(-first_recent_s // 300)  # the means of 5-minute steps that start before it


def test_the_fleet_of_1000_machines_renders_sorts_and_filters(dashboard, browser) -> None:
    ready = "window.statestreamFleet?.state.loaded && window.statestreamFleet.state.connected"
    page = open_page(browser, f"{dashboard.url}fleet?token={dashboard.token}", ready)
    try:
        start = int(time.time() * 1000)
        _produce(dashboard, _fleet_records(start))
        page.wait_for_function(
            f"statestreamFleet.machineCount() === {MACHINES} && "
            "document.getElementById('alert-count').textContent === '10'",
            timeout=30_000,
        )
        assert page.evaluate("statestreamFleet.renderedRows()") == 100  # one page in the DOM
        assert page.locator("#match-count").inner_text() == "1,000"
        page.click("#fleet th[data-sort='power_kw']")  # the largest first
        page.wait_for_function(
            "document.querySelector('#fleet tbody tr').dataset.thing === 'M0999'"
        )
        assert "9.99" in page.locator("#fleet tbody tr").first.inner_text()
        page.fill("#filter", "M012")
        page.wait_for_function("statestreamFleet.renderedRows() === 10")
        page.fill("#filter", "")
        page.check("#alerts-only")
        page.wait_for_function("statestreamFleet.renderedRows() === 10")
        alerting = page.locator("#fleet tbody tr").all_inner_texts()
        assert all("alert C11" in row and "50.0 %" in row for row in alerting)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "fleet.png"), full_page=True)
        day_means = _write_a_day_of_power(dashboard.settings, "M0300")
        page.locator("#fleet tbody tr[data-thing='M0300'] td").nth(1).click()
        page.wait_for_url("**/?thing=M0300")
        page.wait_for_function("window.statestreamDashboard?.state.historyLoaded")
        recent = dashboard.settings.dashboard.history_points
        shown = page.evaluate("statestreamDashboard.pointCount('M0300', '0.result')")
        assert shown == recent + day_means  # today's 5-minute means, then the recent points
        later = start + 1000
        power = {"phenomenonTime": later, "quantity": "vaPower_C11", "result": 1.0}
        _produce(dashboard, [("out", f"{m}.vaPower_C11", {**power, "thing": m})
                             for m in ("M0300", "M0301")])  # fmt: skip
        page.wait_for_function(  # the live point beside the history
            f"statestreamDashboard.pointCount('M0300', '0.result') === {shown + 1}"
        )
        assert page.locator("section.thing").count() == 1  # that machine only
        page.screenshot(path=str(ARTIFACTS / "machine.png"), full_page=True)
    finally:
        page.close()


def test_the_machines_page_draws_24_machines_and_points_to_the_fleet(
    local_services: Settings, browser
) -> None:
    """30 machines on a dashboard of their own: 24 cards, the other 6 counted, not drawn."""
    with running_dashboard(local_services) as dashboard:
        ready = (
            "window.statestreamDashboard?.state.historyLoaded && "
            "window.statestreamDashboard.state.connected"
        )
        page = open_page(browser, f"{dashboard.url}?token={dashboard.token}", ready)
        try:
            start = int(time.time() * 1000)
            power = {"phenomenonTime": start, "quantity": "vaPower_C11", "result": 1.0}
            things = [f"P{number:02d}" for number in range(30)]
            _produce(
                dashboard, [("out", f"{t}.vaPower_C11", {**power, "thing": t}) for t in things]
            )
            page.wait_for_function(  # each machine drawn or counted
                "things => things.every((t) => window.statestreamDashboard.state.things.has(t)"
                " || window.statestreamDashboard.state.notShown.has(t))",
                arg=things,
            )
            drawn = page.evaluate("[...window.statestreamDashboard.state.things.keys()]")
            counted = page.evaluate("[...window.statestreamDashboard.state.notShown]")
            assert len(drawn) == 24 and len(counted) == 6
            assert sorted(drawn + counted) == things  # these machines, each once, no other
            assert page.locator("section.thing").count() == 24
            assert sorted(page.locator("section.thing").evaluate_all(
                "cards => cards.map((c) => c.dataset.thing)"
            )) == sorted(drawn)  # fmt: skip
            assert page.locator("#more-things .count").inner_text() == "6"
            assert page.locator("#more-things a").get_attribute("href") == "fleet"
        finally:
            page.close()
