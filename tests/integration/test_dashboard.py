"""The dashboard in headless Chromium, against the real Kafka and InfluxDB, with a token set.

One `statestream dashboard` process serves every test of this module; it reads topics and an
InfluxDB database of its own. The history test writes points with the line protocol before the
page opens; the live test produces records to the topics while the page is open. A screenshot of
the page goes to test-artifacts/dashboard.png, one of its health panel (a query's Kafka lag, the
latency histogram) to test-artifacts/dashboard-health.png.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import asdict

import pytest
import requests
from confluent_kafka import Consumer, Producer, TopicPartition

from statestream.config import Settings
from statestream.dashboard.messages import LEVELS
from statestream.jobs.status import QueryStatus, _process_start, status_folder
from tests.integration.dashboard_support import (
    ARTIFACTS,
    Dashboard,
    chromium,
    open_page,
    running_dashboard,
    write_points,
)

pytestmark = pytest.mark.integration

HISTORY_THING, LIVE_THING = "H31415", "R0815"
HISTORY_START = 1_554_096_380_000  # the sample's time, 2019-04-01
HISTORY_POINTS = 40


def _write_history(settings: Settings) -> None:
    """The recent past of HISTORY_THING, as the InfluxDB sink writes it."""
    lines = []
    for i in range(HISTORY_POINTS):
        t = HISTORY_START + i * 1000
        lines += [
            f"machine_data,thing={HISTORY_THING},quantity=actSpeed_C11 result={1000 + i} {t}",
            f"machine_data,thing={HISTORY_THING},quantity=vaTorque_C11 result={-5 + i / 4} {t}",
            f"machine_data,thing={HISTORY_THING},quantity=vaLoad_C11 result=1.5 {t}",
            f"machine_out,thing={HISTORY_THING},quantity=vaPower_C11 result={i * 100.0},"
            f"left_result=1.0,right_result=2.0,left_time={t},right_time={t + 500} {t + 250}",
        ]
    window, end = HISTORY_START, HISTORY_START + 60_000
    for level, seconds in zip(LEVELS, (20, 5, 5, 0, 30), strict=True):
        lines.append(
            f"machine_stats,thing={HISTORY_THING},component=C11,kind=levels,level={level} "
            f"seconds={seconds},window_end={end} {window}"
        )
    lines += [
        f"machine_stats,thing={HISTORY_THING},component=C11,kind=duty_cycle "
        f"duty_cycle=0.55,window_end={end} {window}",
        f"machine_alerts,thing={HISTORY_THING},component=C11 "
        f"duty_cycle=0.55,limit=0.4,window_end={end} {window}",
    ]
    write_points(settings, lines)


@pytest.fixture(scope="module")
def dashboard(local_services: Settings) -> Iterator[Dashboard]:
    with running_dashboard(local_services, prepare=_write_history) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with chromium() as launched:
        yield launched


def test_requests_without_the_token_are_refused(dashboard: Dashboard, browser) -> None:
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    assert requests.get(dashboard.url, timeout=5).status_code == 401
    assert requests.get(f"{dashboard.url}api/history", timeout=5).status_code == 401
    assert requests.get(f"{dashboard.url}static/dashboard.js", timeout=5).status_code == 401
    wrong = requests.get(dashboard.url, params={"token": "wrong"}, timeout=5)
    assert wrong.status_code == 403
    ws_url = dashboard.url.replace("http://", "ws://") + "ws"
    with pytest.raises(InvalidStatus) as refused:
        connect(ws_url, open_timeout=5)
    assert refused.value.response.status_code == 403
    page = browser.new_page()
    try:
        response = page.goto(dashboard.url)
        assert response is not None and response.status == 401
    finally:
        page.close()
    with connect(
        ws_url, open_timeout=5, additional_headers={"Authorization": f"Bearer {dashboard.token}"}
    ):
        pass  # the right token opens it


def _open(browser, dashboard: Dashboard):
    """A page of the dashboard, opened with the token, once it has shown the history and its
    websocket is open (what is produced from then on reaches it)."""
    ready = (
        "window.statestreamDashboard?.state.historyLoaded && "
        "window.statestreamDashboard.state.connected"
    )
    return open_page(browser, f"{dashboard.url}?token={dashboard.token}", ready)


CHART_DATA = """([thing, chart]) => {
    const canvas = document.querySelector(`canvas[data-thing="${thing}"][data-chart="${chart}"]`);
    const drawn = canvas && Chart.getChart(canvas);
    return drawn ? drawn.data.datasets.map((d) => ({label: d.label, x: d.data.map((p) => p.x),
                                                    y: d.data.map((p) => p.y)})) : null;
}"""


def _chart(page, thing: str, chart: str) -> dict[str, dict[str, list[float]]]:
    """What Chart.js holds for one chart of a thing: quantity → {x, y}."""
    datasets = page.evaluate(CHART_DATA, [thing, chart]) or []
    return {d["label"]: {"x": d["x"], "y": d["y"]} for d in datasets}


def _card(page, thing: str):
    return page.locator(f'section.thing[data-thing="{thing}"]')


def test_history_from_influxdb_is_shown_on_load(dashboard: Dashboard, browser) -> None:
    page = _open(browser, dashboard)
    try:
        speed = _chart(page, HISTORY_THING, "0.left")
        assert list(speed) == ["actSpeed_C11"]
        times = [HISTORY_START + i * 1000 for i in range(HISTORY_POINTS)]
        assert speed["actSpeed_C11"] == {
            "x": times,
            "y": [1000.0 + i for i in range(HISTORY_POINTS)],
        }
        torque = _chart(page, HISTORY_THING, "0.right")
        assert torque["vaTorque_C11"]["y"][-1] == pytest.approx(-5 + (HISTORY_POINTS - 1) / 4)
        power = _chart(page, HISTORY_THING, "0.result")
        assert power["vaPower_C11"]["x"][0] == HISTORY_START + 250
        assert len(power["vaPower_C11"]["y"]) == HISTORY_POINTS
        levels = page.evaluate(
            """(thing) => Chart.getChart(document.querySelector(
                   `section[data-thing="${thing}"] canvas.levels`)).data.datasets[0].data""",
            HISTORY_THING,
        )
        assert levels == [20, 5, 5, 0, 30]
        card = _card(page, HISTORY_THING)
        assert "C11 55.0 %" in card.locator(".duty-label").inner_text()
        assert "55.0 %" in card.locator(".alerts").inner_text()
        assert card.locator(".alert-badge").is_visible()
        assert f"{HISTORY_POINTS * 3:,} points" in page.locator("#history-status").inner_text()
    finally:
        page.close()


COMPONENTS = ("C11", "C12")


def _records(t: int, r: int) -> list[tuple[str, str, dict]]:
    """One second of LIVE_THING: speed and torque of each component on machine.data, their power
    on machine.out."""
    records = []
    for n, c in enumerate(COMPONENTS):
        speed, torque = 600.0 + r - 200 * n, 3.5 - r / 10 + n
        pair = {
            "phenomenonTime": t + 500,
            "result": 220.0 + r - 100 * n,
            "left": {"quantity": f"actSpeed_{c}", "phenomenonTime": t, "result": speed},
            "right": {"quantity": f"vaTorque_{c}", "phenomenonTime": t + 1000, "result": torque},
        }
        records += [
            ("data", f"actSpeed_{c}", {"phenomenonTime": t, "result": speed}),
            ("data", f"vaTorque_{c}", {"phenomenonTime": t, "result": torque}),
            ("out", f"vaPower_{c}", pair),
        ]
    return records


def _window_results(start: int) -> list[tuple[str, dict]]:
    """Levels and duty cycle of both components (C11 above the limit, with its alert)."""
    results = []
    for c, duty_cycle, levels in (
        ("C11", 0.62, (4.0, 6.0, 8.0, 5.0, 37.0)),
        ("C12", 0.2, (25.0, 12.0, 9.0, 2.0, 12.0)),
    ):
        common = {"thing": LIVE_THING, "component": c, "window_start": start}
        seconds = dict(zip(LEVELS, levels, strict=True))
        results += [
            (
                "stats",
                {
                    **common,
                    "window_end": start + 60_000,
                    "kind": "levels",
                    "level_seconds": seconds,
                },
            ),
            (
                "stats",
                {
                    **common,
                    "window_end": start + 600_000,
                    "kind": "duty_cycle",
                    "duty_cycle": duty_cycle,
                },
            ),
        ]
    alert = {
        "thing": LIVE_THING,
        "component": "C11",
        "kind": "duty_cycle",
        "window_start": start,
        "window_end": start + 600_000,
        "duty_cycle": 0.62,
        "limit": 0.4,
    }
    return [*results, ("alerts", alert)]


def test_charts_receive_new_points_while_records_flow(dashboard: Dashboard, browser) -> None:
    topics = dashboard.settings.topics
    topic_of = {
        "data": topics.machine_data,
        "out": topics.machine_out,
        "stats": topics.stats,
        "alerts": topics.alerts,
        "late": topics.late,
        "dead_letter": topics.dead_letter,
    }
    producer = Producer(dashboard.settings.kafka.client_config())

    def send(role: str, key: str, value: dict) -> None:
        producer.produce(topic_of[role], key=key, value=json.dumps(value))

    page = _open(browser, dashboard)
    try:
        start = int(time.time() // 60 * 60_000)
        produced: list[int] = []
        for r in range(4):
            t = start + r * 1000
            for role, quantity, value in _records(t, r):
                send(
                    role,
                    f"{LIVE_THING}.{quantity}",
                    {"thing": LIVE_THING, "quantity": quantity, **value},
                )
            producer.flush(10)
            produced.append(t)
            page.wait_for_function(  # speed and power come from two topics, in either order
                "([thing, n]) => ['0.left', '0.result'].every("
                "(chart) => window.statestreamDashboard.pointCount(thing, chart) >= n)",
                arg=[LIVE_THING, len(COMPONENTS) * (r + 1)],
                timeout=20_000,
            )
            speed = _chart(page, LIVE_THING, "0.left")
            assert sorted(speed) == ["actSpeed_C11", "actSpeed_C12"]
            assert speed["actSpeed_C12"]["x"] == produced  # each point so far, in time order
        power = _chart(page, LIVE_THING, "0.result")
        assert power["vaPower_C11"]["y"] == [220.0, 221.0, 222.0, 223.0]
        assert power["vaPower_C12"]["x"] == [t + 500 for t in produced]

        for role, value in _window_results(start):
            send(role, f"{LIVE_THING}.{value['component']}.{value['kind']}.{start}", value)
        send("late", "x", {"reason": "late", "watermark": start})
        send("dead_letter", "y", {"reason": "bad JSON", "raw": "{"})
        producer.flush(10)
        card = _card(page, LIVE_THING)
        page.wait_for_function(
            """(thing) => document.querySelector(`section[data-thing="${thing}"] .duty-label`)
                         .textContent.includes("C12 20.0 %")""",
            arg=LIVE_THING,
            timeout=20_000,
        )
        assert "62.0 %" in card.locator(".alerts").inner_text()
        page.wait_for_function(
            "document.getElementById('late-count').textContent === '1' && "
            "document.getElementById('dead-count').textContent === '1'",
            timeout=20_000,
        )
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)
    finally:
        page.close()


def _report_query(settings: Settings, name: str, committed: dict[str, dict[int, int]]) -> None:
    """A running query `name` of this process that has committed `committed`, as its status and
    progress files say it (the files' format is pinned by tests/jobs/test_status_golden.py)."""
    status = QueryStatus(name, "run-1", os.getpid(), _process_start(os.getpid()))
    folder = status_folder(settings)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.run-1.json").write_text(json.dumps(asdict(status)))
    offsets = {t: {str(p): o for p, o in ps.items()} for t, ps in committed.items()}
    progress = {"batchId": 0, "numInputRows": 0, "sources": [{"endOffset": offsets}]}
    report = {"progress": progress, "input_rows": 0, "metric_sums": {}}
    (folder / f"{name}.run-1.progress").write_text(json.dumps(report))


def _topic_ends(settings: Settings, topic: str) -> dict[int, int]:
    consumer = Consumer({**settings.kafka.client_config(), "group.id": "ends"})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in partitions
        }
    finally:
        consumer.close()


LAG_CELL = """([query, text]) => [...document.querySelectorAll("#queries tbody tr")].some(
    (row) => row.cells[0].textContent === query && row.cells[3].textContent === text)"""


def test_health_shows_the_queries_lag_and_the_latency_histogram(
    dashboard: Dashboard, browser, unique_name: str
) -> None:
    settings = dashboard.settings
    out = settings.topics.machine_out
    producer = Producer(settings.kafka.client_config())
    later = time.time() * 1000 - 3000  # pairs read 3 s (and a moment) after their later record
    for n in range(5):
        pair = {
            "thing": LIVE_THING,
            "quantity": "vaPower_C11",
            "phenomenonTime": later - 500,
            "result": 10.0 + n,
            "left": {"quantity": "actSpeed_C11", "phenomenonTime": later - 1000, "result": 1.0},
            "right": {"quantity": "vaTorque_C11", "phenomenonTime": later, "result": 2.0},
        }
        producer.produce(out, key=f"{LIVE_THING}.vaPower_C11", value=json.dumps(pair))
    assert producer.flush(10) == 0
    ends = _topic_ends(settings, out)
    backlog = sum(ends.values())
    assert backlog >= 5
    page = _open(browser, dashboard)
    try:
        _report_query(settings, unique_name, {out: {p: 0 for p in ends}})  # nothing committed
        page.wait_for_function(LAG_CELL, arg=[unique_name, f"{backlog:,}"], timeout=20_000)
        page.wait_for_function(  # the five pairs, 3 s late, in the bucket of 2–5 s
            """() => { const chart = window.statestreamDashboard.state.latencyChart;
                       const i = chart ? chart.data.labels.indexOf("2–5 s") : -1;
                       return i >= 0 && chart.data.datasets[0].data[i] >= 5; }""",
            timeout=20_000,
        )
        assert "median" in page.locator("#latency-note").inner_text()
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator("#health").screenshot(path=str(ARTIFACTS / "dashboard-health.png"))
        _report_query(settings, unique_name, {out: ends})  # all of it committed
        page.wait_for_function(LAG_CELL, arg=[unique_name, "0"], timeout=20_000)
    finally:
        page.close()
        for path in status_folder(settings).glob(f"{unique_name}.*"):
            path.unlink()
