"""HSL's high-frequency positioning (HFP v2): its MQTT topic and `VP` payload, read and written.

A vehicle publishes its position about once a second on a topic like

    /hfp/v2/journey/ongoing/vp/bus/0022/01234/1052/1/Kamppi/08:15/1130446/2/60;24/19/73/44

(`/<prefix>/<version>/<journey_type>/<temporal_type>/<event_type>/<transport_mode>/<operator_id>/
<vehicle_number>/<route_id>/<direction_id>/<headsign>/<start_time>/<next_stop>/<geohash_level>/
<geohash>`, operator and vehicle zero-padded) with the payload `{"VP": {"desi", "dir", "oper",
"veh", "tst", "tsi", "spd", "hdg", "lat", "long", "acc", "dl", "odo", "drst", "oday", "jrn",
"line", "start", "loc", "stop", "route", "occu"}}`. The geohash is HSL's own: the integer
degrees `60;24`, then one level per decimal digit pair of latitude and longitude (`19` = first
decimals 1 and 9). Without a GPS fix `lat`/`long` are null and the geohash levels are empty.

**The vehicle is the topic's.** HSL identifies a vehicle by the topic's `operator_id/
vehicle_number`: the payload's `oper` is the operator of the *trip*, which is another operator's
when the trip is subcontracted (topic `…/bus/0018/00423/…`, payload `"oper": 6`), so the record's
`oper`/`veh` (and its key) are taken from the topic and the payload's `oper` is not read. The
payload's `veh` should be the topic's vehicle number unpadded; when it is another, the topic wins
(HSL: the topic is authoritative) and the processor counts the position in its notes. A
`deadrun` (a vehicle between journeys: no route, direction, headsign, start or next stop in the
topic, null or missing in the payload) is rejected, `hfp_bad_topic`: a record is one vehicle on
one journey of one line.

`VehiclePositionProcessor` turns one such message into one `VehiclePosition`; anything it cannot
use is rejected with a kind (`hfp_…`) and a reason, so it goes to the dead-letter topic:

    >>> topic = hfp_topic("bus", 22, 1234, "1052", 1, "Kamppi", "08:15", "1130446", 60.17, 24.94)
    >>> topic
    '/hfp/v2/journey/ongoing/vp/bus/0022/01234/1052/1/Kamppi/08:15/1130446/0/60;24/19/74/00'
    >>> payload = b'{"VP": {"oper": 22, "veh": 1234, "tst": "2026-11-25T06:15:30.123Z",'
    >>> payload += b' "lat": 60.17, "long": 24.94, "dir": "1", "route": "1052", "desi": "52"}}'
    >>> [position] = VehiclePositionProcessor().process(RawEvent(payload, topic, 0))
    >>> position.key, position.event_time_ms, position.mode, position.next_stop
    ('22/1234', 1795587330123, 'bus', '1130446')
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple, TypeGuard

import orjson

from statestream.ingest.base import EventRejected, Processor, RawEvent
from statestream.ingest.vehicle_positions import VehiclePosition

TOPIC_PREFIX = "/hfp/v2/journey/ongoing/vp"
TOPIC_FILTER = f"{TOPIC_PREFIX}/#"
"""The MQTT topic filter of every ongoing journey's VP event."""
END_OF_LINE = "EOL"  # the next stop of a vehicle at its last stop
GEOHASH_DIGITS = 3  # decimal digits of the geohash levels
_INT32 = 2**31
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


class HfpTopic(NamedTuple):
    """What a VP topic says: the vehicle (`operator`, `vehicle`: its identity, whatever the
    payload's trip operator), the mode and the next stop (which the payload does not say)."""

    mode: str
    operator: int
    vehicle: int
    route: str
    direction: str
    start: str
    next_stop: str | None  # None at the end of the line or when empty


def hfp_topic(
    mode: str,
    operator: int,
    vehicle: int,
    route: str,
    direction: int,
    headsign: str,
    start: str,
    next_stop: str | None,
    lat: float | None,
    long: float | None,
    *,
    geohash_level: int = 0,
    geohash_parts: list[str] | None = None,
    root: str = "",
) -> str:
    """The topic of a VP event, as HSL writes it (`root` is put before `/hfp`, for tests;
    `geohash_parts`: the position's `geohash`, when already at hand)."""
    stop = next_stop if next_stop is not None else END_OF_LINE
    head = (
        f"{root}{TOPIC_PREFIX}/{mode}/{operator:04d}/{vehicle:05d}/{route}/{direction}/"
        f"{headsign}/{start}/{stop}"
    )
    if lat is None or long is None:
        return f"{head}//" + "/" * GEOHASH_DIGITS
    return f"{head}/{geohash_level}/{'/'.join(geohash_parts or geohash(lat, long))}"


def geohash(lat: float, long: float) -> list[str]:
    """HSL's geohash levels of a position: `60;24`, then one digit pair per decimal.

    >>> geohash(60.1710, 24.9414)
    ['60;24', '19', '74', '11']
    """
    lat_digits = f"{abs(lat):.6f}".split(".")  # the digits of the payload's lat and long
    long_digits = f"{abs(long):.6f}".split(".")
    levels = [f"{int(math.copysign(int(lat_digits[0]), lat))};{int(long_digits[0])}"]
    for index in range(GEOHASH_DIGITS):
        levels.append(lat_digits[1][index] + long_digits[1][index])
    return levels


def geohash_level(previous: list[str] | None, current: list[str]) -> int:
    """The level of the first geohash part that changed since the previous message (0: the
    integer degrees or no previous position; GEOHASH_DIGITS + 1: none changed)."""
    if previous is None:
        return 0
    for index, (before, now) in enumerate(zip(previous, current, strict=True)):
        if before != now:
            return index
    return GEOHASH_DIGITS + 1


def parse_topic(topic: str) -> HfpTopic:
    """The parts of a journey's VP topic (a root before `/hfp` is allowed); `EventRejected`
    otherwise: `hfp_not_vp` for another event, `hfp_no_vehicle` when the operator or vehicle
    level is no number, `hfp_bad_topic` for any other topic, a `deadrun`'s included."""
    levels = topic.split("/")
    try:
        start = next(i for i in range(len(levels) - 1) if levels[i : i + 2] == ["hfp", "v2"])
    except StopIteration:
        raise EventRejected("hfp_bad_topic", f"not an HFP v2 topic: {topic!r}") from None
    parts = levels[start + 2 :]
    if len(parts) < 11:
        raise EventRejected(
            "hfp_bad_topic", f"HFP topic with {len(parts)} levels after /hfp/v2, not 11 or more"
        )
    journey, _temporal, event, mode, operator, vehicle, route, direction = parts[:8]
    start_time, next_stop = parts[9], parts[10]
    if event != "vp":
        raise EventRejected("hfp_not_vp", f"HFP {event or 'unnamed'} event, not vp")
    if journey not in ("journey", "deadrun") or not mode:
        raise EventRejected("hfp_bad_topic", f"not an HFP journey topic: {topic!r}")
    oper, veh = _topic_number(operator), _topic_number(vehicle)
    if oper is None or veh is None:
        raise EventRejected(
            "hfp_no_vehicle",
            f"HFP topic operator {_shown(operator, 20)} / vehicle {_shown(vehicle, 20)} "
            "are not an operator and a vehicle number",
        )
    if journey == "deadrun":
        raise EventRejected(
            "hfp_bad_topic",
            f"HFP deadrun of vehicle {oper}/{veh}: not on a journey, no route or direction",
        )
    stop = None if next_stop in ("", END_OF_LINE) else next_stop
    return HfpTopic(mode, oper, veh, route, direction, start_time, stop)


def _topic_number(level: str) -> int | None:
    """The number of a topic's zero-padded operator or vehicle level; None if it is none."""
    if not (level.isascii() and level.isdigit()):
        return None
    number = int(level)
    return number if number < _INT32 else None


def epoch_ms(tst: object) -> int:
    """HFP `tst` (ISO 8601 with a time zone, e.g. "2026-11-25T06:15:30.123Z") in epoch ms."""
    if not isinstance(tst, str):
        raise EventRejected("hfp_bad_time", f"tst {_shown(tst)} is not an ISO 8601 time")
    try:
        moment = datetime.fromisoformat(tst)
    except ValueError:
        raise EventRejected("hfp_bad_time", f"tst {_shown(tst)} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise EventRejected("hfp_bad_time", f"tst {_shown(tst)} has no time zone")
    return (moment - _EPOCH) // _MILLISECOND


class VehiclePositionProcessor(Processor):
    """One HFP VP message (topic + payload) → one `VehiclePosition` of the topic's vehicle, or
    a rejection."""

    def __init__(self) -> None:
        self.without_fix = 0  # positions accepted without a GPS fix
        self.other_vehicle = 0  # positions whose payload `veh` is not the topic's vehicle

    def process(self, event: RawEvent) -> list[VehiclePosition]:
        topic = parse_topic(event.source)
        vp = _vp_object(event.payload)
        lat, long = _coordinates(vp)
        if lat is None:
            self.without_fix += 1
        time_ms = epoch_ms(vp.get("tst"))
        direction = _direction(vp.get("dir", topic.direction))
        position = VehiclePosition(
            oper=topic.operator,  # the vehicle's operator, not the trip's (the payload's oper)
            veh=topic.vehicle,
            event_time_ms=time_ms,
            mode=topic.mode,
            route=_text(vp, "route", topic.route),
            direction=direction,
            desi=_text(vp, "desi", ""),
            lat=lat,
            long=long,
            speed=_optional_number(vp, "spd"),
            heading=_optional_int(vp, "hdg"),
            delay=_optional_int(vp, "dl"),
            odometer=_optional_int(vp, "odo"),
            door_status=_optional_int(vp, "drst"),
            occupancy=_optional_int(vp, "occu"),
            next_stop=topic.next_stop,
            journey_start=_text(vp, "start", topic.start),
            operating_day=_text(vp, "oday", _day(time_ms)),
        )
        veh = vp.get("veh")  # the payload's own say, checked only: the topic is authoritative
        if veh is not None and not (type(veh) is int and veh == topic.vehicle):
            self.other_vehicle += 1
        return [position]

    def notes(self) -> list[str]:
        notes: list[str] = []
        if self.without_fix:
            notes.append(f"{self.without_fix:,} vehicle positions without a GPS fix")
        if self.other_vehicle:
            notes.append(
                f"{self.other_vehicle:,} vehicle positions whose payload veh is not the topic's "
                "vehicle number (topic taken)"
            )
        return notes


def _vp_object(payload: bytes) -> dict[str, Any]:
    try:
        obj = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise EventRejected("hfp_bad_json", f"bad JSON: {exc}") from None
    if not isinstance(obj, dict) or len(obj) != 1:
        raise EventRejected("hfp_bad_json", "an HFP payload is one JSON object with one member")
    [(name, vp)] = obj.items()
    if name != "VP":
        raise EventRejected("hfp_not_vp", f"HFP {_shown(name, 20)} event, not VP")
    if not isinstance(vp, dict):
        raise EventRejected("hfp_bad_json", "the VP member is not a JSON object")
    return vp


def _coordinates(vp: dict[str, Any]) -> tuple[float | None, float | None]:
    lat, long = vp.get("lat"), vp.get("long")
    if lat is None and long is None:
        return None, None
    if not (_is_number(lat) and _is_number(long)):
        raise EventRejected(
            "hfp_bad_position", f"lat {_shown(lat)} / long {_shown(long)} are not both numbers"
        )
    if not (-90.0 <= lat <= 90.0 and -180.0 <= long <= 180.0):
        raise EventRejected("hfp_bad_position", f"lat {lat} / long {long} out of range")
    return float(lat), float(long)


def _direction(value: object) -> int:
    if value in ("1", "2", 1, 2) and not isinstance(value, bool):
        return int(value)
    raise EventRejected("hfp_bad_value", f"dir {_shown(value)} is not 1 or 2")


def _text(vp: dict[str, Any], name: str, default: str) -> str:
    value = vp.get(name)
    if value is None:
        return default
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise EventRejected("hfp_bad_value", f"{name} {_shown(value)} is not a text")


def _optional_number(vp: dict[str, Any], name: str) -> float | None:
    value = vp.get(name)
    if value is None:
        return None
    if not _is_number(value):
        raise EventRejected("hfp_bad_value", f"{name} {_shown(value)} is not a number")
    return float(value)


def _optional_int(vp: dict[str, Any], name: str) -> int | None:
    number = _optional_number(vp, name)
    if number is None:
        return None
    if not -_INT32 < number < _INT32:
        raise EventRejected("hfp_bad_value", f"{name} {number} is out of range")
    return round(number)


def _is_number(value: object) -> TypeGuard[int | float]:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and abs(value) < 1e300
    )


def _day(time_ms: int) -> str:
    return (_EPOCH + time_ms * _MILLISECOND).date().isoformat()


def _shown(value: object, limit: int = 40) -> str:
    """A value as quoted in a reason, cut so that a reason stays one short line."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
