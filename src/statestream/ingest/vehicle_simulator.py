"""Simulated HSL vehicles: buses and trams on the Helsinki network, publishing HFP v2 VP events.

Each vehicle drives its route (`helsinki_network`) back and forth, stops at stops (doors open)
and at lights, and publishes about once a second what an HSL vehicle publishes: an HFP `VP`
event on its topic (`hfp`). The feed has what real feeds have (`FeedFaults`): stretches without
a GPS fix (lat/long null), messages held in tunnels and published in a burst when the vehicle
comes out, a few duplicates, a little disorder and network latency. Everything follows from the
seed: the same arguments give the same messages in the same order.

    >>> events = list(vehicle_events(vehicles=4, seed=1, start_ms=1795587300000, duration_s=5))
    >>> len(events) >= 4 * 5, events[0][0].startswith("/hfp/v2/journey/ongoing/vp/tram/")
    (True, True)
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import lru_cache

import orjson

from statestream.codecs.bad_input import now_ms
from statestream.ingest.helsinki_network import Path, Route, network
from statestream.ingest.hfp import geohash, geohash_level, hfp_topic

CRUISE_M_PER_S = {"tram": 7.0, "bus": 9.5}
BUS_OPERATORS = (22, 12, 18, 17, 6, 47)  # Nobina, Helsingin Bussiliikenne, Pohjolan Liikenne, …
TRAM_OPERATOR = 40  # Kaupunkiliikenne
BUNCHED_EVERY = 8  # every 8th vehicle starts right behind the one before it on its route


@dataclass(frozen=True)
class FeedFaults:
    """What makes the feed real: probabilities per message, durations in s, delays in ms."""

    no_fix_start: float = 0.003  # a stretch without a GPS fix begins …
    no_fix_s: tuple[int, int] = (3, 12)  # … and lasts this long
    duplicate: float = 0.004  # the message is published twice
    disorder: float = 0.01  # the message is held back by …
    disorder_ms: tuple[int, int] = (1000, 3000)
    latency_ms: tuple[int, int] = (20, 250)  # from tst to publishing
    tunnels: bool = True  # messages in a tunnel wait for its end

    @classmethod
    def none(cls) -> FeedFaults:
        """A perfect feed: every message once, in order, with a fix, right away."""
        return cls(0.0, (0, 0), 0.0, 0.0, (0, 0), (0, 0), False)


@dataclass
class _Vehicle:
    oper: int
    veh: int
    route: Route
    direction: int
    s: float  # metres along the path
    rng: random.Random
    phase_ms: int  # when in each second it publishes
    speed: float = 0.0
    dwell_s: int = 0
    at_stop: str | None = None
    doors: int = 0
    delay_s: int = 0
    odometer: float = 0.0
    journey_start_ms: int = 0
    journey: int = 1
    no_fix_s: int = 0
    previous_geohash: list[str] | None = None
    held: list[tuple[int, str, bytes]] = field(default_factory=list)
    path: Path = field(init=False)  # of the route in the current direction

    def __post_init__(self) -> None:
        self.path = self.route.path(self.direction)


def vehicle_events(
    vehicles: int = 50,
    seed: int = 0,
    start_ms: int | None = None,
    duration_s: float = 60.0,
    *,
    root: str = "",
    faults: FeedFaults | None = None,
) -> Iterator[tuple[str, bytes]]:
    """(topic, payload) of every VP event of `vehicles` vehicles over `duration_s` seconds from
    `start_ms` (default: now), in publishing order. `root` goes before `/hfp` in each topic."""
    timed = timed_vehicle_events(vehicles, seed, start_ms, duration_s, root=root, faults=faults)
    return ((topic, payload) for _, topic, payload in timed)


def timed_vehicle_events(
    vehicles: int = 50,
    seed: int = 0,
    start_ms: int | None = None,
    duration_s: float = 60.0,
    *,
    root: str = "",
    faults: FeedFaults | None = None,
) -> Iterator[tuple[int, str, bytes]]:
    """`vehicle_events` with the time each message is published (epoch ms, never decreasing):
    (publish ms, topic, payload)."""
    faults = faults if faults is not None else FeedFaults()
    start = now_ms() if start_ms is None else int(start_ms)
    master = random.Random(seed)
    fleet = _fleet(vehicles, master, start)
    queue: list[tuple[int, int, str, bytes]] = []  # (publish ms, sequence, topic, payload)
    sequence = 0
    for second in range(int(duration_s)):
        now = start + second * 1000
        for vehicle in fleet:
            _drive(vehicle)
            tst = now + vehicle.phase_ms + vehicle.rng.randrange(40)
            message = _message(vehicle, tst, root, faults)
            for publish_ms, topic, payload in _published(vehicle, tst, *message, faults):
                sequence += 1
                heapq.heappush(queue, (publish_ms, sequence, topic, payload))
        while queue and queue[0][0] < now + 1000:
            publish_ms, _, topic, payload = heapq.heappop(queue)
            yield publish_ms, topic, payload
    end = start + int(duration_s) * 1000
    for vehicle in fleet:  # still in a tunnel at the end: out they come
        for _, topic, payload in vehicle.held:
            sequence += 1
            heapq.heappush(queue, (end, sequence, topic, payload))
        vehicle.held.clear()
    while queue:
        publish_ms, _, topic, payload = heapq.heappop(queue)
        yield max(publish_ms, end), topic, payload


def _fleet(count: int, master: random.Random, start_ms: int) -> list[_Vehicle]:
    """`count` vehicles spread over the routes and both directions; every `BUNCHED_EVERY`th
    starts 40–120 m behind the vehicle before it, on its line (a bunched pair)."""
    routes = network()
    fleet: list[_Vehicle] = []
    lines = 0  # vehicles placed on a line of their own so far
    for index in range(count):
        rng = random.Random(master.getrandbits(64))
        if index % BUNCHED_EVERY == BUNCHED_EVERY - 1 and fleet:
            ahead = fleet[-1]
            route, direction = ahead.route, ahead.direction
            s = max(0.0, ahead.s - rng.uniform(40.0, 120.0))
        else:
            route = routes[lines % len(routes)]
            direction = 1 + (lines // len(routes)) % 2
            s = rng.uniform(0.0, route.path(direction).length_m * 0.9)
            lines += 1
        tram = route.mode == "tram"
        oper = TRAM_OPERATOR if tram else BUS_OPERATORS[index % len(BUS_OPERATORS)]
        vehicle = _Vehicle(oper, (400 if tram else 1000) + index, route, direction, s, rng,
                           phase_ms=rng.randrange(960))  # fmt: skip
        vehicle.delay_s = rng.randrange(-180, 60)
        vehicle.odometer = s
        vehicle.journey_start_ms = start_ms - int(s / CRUISE_M_PER_S[route.mode] * 1000)
        vehicle.journey = 1 + rng.randrange(900)
        fleet.append(vehicle)
    return fleet


def _drive(vehicle: _Vehicle) -> None:
    """One second of driving: dwell, or accelerate towards cruise speed and stop at stops."""
    rng, path = vehicle.rng, vehicle.path
    if vehicle.dwell_s > 0:
        vehicle.dwell_s -= 1
        vehicle.speed = 0.0
        vehicle.doors = 1 if vehicle.at_stop and vehicle.dwell_s > 1 else 0
        if vehicle.dwell_s == 0 and vehicle.s >= path.length_m:
            _turn(vehicle)
        return
    vehicle.at_stop, vehicle.doors = None, 0
    cruise = CRUISE_M_PER_S[vehicle.route.mode] * rng.uniform(0.8, 1.15)
    vehicle.speed = max(0.0, vehicle.speed + max(-2.0, min(1.3, cruise - vehicle.speed)))
    stop = path.next_stop(vehicle.s + 0.5)
    if stop is not None and stop[0] - vehicle.s <= vehicle.speed:
        _advance(vehicle, stop[0] - vehicle.s)
        vehicle.at_stop, vehicle.dwell_s = stop[1], rng.randrange(8, 26)
        vehicle.delay_s -= rng.randrange(0, 3)
    elif vehicle.s + vehicle.speed >= path.length_m:
        _advance(vehicle, path.length_m - vehicle.s)
        vehicle.dwell_s = rng.randrange(30, 90)  # layover at the terminus
    else:
        _advance(vehicle, vehicle.speed)
        if rng.random() < 0.01:  # a red light
            vehicle.dwell_s = rng.randrange(5, 20)
    vehicle.delay_s = max(-900, min(300, vehicle.delay_s + rng.choice((-1, 0, 0, 1))))


def _advance(vehicle: _Vehicle, metres: float) -> None:
    vehicle.s += metres
    vehicle.odometer += metres


def _turn(vehicle: _Vehicle) -> None:
    """At the terminus: the next journey, the other way."""
    vehicle.direction = 3 - vehicle.direction
    vehicle.path = vehicle.route.path(vehicle.direction)
    vehicle.s = vehicle.odometer = 0.0
    vehicle.journey += 1
    vehicle.journey_start_ms = -1  # set by the next message
    vehicle.delay_s = vehicle.rng.randrange(-60, 30)
    vehicle.previous_geohash = None


def _message(vehicle: _Vehicle, tst: int, root: str, faults: FeedFaults) -> tuple[str, bytes]:
    """The VP topic and payload of the vehicle's position now."""
    rng = vehicle.rng
    if vehicle.journey_start_ms < 0:
        vehicle.journey_start_ms = tst
    if vehicle.no_fix_s == 0 and faults.no_fix_start and rng.random() < faults.no_fix_start:
        vehicle.no_fix_s = rng.randint(*faults.no_fix_s)
    fix = vehicle.no_fix_s == 0
    vehicle.no_fix_s = max(0, vehicle.no_fix_s - 1)
    path, route = vehicle.path, vehicle.route
    lat, long, heading = path.position(vehicle.s)
    lat, long = round(lat, 6), round(long, 6)
    tunnel = path.in_tunnel(vehicle.s)
    local_start = _local(vehicle.journey_start_ms)
    start = local_start.strftime("%H:%M")
    stop = path.next_stop(vehicle.s + (0.0 if vehicle.at_stop else 0.5))
    level, current = 0, None
    if fix:
        current = geohash(lat, long)
        level = geohash_level(vehicle.previous_geohash, current)
        vehicle.previous_geohash = current
    topic = hfp_topic(
        route.mode, vehicle.oper, vehicle.veh, route.route_id, vehicle.direction,
        route.headsign(vehicle.direction), start, stop[1] if stop else None,
        lat if fix else None, long if fix else None,
        geohash_level=level, geohash_parts=current, root=root,
    )  # fmt: skip
    vp = {
        "desi": route.desi,
        "dir": str(vehicle.direction),
        "oper": vehicle.oper,
        "veh": vehicle.veh,
        "tst": _iso(tst),
        "tsi": tst // 1000,
        "spd": round(vehicle.speed, 2),
        "hdg": heading,
        "lat": lat if fix else None,
        "long": long if fix else None,
        "acc": round(rng.uniform(-0.3, 0.3) if vehicle.speed else 0.0, 2),
        "dl": vehicle.delay_s,
        "odo": round(vehicle.odometer),
        "drst": vehicle.doors,
        "oday": local_start.date().isoformat(),
        "jrn": vehicle.journey,
        "line": 1000 + int(route.route_id) % 1000,
        "start": start,
        "loc": ("ODO" if tunnel else "GPS") if fix else "N/A",
        "stop": int(vehicle.at_stop) if vehicle.at_stop else None,
        "route": route.route_id,
        "occu": 0,
    }
    return topic, orjson.dumps({"VP": vp})


def _published(
    vehicle: _Vehicle, tst: int, topic: str, payload: bytes, faults: FeedFaults
) -> list[tuple[int, str, bytes]]:
    """(publish ms, topic, payload) of what goes out now: the message (twice for a duplicate),
    after the messages held in a tunnel just left; nothing while in a tunnel."""
    rng = vehicle.rng
    publish = tst + (rng.randint(*faults.latency_ms) if faults.latency_ms[1] else 0)
    if faults.disorder and rng.random() < faults.disorder:
        publish += rng.randint(*faults.disorder_ms)
    out = [(publish, topic, payload)]
    if faults.duplicate and rng.random() < faults.duplicate:
        out.append((publish + rng.randint(50, 800), topic, payload))
    if faults.tunnels and vehicle.path.in_tunnel(vehicle.s):
        vehicle.held += out
        return []
    if vehicle.held:  # out of the tunnel: the held messages go first, in one burst
        burst = [(publish, t, p) for _, t, p in vehicle.held]
        vehicle.held.clear()
        out = burst + out
    return out


def _local(epoch_ms: int) -> datetime:
    """Helsinki local time, as HSL gives a journey's start and operating day."""
    return datetime.fromtimestamp(epoch_ms / 1000, _helsinki())


@lru_cache(maxsize=1)
def _helsinki() -> tzinfo:
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo("Europe/Helsinki")
    except (ImportError, KeyError, OSError):
        return timezone(timedelta(hours=2), "EET")


def _iso(epoch_ms: int) -> str:
    """ "2026-11-25T06:15:30.123Z": ISO 8601 in UTC with milliseconds, as HFP's `tst`."""
    return f"{_iso_second(epoch_ms // 1000)}.{epoch_ms % 1000:03d}Z"


@lru_cache(maxsize=4096)
def _iso_second(epoch_s: int) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%dT%H:%M:%S")
