"""Bunching: two vehicles of one line (route, direction) close together for a while.

A pure core (numpy only): `LineBunching` holds the state of one line and takes its positions one
micro-batch at a time; `process` returns the alerts they complete. Definitions (`BunchingSpec`,
from the settings section `geo`):

- **Comparison.** Positions are settled in event-time order (ties by vehicle). When a position
  of vehicle A at time t is settled, it is compared with the latest settled position of every
  other vehicle B of the line whose time is within `max_skew_ms` before t (an as-of join): the
  haversine distance of the two, vectorized over the line's vehicles.
- **Episode** of a pair. A comparison within `distance_m` is *bunched*: it starts an episode
  (`episode_start` = t) or continues the pair's open one. An episode ends at a comparison farther
  apart than `distance_m`, or when no bunched comparison follows within `duration_ms` of the
  last one ("no comparable positions for more than bunching_s": the next bunched comparison
  starts a new episode).
- **Alert**: the first bunched comparison of an episode at least `duration_ms` after its start
  (`detected_at`) raises one alert, with the distance and the midpoint of that comparison; the
  episode raises no other. A pair that separates and meets again raises a new one.

**Order and determinism.** A vehicle's positions arrive in order of its Kafka offsets (one key,
one partition). A position is accepted only when it is newer than every position accepted
before of that vehicle; an older or equal one is ignored (`stale`), as are positions without a
fix. The accepted positions of a vehicle therefore grow in event time, and once a vehicle has
sent a position at time T, nothing it sends later can change what happened up to T. The line
settles positions up to its *frontier*, at the end of each batch: the smallest newest time of
its live vehicles (a vehicle is live while its newest position is at most `duration_ms` behind
the line's newest), at most the line's newest minus `max_skew_ms`, never going back. Everything
up to the frontier is final, so the alerts depend only on each vehicle's own arrival order, not
on how the input is cut into micro-batches nor on how the vehicles' partitions interleave — as
long as no vehicle is further behind its line's newest position, at a batch's end, than
`duration_ms` (a vehicle the line knows) or `max_skew_ms` (a vehicle new to the line). A
vehicle that falls further behind (a tunnel, the end of a journey) stops holding its line back:
its positions at or before the frontier when they arrive are ignored as `stale`.

    >>> spec = BunchingSpec(distance_m=150.0, duration_ms=60_000.0, max_skew_ms=5_000.0)
    >>> line = LineBunching(spec)
    >>> t = np.arange(0.0, 70_000.0, 1_000.0)
    >>> n = len(t)
    >>> step = line.process(
    ...     np.array(["22/1"] * n + ["22/2"] * n, dtype=object), np.concatenate((t, t + 500)),
    ...     np.full(2 * n, 60.17), np.concatenate((np.full(n, 24.94), np.full(n, 24.941))),
    ...     np.full(2 * n, "bus", dtype=object))
    >>> [(a.vehicles, a.episode_start, a.detected_at, round(a.distance_m)) for a in step.alerts]
    [(('22/1', '22/2'), 500.0, 60500.0, 55)]
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

EARTH_RADIUS_M = 6_371_008.8  # mean radius (IUGG)
FORMAT_VERSION = 1


@dataclass(frozen=True)
class BunchingSpec:
    """When two vehicles of a line count as bunched, and for how long before an alert."""

    distance_m: float = 150.0
    duration_ms: float = 60_000.0
    max_skew_ms: float = 5_000.0


class BunchingAlert(NamedTuple):
    """One pair's episode that stayed bunched for the spec's duration."""

    vehicles: tuple[str, str]  # sorted
    mode: str
    episode_start: float  # epoch ms
    detected_at: float  # epoch ms: the comparison that completed the duration
    distance_m: float  # at detection
    lat: float  # midpoint at detection
    long: float


@dataclass
class BunchingStep:
    """What one `process` call did: its alerts and what it counted."""

    alerts: list[BunchingAlert] = field(default_factory=list)
    accepted: int = 0
    no_fix: int = 0
    stale: int = 0
    max_event_time: float = -math.inf  # of the accepted positions


@dataclass
class _Episode:
    start: float
    last_bunched: float
    alerted: bool = False


def haversine_m(lat1: float, long1: float, lat2: np.ndarray, long2: np.ndarray) -> np.ndarray:
    """Great-circle distances in m from one point to many (degrees), on the mean Earth sphere.

    >>> round(float(haversine_m(60.0, 24.0, np.array([60.001]), np.array([24.0]))[0]), 1)
    111.2
    """
    phi1, phi2 = math.radians(lat1), np.radians(lat2)
    dphi = phi2 - phi1
    dlambda = np.radians(long2) - math.radians(long1)
    a = np.sin(dphi / 2) ** 2 + math.cos(phi1) * np.cos(phi2) * np.sin(dlambda / 2) ** 2
    return 2 * EARTH_RADIUS_M * np.arcsin(np.sqrt(np.clip(a, 0.0, 1.0)))


class LineBunching:
    """The bunching state of one line (route, direction): its vehicles and pairs' episodes."""

    def __init__(self, spec: BunchingSpec) -> None:
        self.spec = spec
        self.frontier = -math.inf  # positions up to here are settled
        self.mode = ""
        self.newest: dict[str, float] = {}  # per vehicle: its newest accepted time
        self.pending: dict[str, list[tuple[float, float, float]]] = {}  # accepted, unsettled
        self.vehicles: list[str] = []  # vehicles with a settled position, in `_t` etc. order
        self._t = np.empty(0)  # their latest settled position
        self._lat = np.empty(0)
        self._long = np.empty(0)
        self.episodes: dict[tuple[str, str], _Episode] = {}

    def process(
        self,
        vehicles: np.ndarray,
        times: np.ndarray,
        lats: np.ndarray,
        longs: np.ndarray,
        modes: np.ndarray,
    ) -> BunchingStep:
        """Take one batch of the line's positions in arrival order; NaN lat/long: no fix."""
        step = BunchingStep()
        fix = np.isfinite(lats) & np.isfinite(longs)
        step.no_fix = int((~fix).sum())
        for vehicle, t, lat, long, mode in zip(
            vehicles[fix], times[fix], lats[fix], longs[fix], modes[fix], strict=True
        ):
            self._accept(step, str(vehicle), float(t), float(lat), float(long), str(mode))
        self._settle(step, self._next_frontier())
        self._forget_the_past()
        return step

    @property
    def open_episodes(self) -> int:
        return len(self.episodes)

    def _accept(
        self, step: BunchingStep, vehicle: str, t: float, lat: float, long: float, mode: str
    ) -> None:
        if t <= self.frontier or t <= self.newest.get(vehicle, -math.inf):
            step.stale += 1
            return
        self.newest[vehicle] = t
        self.pending.setdefault(vehicle, []).append((t, lat, long))
        self.mode = mode
        step.accepted += 1
        step.max_event_time = max(step.max_event_time, t)

    def _next_frontier(self) -> float:
        """The smallest newest time of the live vehicles, at least `max_skew_ms` behind the
        line's newest, and never before the current frontier."""
        if not self.newest:
            return self.frontier
        newest = np.fromiter(self.newest.values(), dtype=np.float64)
        line_newest = float(newest.max())
        live = newest[newest >= line_newest - self.spec.duration_ms]
        return max(self.frontier, min(float(live.min()), line_newest - self.spec.max_skew_ms))

    def _settle(self, step: BunchingStep, frontier: float) -> None:
        """Compare the pending positions up to `frontier`, in event-time order (ties: vehicle)."""
        due: list[tuple[float, str, float, float]] = []
        for vehicle, positions in self.pending.items():
            cut = next((i for i, p in enumerate(positions) if p[0] > frontier), len(positions))
            due += [(t, vehicle, lat, long) for t, lat, long in positions[:cut]]
            self.pending[vehicle] = positions[cut:]
        self.pending = {v: p for v, p in self.pending.items() if p}
        for t, vehicle, lat, long in sorted(due):
            self._compare(step, vehicle, t, lat, long)
            self._set_latest(vehicle, t, lat, long)
        self.frontier = frontier

    def _compare(self, step: BunchingStep, vehicle: str, t: float, lat: float, long: float) -> None:
        """Compare one settled position with the other vehicles' latest ones within the skew."""
        spec = self.spec
        near = np.flatnonzero(t - self._t <= spec.max_skew_ms)
        if not len(near):
            return
        distances = haversine_m(lat, long, self._lat[near], self._long[near])
        for i, distance in zip(near.tolist(), distances.tolist(), strict=True):
            other = self.vehicles[i]
            if other == vehicle:
                continue
            pair = (vehicle, other) if vehicle < other else (other, vehicle)
            if distance > spec.distance_m:
                self.episodes.pop(pair, None)
                continue
            episode = self.episodes.get(pair)
            if episode is None or t - episode.last_bunched > spec.duration_ms:
                episode = self.episodes[pair] = _Episode(start=t, last_bunched=t)
            episode.last_bunched = t
            if not episode.alerted and t - episode.start >= spec.duration_ms:
                episode.alerted = True
                midpoint = (float(lat + self._lat[i]) / 2, float(long + self._long[i]) / 2)
                step.alerts.append(
                    BunchingAlert(pair, self.mode, episode.start, t, distance, *midpoint)
                )

    def _set_latest(self, vehicle: str, t: float, lat: float, long: float) -> None:
        if vehicle not in self.vehicles:
            self.vehicles.append(vehicle)
            self._t, self._lat, self._long = (np.append(a, np.nan) for a in self.fields)
        i = self.vehicles.index(vehicle)
        self._t[i], self._lat[i], self._long[i] = t, lat, long

    @property
    def fields(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._t, self._lat, self._long

    def _forget_the_past(self) -> None:
        """Drop ended episodes, and vehicles no later position can be compared with."""
        horizon = self.frontier - self.spec.duration_ms
        self.episodes = {p: e for p, e in self.episodes.items() if e.last_bunched >= horizon}
        keep = (self._t >= self.frontier - self.spec.max_skew_ms) | np.isin(
            np.array(self.vehicles, dtype=object), list(self.pending)
        )
        gone = [v for v, k in zip(self.vehicles, keep.tolist(), strict=True) if not k]
        for vehicle in gone:
            del self.newest[vehicle]
        self.vehicles = [v for v, k in zip(self.vehicles, keep.tolist(), strict=True) if k]
        self._t, self._lat, self._long = (a[keep] for a in self.fields)

    def to_bytes(self) -> bytes:
        """The state as bytes (JSON, UTF-8), for Spark's state store."""
        state = {
            "version": FORMAT_VERSION,
            "frontier": None if self.frontier == -math.inf else self.frontier,
            "mode": self.mode,
            "newest": self.newest,
            "pending": self.pending,
            "latest": [
                [v, t, lat, long]
                for v, t, lat, long in zip(
                    self.vehicles, *(a.tolist() for a in self.fields), strict=True
                )
            ],
            "episodes": [
                [*pair, e.start, e.last_bunched, e.alerted] for pair, e in self.episodes.items()
            ],
        }
        return json.dumps(state, allow_nan=False).encode()

    @classmethod
    def from_bytes(cls, spec: BunchingSpec, data: bytes) -> LineBunching:
        """The state `to_bytes` wrote."""
        state = json.loads(data)
        if state.get("version") != FORMAT_VERSION:
            raise ValueError(f"stored bunching state has format {state.get('version')}")
        line = cls(spec)
        line.frontier = -math.inf if state["frontier"] is None else state["frontier"]
        line.mode = state["mode"]
        line.newest = state["newest"]
        line.pending = {v: [tuple(p) for p in ps] for v, ps in state["pending"].items()}
        latest = state["latest"]
        line.vehicles = [row[0] for row in latest]
        line._t, line._lat, line._long = (
            np.array([row[i] for row in latest], dtype=np.float64) for i in (1, 2, 3)
        )
        line.episodes = {
            (a, b): _Episode(start, last, alerted)
            for a, b, start, last, alerted in state["episodes"]
        }
        return line
