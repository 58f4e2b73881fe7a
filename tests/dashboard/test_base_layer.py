"""The base layer of the /vehicles map: the network as GeoJSON, its endpoint, the tiles' settings,
and that the page asks no other server for anything unless `dashboard.tile_url` is set."""

from __future__ import annotations

import doctest
import json
import os
import re
from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError
from starlette.testclient import TestClient

from statestream.config import DashboardSettings, Settings, load_settings
from statestream.dashboard import base_layer as base_layer_module
from statestream.dashboard import create_app
from statestream.dashboard.app import STATIC_DIR
from statestream.dashboard.base_layer import base_layer, network_layer_json
from statestream.errors import ConfigError
from statestream.ingest.helsinki_network import ANCHORS, Route, network

OSM = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"
PAGE_FILES = ("vehicles.html", "vehicles.js", "base_layer.js", "live.js", "views.css")
ABSOLUTE_URL = re.compile(r"""(?:https?:)?//[\w.-]+\.\w""")  # http://host…, //host…


def _of_kind(layer: dict, kind: str) -> list[dict]:
    return [f for f in layer["features"] if f["properties"]["kind"] == kind]


def test_one_line_per_route_a_point_per_stop_and_per_place() -> None:
    routes = network()
    layer = base_layer(routes)
    assert layer["type"] == "FeatureCollection"
    assert [f["properties"]["route"] for f in _of_kind(layer, "route")] == [
        r.route_id for r in routes
    ]
    stops = {
        (f["properties"]["stop"], f["properties"]["direction"]) for f in _of_kind(layer, "stop")
    }
    published = {(stop, d) for r in routes for d in (1, 2) for _, stop in r.path(d).stops}
    assert stops == published  # the ids the simulator sends as a vehicle's next stop
    assert {f["properties"]["name"] for f in _of_kind(layer, "place")} == set(ANCHORS)


def test_positions_are_longitude_first_and_lie_on_the_routes() -> None:
    route = network()[0]
    [line] = _of_kind(base_layer([route]), "route")
    assert line["geometry"]["type"] == "LineString"
    assert line["geometry"]["coordinates"] == [
        [round(long, 5), round(lat, 5)] for lat, long in route.path(1).points
    ]
    first_stop = next(f for f in _of_kind(base_layer([route]), "stop"))
    lat, long, _ = route.path(1).position(route.path(1).stops[0][0])
    assert first_stop["geometry"]["coordinates"] == [round(long, 5), round(lat, 5)]
    everything = [
        position
        for f in base_layer(network())["features"]
        for position in (
            f["geometry"]["coordinates"]
            if f["geometry"]["type"] == "LineString"
            else [f["geometry"]["coordinates"]]
        )
    ]
    assert all(24.7 < long < 25.2 and 60.1 < lat < 60.3 for long, lat in everything)


def test_places_come_ranked_by_the_routes_that_serve_them() -> None:
    routes = [
        Route("9001", "1", "tram", ("Eira", "Kamppi", "Pasila")),
        Route("9002", "2", "bus", ("Kamppi", "Töölö")),
        Route("9003", "3", "bus", ("Töölö", "Kamppi", "Pasila")),
    ]
    places = [f["properties"] for f in _of_kind(base_layer(routes), "place")]
    assert [(p["name"], p["routes"]) for p in places] == [
        ("Kamppi", 3), ("Pasila", 2), ("Töölö", 2), ("Eira", 1)
    ]  # fmt: skip
    assert _of_kind(base_layer(routes), "route")[0]["properties"] == {
        "kind": "route", "route": "9001", "desi": "1", "mode": "tram", "name": "Eira – Pasila"
    }  # fmt: skip


def test_the_endpoint_serves_the_whole_network() -> None:
    with TestClient(create_app(Settings(), start_feed=False)) as client:
        response = client.get("/api/vehicles/base")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/geo+json")
        assert response.json() == json.loads(json.dumps(base_layer(network())))
        assert client.get("/static/base_layer.js").status_code == 200
    assert network_layer_json() is network_layer_json()  # encoded once


def test_the_endpoint_is_behind_the_token_like_the_rest() -> None:
    settings = Settings()
    dashboard = settings.dashboard.model_copy(update={"token": SecretStr("t0ken")})
    app = create_app(settings.model_copy(update={"dashboard": dashboard}), start_feed=False)
    with TestClient(app) as client:
        assert client.get("/api/vehicles/base").status_code == 401
        assert client.get("/api/vehicles/base", params={"token": "t0ken"}).status_code == 200


def test_by_default_the_map_has_no_tiles() -> None:
    assert DashboardSettings().tile_url == ""
    with TestClient(create_app(Settings(), start_feed=False)) as client:
        layout = client.get("/api/vehicles").json()["layout"]
    assert layout["tile_url"] == "" and layout["tile_attribution"] == ""


@pytest.mark.parametrize("name", PAGE_FILES)
def test_the_page_names_no_other_server(name: str) -> None:
    """Everything the map page loads is relative to the dashboard; only `tile_url` (off by
    default) can make it ask another server."""
    text = (STATIC_DIR / name).read_text()
    assert ABSOLUTE_URL.findall(text) == []


def test_the_absolute_url_check_finds_one() -> None:
    found = [
        ABSOLUTE_URL.search(t) for t in ('<script src="https://cdn.x.org/l.js">', "//a.tile.io")
    ]
    assert all(found) and ABSOLUTE_URL.search('fetch("api/vehicles/base")') is None


def test_the_base_layer_script_runs_before_the_map_script() -> None:
    page = (STATIC_DIR / "vehicles.html").read_text()
    scripts = re.findall(r'<script src="([^"]+)"', page)
    assert scripts.index("static/base_layer.js") < scripts.index("static/vehicles.js")


@pytest.mark.parametrize(
    ("url", "attribution"),
    [
        ("tile.openstreetmap.org/{z}/{x}/{y}.png", "© OpenStreetMap contributors"),  # no scheme
        ("https://tile.openstreetmap.org/{z}/{x}.png", "© OpenStreetMap contributors"),  # no {y}
        (OSM, None),  # tiles without their credit line
        (OSM, "   "),
    ],
)
def test_tiles_need_a_template_and_their_credit(url: str, attribution: str | None) -> None:
    credit = {} if attribution is None else {"tile_attribution": attribution}
    with pytest.raises(ValidationError):
        DashboardSettings(tile_url=url, **credit)


def test_tiles_from_a_server_or_a_path_of_the_same_one_are_taken() -> None:
    credit = "© OpenStreetMap contributors"
    assert DashboardSettings(tile_url=OSM, tile_attribution=credit).tile_url == OSM
    assert DashboardSettings(tile_url="/tiles/{z}/{x}/{y}.png", tile_attribution="ours").tile_url


def test_a_tile_url_without_credit_is_one_line_naming_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in os.environ:
        if key.startswith("STATESTREAM_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("STATESTREAM_PATHS__DATA_DIR", str(tmp_path))
    monkeypatch.setenv("STATESTREAM_DASHBOARD__TILE_URL", OSM)
    with pytest.raises(ConfigError, match="STATESTREAM_DASHBOARD__TILE_ATTRIBUTION") as refused:
        load_settings()
    assert "\n" not in str(refused.value) and "credit line" in str(refused.value)


def test_docstring_examples() -> None:
    result = doctest.testmod(base_layer_module)
    assert result.attempted > 0 and result.failed == 0
