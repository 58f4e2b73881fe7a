"""What the /vehicles map shows, shaped from the geo and bunching topics (pure: no I/O).

A cell result of `analytics.vehicle.cells` becomes a `CellResult` with its hexagon's corners (the
server computes them with the `h3` package it already has for the geo query, so the page needs no
second H3 library); a bunching alert of `analytics.vehicle.alerts` becomes a `BunchingAlert`. Both
go through the display policy of `policy.py`, whose "now" here is an `EventClock`: event time, so
that a replay faster or slower than real time expires cells by the stream's time, not the wall's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import h3

from statestream.dashboard.messages import UnreadableRecord, _json_object, _number

CELL_KIND, BUNCHING_KIND = "cell", "bunching"
BOUNDARY_DECIMALS = 6  # ~0.1 m: more only makes the messages longer


@dataclass(frozen=True)
class CellResult:
    """One H3 cell's figures for one event-time window, as displayed; one shown per cell."""

    cell: str
    resolution: int
    window_start: int
    window_end: int
    vehicles: int
    positions: int
    mean_speed: float | None
    mean_delay: float | None
    final: bool

    kind = CELL_KIND

    @property
    def key(self) -> str:
        """What a newer result replaces: the one shown for the same cell."""
        return self.cell

    @property
    def event_time(self) -> tuple[int, int]:
        return (self.window_start, self.window_end)

    def as_message(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "kind": self.kind,
            "cell": self.cell,
            "window_start": self.window_start,
            "window_end": self.window_end,
            "vehicles": self.vehicles,
            "positions": self.positions,
            "mean_speed": self.mean_speed,
            "mean_delay": self.mean_delay,
            "final": self.final,
            "boundary": cell_boundary(self.cell),
        }


@dataclass(frozen=True)
class BunchingAlert:
    """Two vehicles of one route and direction close together for too long (one per episode)."""

    route: str
    direction: int
    mode: str
    vehicles: tuple[str, ...]
    episode_start: int
    detected_at: int
    distance_m: float | None
    lat: float | None
    long: float | None

    kind = BUNCHING_KIND

    @property
    def key(self) -> str:
        """One alert shown per pair of vehicles of a route and direction."""
        return f"{self.route}/{self.direction}/{'+'.join(self.vehicles)}"

    @property
    def event_time(self) -> tuple[int, int]:
        return (self.episode_start, self.detected_at)

    def as_message(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "kind": self.kind,
            "route": self.route,
            "direction": self.direction,
            "mode": self.mode,
            "vehicles": list(self.vehicles),
            "episode_start": self.episode_start,
            "detected_at": self.detected_at,
            "distance_m": self.distance_m,
            "lat": self.lat,
            "long": self.long,
        }


@lru_cache(maxsize=65_536)
def cell_boundary(cell: str) -> list[list[float]]:
    """The corners of an H3 cell as [lat, long] pairs (what Leaflet's polygon takes).

    >>> len(cell_boundary("881126d331fffff"))
    6
    """
    return [
        [round(lat, BOUNDARY_DECIMALS), round(lng, BOUNDARY_DECIMALS)]
        for lat, lng in h3.cell_to_boundary(cell)
    ]


def cell_result(raw: bytes | str | None) -> CellResult:
    """An analytics.vehicle.cells record as a cell result; `UnreadableRecord` if it is not one."""
    record = _json_object(raw)
    cell = record.get("cell")
    if not isinstance(cell, str) or not h3.is_valid_cell(cell):
        raise UnreadableRecord(f"not an H3 cell: {cell!r}")
    start, end = _number(record.get("window_start")), _number(record.get("window_end"))
    vehicles, positions = _number(record.get("vehicles")), _number(record.get("positions"))
    if start is None or end is None or end <= start:
        raise UnreadableRecord("window_start or window_end missing or not a window")
    if vehicles is None or positions is None:
        raise UnreadableRecord("vehicles or positions missing")
    resolution = _number(record.get("resolution"))
    return CellResult(
        cell=cell,
        resolution=int(resolution) if resolution is not None else h3.get_resolution(cell),
        window_start=int(start),
        window_end=int(end),
        vehicles=int(vehicles),
        positions=int(positions),
        mean_speed=_number(record.get("mean_speed")),
        mean_delay=_number(record.get("mean_delay")),
        final=record.get("final") is True,
    )


def bunching_alert(raw: bytes | str | None) -> BunchingAlert:
    """An analytics.vehicle.alerts record as a bunching alert; `UnreadableRecord` if not one."""
    record = _json_object(raw)
    if record.get("alert") != "bunching":
        raise UnreadableRecord(f"unknown alert {record.get('alert')!r}")
    route, direction = record.get("route"), _number(record.get("direction"))
    vehicles = record.get("vehicles")
    if not isinstance(route, str) or direction is None:
        raise UnreadableRecord("route or direction missing")
    if not isinstance(vehicles, list) or not all(isinstance(v, str) for v in vehicles):
        raise UnreadableRecord("vehicles is not a list of vehicle ids")
    start, detected = _number(record.get("episode_start")), _number(record.get("detected_at"))
    if start is None or detected is None:
        raise UnreadableRecord("episode_start or detected_at missing")
    lat, long = _number(record.get("lat")), _number(record.get("long"))
    if not _on_earth(lat, long):
        lat = long = None  # drawn without a place rather than somewhere wrong
    mode = record.get("mode")
    return BunchingAlert(
        route=route,
        direction=int(direction),
        mode=mode if isinstance(mode, str) else "",
        vehicles=tuple(sorted(vehicles)),
        episode_start=int(start),
        detected_at=int(detected),
        distance_m=_number(record.get("distance_m")),
        lat=lat,
        long=long,
    )


def stream_time_ms(result: CellResult | BunchingAlert, disorder_s: float) -> int:
    """How far the stream's event time has certainly come, given that `result` was written.

    An early cell result needs a position in its window (≥ window_start); a final one a watermark
    past its end (≥ window_end + disorder); an alert is written at its detection time.
    """
    if isinstance(result, BunchingAlert):
        return result.detected_at
    if result.final:
        return result.window_end + round(disorder_s * 1000)
    return result.window_start


class EventClock:
    """Seconds of event time, for the display policy of the map.

    It runs with the wall clock between records and jumps ahead to the stream's time when a record
    shows the stream is further (a fast replay): a cell expires `window + 5 s` of *event time*
    after it was shown, yet a stopped pipeline still leaves no stale cells, because the clock goes
    on running. It starts at the first record's time (a replay of an old day runs in that day's
    time) and never goes back (an old replayed record cannot revive expired cells).

    >>> wall = iter([100.0, 101.0]).__next__
    >>> clock = EventClock(wall)
    >>> clock.observe(5_000_000), clock.now()
    (5000.0, 5001.0)
    """

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._base_event_s: float | None = None
        self._base_wall_s = 0.0

    def now(self) -> float:
        """The event time now, in seconds (the wall's epoch time until a first record came)."""
        if self._base_event_s is None:
            return time.time()
        return self._base_event_s + (self._monotonic() - self._base_wall_s)

    def observe(self, event_ms: float) -> float:
        """Take note that the stream has reached `event_ms`; the clock's time afterwards."""
        wall = self._monotonic()
        event_s = event_ms / 1000.0
        if self._base_event_s is None or event_s > self._base_event_s + (wall - self._base_wall_s):
            self._base_event_s, self._base_wall_s = event_s, wall
        return self._base_event_s + (wall - self._base_wall_s)


def _on_earth(lat: float | None, long: float | None) -> bool:
    return (lat is None or -90 <= lat <= 90) and (long is None or -180 <= long <= 180)
