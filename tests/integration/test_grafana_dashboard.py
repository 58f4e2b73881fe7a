"""The Grafana provisioning folder: every dashboard query runs on what the sink writes.

No Grafana here: the test reads the provisioning files, substitutes Grafana's macros and variables
the way Grafana's InfluxDB data source does, and runs each panel's and variable's InfluxQL query
on the real InfluxDB holding points of every measurement the sink writes (and of the queries'
lag, which the dashboard writes).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import yaml

from statestream.config import Settings
from statestream.dashboard.lag_series import lag_points
from statestream.jobs.lag import QueryLag
from statestream.sinks import InfluxWriter, PointBuilder

pytestmark = pytest.mark.integration

GRAFANA = Path(__file__).resolve().parents[2] / "grafana"
DASHBOARD = GRAFANA / "dashboards" / "operation-statistics.json"
T0 = 1_554_096_000_000  # 2019-04-01 05:20 UTC, in the sample's range
MINUTE = 60_000


def _records() -> Iterator[tuple[str, dict]]:
    for i in range(120):
        t = T0 + i * 1000
        for quantity, value in (("actSpeed_C11", 600.0 + i), ("vaTorque_C11", -4.0 + i / 100)):
            yield "machine_data", {"thing": "R0815", "quantity": quantity, "phenomenonTime": t,
                                   "result": value}  # fmt: skip
        left = {"quantity": "actSpeed_C11", "phenomenonTime": t, "result": 600.0 + i}
        right = {"quantity": "vaTorque_C11", "phenomenonTime": t + 500, "result": -4.0}
        yield "machine_out", {"thing": "R0815", "quantity": "vaPower_C11",
                              "phenomenonTime": t + 250, "result": -250.0, "left": left,
                              "right": right}  # fmt: skip
    window = {"thing": "R0815", "component": "C11", "window_start": T0, "window_end": T0 + MINUTE}
    levels = {"0-20": 20.0, "20-40": 0.0, "40-60": 0.0, "60-80": 10.0, "80-100": 30.0}
    yield "machine_stats", {**window, "kind": "levels", "level_seconds": levels}
    yield "machine_stats", {**window, "kind": "duty_cycle", "duty_cycle": 0.5}
    yield "machine_alerts", {**window, "kind": "duty_cycle", "duty_cycle": 0.5, "limit": 0.4}


@pytest.fixture
def influx(local_services: Settings, unique_name: str) -> Iterator[Settings]:
    """Settings whose database holds points of every measurement, written by the sink's writer
    (and the queries' lag, as the dashboard writes it)."""
    settings = local_services.model_copy(
        update={"influx": local_services.influx.model_copy(update={"database": unique_name})}
    )
    builder = PointBuilder()
    points = [p for m, r in _records() for p in builder.points(m, json.dumps(r))]
    points += lag_points({"join": QueryLag({"machine.data": {0: 5, 1: 2}})}, T0)  # the dashboard's
    assert InfluxWriter(settings.influx).write(points).written == len(points)
    yield settings
    _query(settings, f'DROP DATABASE "{unique_name}"')


def _query(settings: Settings, q: str) -> list[dict]:
    influx = settings.influx
    assert influx.password is not None
    response = requests.get(
        f"{influx.url}/query",
        params={"db": influx.database, "q": q, "epoch": "ms"},
        auth=(influx.username, influx.password.get_secret_value()),
        timeout=30,
    )
    response.raise_for_status()
    [result] = response.json()["results"]
    assert "error" not in result, f"{q}: {result['error']}"
    return result.get("series", [])


def _as_grafana_sends_it(query: str) -> str:
    """Macros and the variables thing = R0815, component = C11 substituted as Grafana does."""
    time_filter = f"time >= {T0 - 3600_000}ms and time <= {T0 + 3600_000}ms"
    return (
        query.replace("$timeFilter", time_filter)
        .replace("$__interval", "10s")
        .replace("'$component'", "'C11'")  # a single value in a repeated panel
        .replace("$component", "(C11)")  # multi-value in a regex
        .replace("$thing", "(R0815)")
    )


def _panel_targets() -> list[tuple[str, str]]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [
        (panel["title"], target["query"])
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
    ]


def test_the_provisioning_files_name_one_datasource_and_the_dashboards_folder() -> None:
    datasources = yaml.safe_load(
        (GRAFANA / "provisioning/datasources/statestream.yaml").read_text()
    )
    [source] = datasources["datasources"]
    assert source["type"] == "influxdb" and source["jsonData"]["version"] == "InfluxQL"
    for variable in ("URL", "USERNAME", "DATABASE"):
        assert f"STATESTREAM_INFLUX__{variable}" in json.dumps(source)
    assert "STATESTREAM_INFLUX__PASSWORD" in source["secureJsonData"]["password"]
    providers = yaml.safe_load((GRAFANA / "provisioning/dashboards/statestream.yaml").read_text())
    assert providers["providers"][0]["options"]["path"] == "${STATESTREAM_GRAFANA_DASHBOARDS}"
    uids = set(re.findall(r'"uid": "([^"]+)"', DASHBOARD.read_text())) - {
        json.loads(DASHBOARD.read_text())["uid"]
    }
    assert uids == {source["uid"]}


def test_every_panel_query_returns_the_sinks_points(influx: Settings) -> None:
    targets = _panel_targets()
    assert len(targets) >= 7
    for title, query in targets:
        series = _query(influx, _as_grafana_sends_it(query))
        assert series, f"panel {title!r} shows nothing: {query}"


def test_the_panels_show_the_written_values(influx: Settings) -> None:
    by_title = dict(_panel_targets())
    levels = _query(influx, _as_grafana_sends_it(by_title["Power levels $component"]))
    seconds = {s["tags"]["level"]: s["values"][0][1] for s in levels}
    assert seconds == {"0-20": 20.0, "20-40": 0.0, "40-60": 0.0, "60-80": 10.0, "80-100": 30.0}
    [gauge] = _query(influx, _as_grafana_sends_it(by_title["ED $component (latest window)"]))
    assert gauge["values"][0][1] == 50.0
    [alert] = _query(influx, _as_grafana_sends_it(by_title["Duty-cycle alerts"]))
    assert alert["values"][0][1:] == [50.0, 40.0, T0 + MINUTE]
    [lag] = _query(influx, _as_grafana_sends_it(by_title["Kafka lag per query"]))
    assert lag["tags"] == {"query": "join", "topic": "machine.data"}
    assert lag["values"] == [[T0, 7.0]]


def test_the_variables_list_things_and_components(influx: Settings) -> None:
    variables = {v["name"]: v for v in json.loads(DASHBOARD.read_text())["templating"]["list"]}
    [things] = _query(influx, variables["thing"]["query"])
    assert [value for _, value in things["values"]] == ["R0815"]
    [quantities] = _query(influx, variables["component"]["query"])
    pattern = re.compile(variables["component"]["regex"].strip("/"))
    components = [pattern.match(v).group(1) for _, v in quantities["values"] if pattern.match(v)]
    assert components == ["C11"]
