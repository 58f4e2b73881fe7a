"""A small Helsinki transit network for the vehicle simulator: real places, generated geometry.

Routes join real anchor points of Helsinki and Espoo (Rautatientori, Kamppi, Pasila, …; WGS 84
to about 100 m). Between two anchors the street is a gentle curve through two generated points,
the same in both directions and the same on every run (no randomness: the offsets come from the
anchors' names), so each route has a fixed geometry, stops every few hundred metres and, where it
passes an underground stretch (the Kamppi terminal, the Hakaniemi underpass), a tunnel.

    >>> route = network()[0]
    >>> route.route_id, route.desi, route.mode, route.headsign(1), route.headsign(2)
    ('1001', '1', 'tram', 'Käpylä', 'Eira')
    >>> lat, long, heading = route.path(1).position(0.0)
    >>> round(lat, 4), round(long, 4)
    (60.157, 24.938)
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import math
from dataclasses import dataclass, field
from functools import cache

ANCHORS: dict[str, tuple[float, float]] = {
    "Rautatientori": (60.1710, 24.9414),
    "Kamppi": (60.1693, 24.9320),
    "Kauppatori": (60.1675, 24.9527),
    "Hakaniemi": (60.1790, 24.9510),
    "Kallio": (60.1841, 24.9510),
    "Vallila": (60.1950, 24.9560),
    "Arabia": (60.2097, 24.9770),
    "Kumpula": (60.2080, 24.9630),
    "Käpylä": (60.2140, 24.9480),
    "Pasila": (60.1986, 24.9336),
    "Töölö": (60.1826, 24.9237),
    "Meilahti": (60.1890, 24.9060),
    "Munkkiniemi": (60.1983, 24.8760),
    "Eira": (60.1570, 24.9380),
    "Hernesaari": (60.1530, 24.9230),
    "Ruoholahti": (60.1630, 24.9140),
    "Lauttasaari": (60.1590, 24.8740),
    "Otaniemi": (60.1867, 24.8300),
    "Tapiola": (60.1750, 24.8050),
    "Leppävaara": (60.2190, 24.8130),
    "Pitäjänmäki": (60.2230, 24.8600),
    "Haaga": (60.2200, 24.8990),
    "Oulunkylä": (60.2290, 24.9660),
    "Malmi": (60.2510, 25.0110),
    "Viikki": (60.2270, 25.0130),
    "Herttoniemi": (60.1950, 25.0300),
    "Itäkeskus": (60.2103, 25.0820),
    "Kontula": (60.2360, 25.0830),
    "Vuosaari": (60.2090, 25.1430),
}
"""Anchor points (lat, long)."""

TUNNELS: dict[frozenset[str], float] = {
    frozenset(("Kamppi", "Rautatientori")): 0.55,  # the underground bus terminal and its ramp
    frozenset(("Hakaniemi", "Kallio")): 0.45,
    frozenset(("Kamppi", "Ruoholahti")): 0.5,
}
"""Stretches between two anchors that run underground: the share of the stretch, from its
middle outwards (no GPS there: messages are held until the vehicle is out)."""

_ROUTES: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("1001", "1", "tram", ("Eira", "Kauppatori", "Hakaniemi", "Kallio", "Käpylä")),
    ("1002", "2", "tram", ("Kauppatori", "Rautatientori", "Töölö", "Pasila")),
    ("1003", "3", "tram", ("Eira", "Kamppi", "Rautatientori", "Hakaniemi", "Kallio")),
    ("1004", "4", "tram", ("Kauppatori", "Rautatientori", "Töölö", "Meilahti", "Munkkiniemi")),
    ("1006", "6", "tram", ("Hernesaari", "Kamppi", "Rautatientori", "Hakaniemi", "Arabia")),
    ("1007", "7", "tram", ("Pasila", "Töölö", "Kamppi", "Rautatientori", "Hakaniemi", "Vallila")),
    ("1008", "8", "tram", ("Ruoholahti", "Töölö", "Pasila", "Vallila", "Arabia")),
    ("1009", "9", "tram", ("Pasila", "Kallio", "Hakaniemi", "Rautatientori", "Kauppatori")),
    ("1010", "10", "tram", ("Kamppi", "Töölö", "Meilahti", "Pasila")),
    ("1013", "13", "tram", ("Pasila", "Vallila", "Kumpula", "Arabia")),
    ("1014", "14", "bus", ("Hernesaari", "Eira", "Kamppi", "Töölö", "Meilahti", "Pasila")),
    ("1015", "15", "bus", ("Otaniemi", "Munkkiniemi", "Haaga", "Oulunkylä", "Viikki")),
    ("1018", "18", "bus", ("Eira", "Kamppi", "Töölö", "Munkkiniemi")),
    ("1020", "20", "bus", ("Lauttasaari", "Ruoholahti", "Kamppi", "Rautatientori")),
    ("1021", "21", "bus", ("Lauttasaari", "Ruoholahti", "Kamppi", "Töölö")),
    ("1023", "23", "bus", ("Rautatientori", "Pasila", "Haaga")),
    ("1024", "24", "bus", ("Kauppatori", "Rautatientori", "Töölö", "Meilahti")),
    ("1039", "39", "bus", ("Kamppi", "Pasila", "Haaga", "Pitäjänmäki")),
    ("1051", "51", "bus", ("Kumpula", "Arabia", "Viikki", "Malmi")),
    ("1052", "52", "bus", ("Otaniemi", "Munkkiniemi", "Pasila", "Kumpula", "Arabia")),
    ("1055", "55", "bus", ("Rautatientori", "Hakaniemi", "Kallio", "Vallila", "Oulunkylä")),
    ("1056", "56", "bus", ("Kamppi", "Kallio", "Vallila", "Arabia", "Viikki")),
    ("1058", "58", "bus", ("Itäkeskus", "Herttoniemi", "Arabia", "Pasila", "Meilahti")),
    ("1065", "65", "bus", ("Rautatientori", "Kallio", "Kumpula", "Oulunkylä")),
    ("1066", "66", "bus", ("Rautatientori", "Kallio", "Käpylä", "Oulunkylä", "Malmi")),
    ("1069", "69", "bus", ("Kamppi", "Rautatientori", "Kallio", "Viikki", "Malmi")),
    ("1070", "70", "bus", ("Kamppi", "Rautatientori", "Hakaniemi", "Viikki", "Malmi")),
    ("1078", "78", "bus", ("Rautatientori", "Hakaniemi", "Herttoniemi", "Itäkeskus")),
    ("1079", "79", "bus", ("Herttoniemi", "Viikki", "Malmi")),
    ("1090", "90", "bus", ("Itäkeskus", "Vuosaari")),
    ("1097", "97", "bus", ("Kontula", "Itäkeskus", "Vuosaari")),
    ("2102", "102", "bus", ("Kamppi", "Lauttasaari", "Otaniemi", "Tapiola")),
    ("2103", "103", "bus", ("Kamppi", "Ruoholahti", "Lauttasaari", "Tapiola")),
    ("2194", "194", "bus", ("Kamppi", "Munkkiniemi", "Otaniemi", "Tapiola", "Leppävaara")),
    ("2550", "550", "bus", ("Itäkeskus", "Herttoniemi", "Viikki", "Oulunkylä", "Haaga",
                            "Pitäjänmäki", "Leppävaara", "Otaniemi")),
    ("4560", "560", "bus", ("Vuosaari", "Kontula", "Malmi", "Oulunkylä", "Haaga",
                            "Leppävaara")),
)  # fmt: skip
"""(route id, desi, mode, anchors of direction 1)."""

STOP_SPACING_M = {"tram": 350.0, "bus": 450.0}
_M_PER_DEG_LAT = 110_574.0
_M_PER_DEG_LONG = 111_320.0


@dataclass(frozen=True)
class Path:
    """A polyline with its cumulative lengths: where a vehicle is after `s` metres."""

    points: tuple[tuple[float, float], ...]
    tunnels: tuple[tuple[float, float], ...]  # (from, to) metres along the path
    stops: tuple[tuple[float, str], ...]  # (metres along the path, stop id), in order
    lengths: tuple[float, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        lengths = [0.0]
        for a, b in itertools.pairwise(self.points):
            lengths.append(lengths[-1] + distance_m(a, b))
        object.__setattr__(self, "lengths", tuple(lengths))

    @property
    def length_m(self) -> float:
        return self.lengths[-1]

    def position(self, s: float) -> tuple[float, float, int]:
        """(lat, long, heading in whole degrees) `s` metres along the path."""
        s = min(max(s, 0.0), self.length_m)
        index = min(bisect.bisect_right(self.lengths, s), len(self.points) - 1)
        a, b = self.points[index - 1], self.points[index]
        span = self.lengths[index] - self.lengths[index - 1]
        share = (s - self.lengths[index - 1]) / span if span else 0.0
        lat = a[0] + (b[0] - a[0]) * share
        long = a[1] + (b[1] - a[1]) * share
        return lat, long, round(bearing(a, b)) % 360

    def in_tunnel(self, s: float) -> bool:
        return any(start <= s < end for start, end in self.tunnels)

    def next_stop(self, s: float) -> tuple[float, str] | None:
        """The first stop at or after `s` metres; None past the last one."""
        index = bisect.bisect_left(self.stops, (s, ""))
        return self.stops[index] if index < len(self.stops) else None


@dataclass(frozen=True)
class Route:
    """A route with two directions: direction 1 runs along `anchors`, direction 2 back."""

    route_id: str
    desi: str
    mode: str
    anchors: tuple[str, ...]

    def headsign(self, direction: int) -> str:
        return self.anchors[-1] if direction == 1 else self.anchors[0]

    def path(self, direction: int) -> Path:
        return _path(self, direction)


@cache
def network() -> tuple[Route, ...]:
    """The simulator's routes, tram routes first."""
    return tuple(Route(*row) for row in _ROUTES)


@cache
def _path(route: Route, direction: int) -> Path:
    anchors = route.anchors if direction == 1 else tuple(reversed(route.anchors))
    points: list[tuple[float, float]] = [ANCHORS[anchors[0]]]
    tunnels: list[tuple[float, float]] = []
    travelled = 0.0
    for a, b in itertools.pairwise(anchors):
        stretch = [ANCHORS[a], *_curve(a, b), ANCHORS[b]]
        length = sum(distance_m(p, q) for p, q in itertools.pairwise(stretch))
        share = TUNNELS.get(frozenset((a, b)))
        if share:
            middle = travelled + length / 2
            tunnels.append((middle - share * length / 2, middle + share * length / 2))
        points += stretch[1:]
        travelled += length
    spacing = STOP_SPACING_M[route.mode]
    count = max(1, int(travelled // spacing))
    stops = tuple(
        (min(travelled, (index + 1) * travelled / count), _stop_id(route, direction, index))
        for index in range(count)
    )
    return Path(tuple(points), tuple(tunnels), stops)


def _curve(a: str, b: str) -> list[tuple[float, float]]:
    """Two points between anchors a and b, off the straight line by a fixed amount per pair
    (the same street both ways)."""
    first, second = sorted((a, b))
    digest = hashlib.sha256(f"{first}|{second}".encode()).digest()
    start, end = ANCHORS[first], ANCHORS[second]
    d_lat, d_long = end[0] - start[0], end[1] - start[1]
    points = []
    for share, byte in ((1 / 3, digest[0]), (2 / 3, digest[1])):
        offset = (byte / 255 - 0.5) * 0.16  # up to 8 % of the stretch to either side
        points.append(
            (
                start[0] + d_lat * share - d_long * offset * 0.5,
                start[1] + d_long * share + d_lat * offset * 2,
            )
        )
    return points if (first, second) == (a, b) else points[::-1]


def _stop_id(route: Route, direction: int, index: int) -> str:
    digest = hashlib.sha256(f"{route.route_id}|{direction}|{index}".encode()).digest()
    return f"1{int.from_bytes(digest[:4], 'big') % 1_000_000:06d}"


def distance_m(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Metres between two nearby points (equirectangular: exact enough within a city)."""
    d_north = (b[0] - a[0]) * _M_PER_DEG_LAT
    d_east = (b[1] - a[1]) * _M_PER_DEG_LONG * math.cos(math.radians((a[0] + b[0]) / 2))
    return math.hypot(d_north, d_east)


def bearing(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Degrees clockwise from north of the way from a to b."""
    d_north = (b[0] - a[0]) * _M_PER_DEG_LAT
    d_east = (b[1] - a[1]) * _M_PER_DEG_LONG * math.cos(math.radians((a[0] + b[0]) / 2))
    return math.degrees(math.atan2(d_east, d_north)) % 360
