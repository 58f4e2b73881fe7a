"""The base layer of the /vehicles map: the simulator's Helsinki network as GeoJSON (pure: no I/O).

Without map tiles (`dashboard.tile_url`, off by default) the hexagons would float on an empty
background. This layer puts the places, routes and stops of `ingest/helsinki_network.py` under
them, from data the package has, so that a cell can be placed by eye with no network at all.
`GET /api/vehicles/base` serves it; the page draws it in the map's one projection (Leaflet's Web
Mercator, the same as the cells and any tiles), so all of them line up.

The places are real (to about 100 m); the streets between them are the simulator's generated
curves and its stops are spaced evenly along them. With a real HFP feed the layer still shows
where the places are, not where the real streets run.

    >>> layer = base_layer(network()[:1])
    >>> [f["properties"]["kind"] for f in layer["features"]].count("route")
    1
    >>> layer["features"][0]["properties"]["name"]
    'Eira – Käpylä'
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from functools import cache
from typing import Any

from statestream.ingest.helsinki_network import ANCHORS, Route, network

COORDINATE_DECIMALS = 5  # ~1 m: more only makes the layer longer
DIRECTIONS = (1, 2)
ROUTE_KIND, STOP_KIND, PLACE_KIND = "route", "stop", "place"

Feature = dict[str, Any]


def base_layer(routes: Sequence[Route]) -> dict[str, Any]:
    """A GeoJSON FeatureCollection of `routes`: one LineString per route (its two directions
    run on the same street), one Point per stop of each direction and one per place a route
    joins, the places most routes serve first (the page labels them in that order)."""
    features = [
        *(_route_feature(route) for route in routes),
        *(stop for route in routes for stop in _stop_features(route)),
        *_place_features(routes),
    ]
    return {"type": "FeatureCollection", "features": features}


@cache
def network_layer_json() -> bytes:
    """`base_layer` of the simulator's whole network, encoded once (it never changes)."""
    layer = base_layer(network())
    return json.dumps(layer, ensure_ascii=False, separators=(",", ":")).encode()


def _route_feature(route: Route) -> Feature:
    points = route.path(1).points
    return _feature(
        {"type": "LineString", "coordinates": [_position(lat, long) for lat, long in points]},
        kind=ROUTE_KIND,
        route=route.route_id,
        desi=route.desi,
        mode=route.mode,
        name=f"{route.anchors[0]} – {route.anchors[-1]}",
    )


def _stop_features(route: Route) -> list[Feature]:
    stops = []
    for direction in DIRECTIONS:
        path = route.path(direction)
        for metres, stop_id in path.stops:
            lat, long, _ = path.position(metres)
            stops.append(
                _feature(
                    {"type": "Point", "coordinates": _position(lat, long)},
                    kind=STOP_KIND,
                    stop=stop_id,
                    route=route.route_id,
                    desi=route.desi,
                    direction=direction,
                )
            )
    return stops


def _place_features(routes: Sequence[Route]) -> list[Feature]:
    served = Counter(anchor for route in routes for anchor in set(route.anchors))
    ranked = sorted(served, key=lambda name: (-served[name], name))
    return [
        _feature(
            {"type": "Point", "coordinates": _position(*ANCHORS[name])},
            kind=PLACE_KIND,
            name=name,
            routes=served[name],
        )
        for name in ranked
    ]


def _feature(geometry: dict[str, Any], **properties: Any) -> Feature:
    return {"type": "Feature", "geometry": geometry, "properties": properties}


def _position(lat: float, long: float) -> list[float]:
    """A GeoJSON position: longitude first."""
    return [round(long, COORDINATE_DECIMALS), round(lat, COORDINATE_DECIMALS)]
